"""``install(guard=True, dangling=...)``: a stored call whose output the store lost (a
crash between the two writes, a trimmed history). Under ``"drop"`` the model input goes
without the call (the SDK's own pruning drops it from a session's history, the guard from
an input list); under ``"synthesize"`` the guard keeps the call with a marked output
(``LOST_OUTPUT_TEXT``) right after it, so that the model still sees that it paid.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import Agent, Runner, SQLiteSession, function_tool

import histcore.openai_agents as accelerator
from histcore.items import LOST_OUTPUT_TEXT, input_problems
from histcore.openai_agents.testing import SDKScriptedModel


@function_tool
def lookup(city: str) -> str:  # the tool the scripted model calls
    return f"sunny in {city}"


PAID = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "c1",
    "name": "pay",
    "arguments": '{"amount": 5}',
    "status": "completed",
}
STORED: list[dict[str, Any]] = [
    {"role": "user", "content": "pay the bill"},
    PAID,  # its function_call_output was never stored
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "done", "annotations": []}],
    },
]
LOST = {"type": "function_call_output", "call_id": "c1", "output": LOST_OUTPUT_TEXT}


def run(db: Path, *, streamed: bool, with_session: bool) -> list[list[Any]]:
    """One turn after ``STORED`` (held by a session, or handed over as the input): the
    model inputs sent."""
    model = SDKScriptedModel(placeholder_every=0, id_prefix="new_")

    async def main() -> None:
        agent = Agent(name="a", model=model, tools=[lookup])
        session = SQLiteSession("s", db) if with_session else None
        new: Any = "and the next one"
        if session is not None:
            await session.add_items(STORED)
        else:
            new = [*STORED, {"role": "user", "content": "and the next one"}]
        if streamed:
            result = Runner.run_streamed(agent, new, session=session)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, new, session=session)
        if session is not None:
            session.close()

    asyncio.run(main())
    return [json.loads(text) for text in model.inputs]


def first_input_head(inputs: list[list[Any]]) -> list[Any]:
    """The stored part of the first model input (before the new user message)."""
    first = inputs[0]
    new = next(at for at, item in enumerate(first) if item.get("content") == "and the next one")
    return first[:new]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("with_session", [True, False], ids=["session", "no_session"])
@pytest.mark.parametrize("dangling", ["drop", "synthesize"])
def test_a_call_whose_output_was_lost(
    streamed: bool, with_session: bool, dangling: str, tmp_path: Path
) -> None:
    plain = run(tmp_path / "plain.db", streamed=streamed, with_session=with_session)
    with accelerator.installed(guard=True, dangling=dangling) as installation:
        inputs = run(tmp_path / "guarded.db", streamed=streamed, with_session=with_session)
        counts = installation.guard
    assert counts is not None
    assert counts.dangling == dangling
    # The SDK alone prunes a stored call without its output from a session's history,
    # and sends one handed over in the input as it is (which the API rejects).
    sdk_sends = [None, None] if with_session else [None, "c1", None]
    assert [item.get("call_id") for item in first_input_head(plain)] == sdk_sends
    head = first_input_head(inputs)
    if dangling == "drop":
        assert [item.get("id") for item in head] == [None, "msg_1"]
        assert counts.synthesized == 0
        # The call, in each model input of the turn, where the SDK did not prune it.
        assert counts.dropped == (0 if with_session else len(plain))
    else:
        assert [item.get("id") for item in head[:2]] == [None, "fc_1"]
        assert head[2] == LOST
        assert [item.get("id") for item in head[3:]] == ["msg_1"]
        assert (counts.dropped, counts.synthesized) == (0, len(plain))
        assert "synthesized=" in repr(counts)
    assert len(inputs) == len(plain)
    for sent in inputs:
        assert input_problems(sent, history=STORED) == []


def test_dangling_is_checked_and_is_the_guards() -> None:
    with pytest.raises(ValueError, match=r"^dangling must be 'drop' or 'synthesize', not 'keep'$"):
        accelerator.install(guard=True, dangling="keep")
    with pytest.raises(ValueError, match="pass guard=True too"):
        accelerator.install(dangling="synthesize")
    assert accelerator.installation() is None
    with accelerator.installed(guard=True, dangling="synthesize"):
        with pytest.raises(ValueError, match="installed with dangling='synthesize', not 'drop'"):
            accelerator.install(guard=True)
        assert accelerator.install().guard is not None  # no guard asked: nothing changes
