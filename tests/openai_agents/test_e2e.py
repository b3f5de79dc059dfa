"""End to end: the SDK's own ``Runner`` with and without ``histcore.openai_agents``.

A scripted model (written against the SDK's public ``Model`` interface) calls function
tools and answers; the session is the SDK's ``SQLiteSession`` in a file, seeded with a
generated history that ends in a dangling call; a ``session_input_callback`` reshapes
the history. One script runs plain and installed: the stored session, every model
input and every result must be identical, and the installed run must really have taken
histcore's paths.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import Agent, RunConfig, Runner, RunState, SQLiteSession, function_tool
from agents.memory import SessionSettings
from openai.types.responses import ResponseFunctionToolCall

import histcore.engine._support
import histcore.items
import histcore.openai_agents as accelerator
from histcore.cli.bench.sdk_turn import SDKScriptedModel, lookup_tool
from histcore.openai_agents import _replacements, _session_keys
from histcore.testing import generate_history
from tests.support.sqlite import query

SCRIPT = ["Paris", "Rome and Oslo", "delete notes.txt", "Lima"]


class ApprovingModel(SDKScriptedModel):
    """The scripted model, plus a call to the approval-gated tool on ``delete ...``."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        response = await super().get_response(*args, **kwargs)
        items = kwargs.get("input", args[1] if len(args) > 1 else None)
        last = items[-1] if isinstance(items, list) and items else {}
        content = last.get("content") if isinstance(last, dict) else None
        if isinstance(content, str) and content.startswith("delete "):
            response.output = [
                ResponseFunctionToolCall(
                    id=f"fc_del_{self.responses}",
                    type="function_call",
                    call_id=f"call_del_{self.responses}",
                    name="delete_file",
                    arguments=json.dumps({"name": content.removeprefix("delete ")}),
                    status="completed",
                )
            ]
        return response


@function_tool(needs_approval=True)
def delete_file(name: str) -> str:
    """Delete a file (needs approval)."""
    return f"deleted {name}"


def seed_history() -> list[dict[str, Any]]:
    history = generate_history(120, seed=7)
    # A reasoning item and the call it led to, never answered: pruned from the input.
    history += [
        {"type": "reasoning", "id": "rs_dangling", "summary": []},
        {"type": "function_call", "call_id": "dangling", "name": "lookup", "arguments": "{}"},
    ]
    return history


def keep_all(history: list[Any], new_items: list[Any]) -> list[Any]:
    return history + new_items


def reshape(history: list[Any], new_items: list[Any]) -> list[Any]:
    """Trim, repeat, reconstruct and edit: every classification path of the SDK."""
    kept = history[-40:]
    if kept and isinstance(kept[0], dict) and isinstance(kept[0].get("content"), str):
        kept[0]["content"] += " (edited by the callback)"
    reconstructed = [copy.deepcopy(item) for item in history[:2]]
    return [*reconstructed, *kept, *new_items, *new_items[:1], *kept[-1:]]


async def keep_all_async(history: list[Any], new_items: list[Any]) -> list[Any]:
    await asyncio.sleep(0)
    return history + new_items


@dataclass
class Transcript:
    model_inputs: list[str]
    results: list[tuple[Any, ...]]
    stored: str


async def converse(
    path: str, callback: Callable[..., Any], settings: SessionSettings | None
) -> Transcript:
    model = ApprovingModel()
    agent = Agent(
        name="assistant", instructions="Be brief.", model=model, tools=[lookup_tool(), delete_file]
    )
    config = RunConfig(
        session_input_callback=callback, session_settings=settings, tracing_disabled=True
    )
    session = SQLiteSession("e2e", path)
    results: list[tuple[Any, ...]] = []
    try:
        for message in SCRIPT:
            result = await Runner.run(agent, message, session=session, run_config=config)
            if result.interruptions:
                state_json = result.to_state().to_json()
                state = await RunState.from_json(agent, state_json)
                for interruption in state.get_interruptions():
                    state.approve(interruption)
                results.append(
                    ("interrupted", json.dumps(state_json, sort_keys=True, default=repr))
                )
                result = await Runner.run(agent, state, session=session, run_config=config)
            results.append(
                (
                    result.final_output,
                    json.dumps(result.to_input_list(), sort_keys=True, default=repr),
                    [type(item).__name__ for item in result.new_items],
                    [
                        json.dumps([o.model_dump() for o in response.output], sort_keys=True)
                        for response in result.raw_responses
                    ],
                )
            )
        stored = json.dumps(await session.get_items())
    finally:
        session.close()
    return Transcript(model.inputs, results, stored)


def seeded_store(path: str) -> str:
    async def seed() -> None:
        session = SQLiteSession("e2e", path)
        try:
            await session.add_items(seed_history())
        finally:
            session.close()

    asyncio.run(seed())
    return path


class Hits:
    """Counts how often histcore's own paths ran (not the SDK's fallbacks)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: dict[str, int] = {}
        self._monkeypatch = monkeypatch

    def spy(self, owner: Any, name: str, *, useful: Callable[[Any], bool] = lambda r: True) -> None:
        real = getattr(owner, name)

        def spied(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if useful(result):
                self.counts[name] = self.counts.get(name, 0) + 1
            return result

        self._monkeypatch.setattr(owner, name, spied)


@pytest.mark.parametrize(
    ("callback", "limit"),
    [(keep_all, None), (reshape, None), (keep_all_async, None), (reshape, 30)],
    ids=["keep-all", "reshape", "async-callback", "reshape-limit-30"],
)
def test_runner_results_are_identical_with_install(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, callback: Callable[..., Any], limit: int | None
) -> None:
    settings = SessionSettings(limit=limit) if limit is not None else None
    template = seeded_store(os.path.join(tmp_path, "template.db"))
    plain_path = os.path.join(tmp_path, "plain.db")
    fast_path = os.path.join(tmp_path, "fast.db")
    for path in (plain_path, fast_path):
        with open(template, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())

    accelerator.uninstall()
    plain = asyncio.run(converse(plain_path, callback, settings))

    hits = Hits(monkeypatch)
    # Bound at install time: spy before installing.
    hits.spy(
        histcore.engine._support, "screened_deduplicate", useful=lambda r: r is not NotImplemented
    )
    hits.spy(
        histcore.engine._support,
        "screened_drop_orphan_function_calls",
        useful=lambda r: r is not NotImplemented,
    )
    hits.spy(_replacements, "dump_compatible_copy", useful=lambda r: r is not None)
    hits.spy(_replacements, "deep_copy", useful=lambda r: r is not None)
    hits.spy(_session_keys, "canonical_key_table", useful=lambda r: r is not None)
    with accelerator.installed():
        fast = asyncio.run(converse(fast_path, callback, settings))

    assert fast.model_inputs == plain.model_inputs
    assert fast.results == plain.results
    assert fast.stored == plain.stored
    # The dangling call from the seeded history never reached the model.
    assert all('"call_id": "dangling"' not in text for text in plain.model_inputs)
    assert len(plain.model_inputs) == 2 * len(SCRIPT)
    expected_paths = {
        "screened_deduplicate",
        "screened_drop_orphan_function_calls",
        "dump_compatible_copy",
        "deep_copy",
    }
    assert expected_paths <= set(hits.counts) <= expected_paths | {"canonical_key_table"}, (
        hits.counts
    )
    if histcore.BACKEND == "rust" and callback is reshape:
        # Reconstructions are matched by content: canonical keys (text keys with the
        # pure twin; identity alone decides the other callbacks on recent releases).
        assert "canonical_key_table" in hits.counts, hits.counts


def test_sqlite_store_written_with_install_reads_back_identically(tmp_path: Any) -> None:
    """Items persisted by an installed run are the plain run's, row for row."""
    template = seeded_store(os.path.join(tmp_path, "template.db"))

    def rows(path: str) -> list[tuple[int, str]]:
        return query(path, "SELECT id, message_data FROM agent_messages ORDER BY id")

    copies = []
    for name, install in (("plain.db", False), ("fast.db", True)):
        path = os.path.join(tmp_path, name)
        with open(template, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        if install:
            with accelerator.installed():
                asyncio.run(converse(path, reshape, None))
        else:
            asyncio.run(converse(path, reshape, None))
        copies.append(rows(path))
    assert copies[0] == copies[1]
    assert len(copies[0]) > len(seed_history())
