"""``install(guard=True)`` and rule (f): a ``call_model_input_filter`` that removes tool
calls and outputs turns the stored ``[rs_1, fc_1, out_1, rs_2, msg_2]`` into
``[rs_1, rs_2, msg_2]``, which the Responses API rejects ("Item 'rs_1' of type
'reasoning' was provided without its required following item"). The guard drops rs_1,
with the session's history and without one (a reasoning item followed by another).
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

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.run_config import CallModelData, ModelInputData

import histcore.openai_agents as accelerator
from histcore.items import input_problems
from histcore.openai_agents.testing import SDKScriptedModel

TOOL_TYPES = frozenset({"function_call", "function_call_output"})


@function_tool
def lookup(city: str) -> str:
    return f"sunny in {city}"


STORED: list[dict[str, Any]] = [
    {"role": "user", "content": "weather?"},
    {"id": "rs_1", "type": "reasoning", "summary": []},
    {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "c1",
        "name": "lookup",
        "arguments": '{"city": "Oslo"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"id": "rs_2", "type": "reasoning", "summary": []},
    {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "sunny", "annotations": []}],
    },
]


def without_earlier_tools(data: CallModelData[Any]) -> ModelInputData:
    """Removes the tool calls and outputs of the turns before the last user message
    (the run's own stay, so that it ends)."""
    items = list(data.model_data.input)
    last_user = max(at for at, item in enumerate(items) if item.get("role") == "user")
    kept = [
        item
        for at, item in enumerate(items)
        if at > last_user or item.get("type") not in TOOL_TYPES
    ]
    return ModelInputData(input=kept, instructions=data.model_data.instructions)


def run(db: Path, *, streamed: bool, with_session: bool) -> SDKScriptedModel:
    """One turn after ``STORED``: held by a session, or handed over as the input."""
    model = SDKScriptedModel(placeholder_every=0, id_prefix="new_")
    config = RunConfig(call_model_input_filter=without_earlier_tools)

    async def main() -> None:
        agent = Agent(name="a", model=model, tools=[lookup])
        session = SQLiteSession("s", db) if with_session else None
        new: Any = "Paris"
        if session is not None:
            await session.add_items(STORED)
        else:
            new = [*STORED, {"role": "user", "content": "Paris"}]
        if streamed:
            result = Runner.run_streamed(agent, new, session=session, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, new, session=session, run_config=config)
        if session is not None:
            session.close()

    asyncio.run(main())
    return model


def sent_ids(model: SDKScriptedModel) -> list[list[Any]]:
    return [[item.get("id") for item in json.loads(text)] for text in model.inputs]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("with_session", [True, False], ids=["session", "no_session"])
def test_a_filter_removing_tools_sends_no_orphaned_reasoning(
    streamed: bool, with_session: bool, tmp_path: Path
) -> None:
    plain = run(tmp_path / "plain.db", streamed=streamed, with_session=with_session)
    with accelerator.installed(guard=True) as installation:
        model = run(tmp_path / "guarded.db", streamed=streamed, with_session=with_session)
        counts = installation.guard
    # The SDK alone sends rs_1 without the call stored after it; the guard drops rs_1.
    assert sent_ids(plain)[0] == [None, "rs_1", "rs_2", "msg_2", None]
    ids = sent_ids(model)
    assert ids[0] == [None, "rs_2", "msg_2", None]
    # The turn's own reasoning and call, then its answer, go on as the SDK sent them.
    assert ids[1] == [*ids[0], "rs_new_1", "fc_new_1_0", None]
    assert len(ids) == len(sent_ids(plain)) == 2
    for text in model.inputs:
        assert input_problems(json.loads(text), history=STORED) == []
    first = json.loads(plain.inputs[0])
    assert [p.kind for p in input_problems(first, history=STORED)] == [
        "reasoning_without_successor"
    ]
    # Each of the turn's two model inputs holds the filtered history again.
    assert counts is not None
    assert dict(counts.rules) == {"reasoning_without_successor": 2}
