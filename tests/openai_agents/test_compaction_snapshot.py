"""The OpenAI Agents SDK's compaction hook (``_get_compaction_snapshot``) on histcore's
SQLite and PostgreSQL sessions: the SDK's ``OpenAIResponsesCompactionSession`` with a
fake compaction client, and the snapshot's replacement against other writers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("agents", reason="the compaction hook is the OpenAI Agents SDK's")

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents import SessionSettings as SDKSessionSettings
from agents import SQLiteSession as SDKSQLiteSession
from agents.items import ModelResponse
from agents.memory import OpenAIResponsesCompactionSession
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from histcore.sessions import SQLiteSession
from tests.support.pg import Backends, backends

set_tracing_disabled(True)

SUMMARY = {"type": "message", "role": "assistant", "content": "summary"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class Answer(Model):
    """A model that answers every call with one assistant message and a response id
    (the SDK compacts only after a response with an id)."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="answer", annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id="resp_1")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class FakeCompaction:
    """``client.responses.compact``: records each request, answers with SUMMARY."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responses = self

    async def compact(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        return SimpleNamespace(output=[dict(SUMMARY)], usage=None)


@pytest.fixture(params=["sqlite", "postgres"])
async def made(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


async def _compacted_run(store: Any) -> tuple[list[Any], FakeCompaction]:
    """30 stored user messages, then one turn through the SDK's compaction session
    (reading the latest 3 items); the stored history afterwards."""
    await store.add_items([user(f"old {n}") for n in range(30)])
    client = FakeCompaction()
    session = OpenAIResponsesCompactionSession(
        "s", store, client=client, model="gpt-4.1", should_trigger_compaction=lambda _: True
    )
    await Runner.run(
        Agent(name="a", model=Answer()),
        "Paris",
        session=session,
        run_config=RunConfig(session_settings=SDKSessionSettings(limit=3)),
    )
    return await store.get_items(), client


async def test_the_sdk_compacts_the_newest_part_of_a_long_history(
    made: Backends, tmp_path: Path
) -> None:
    ours, client = await _compacted_run(made.session("s"))
    # The model saw the latest 3 stored items and the turn; those 5 became the summary,
    # and the 27 older items stay, as with the SDK's own SQLiteSession.
    (request,) = client.requests
    assert [item.get("content") for item in request["input"][:4]] == [
        "old 27",
        "old 28",
        "old 29",
        "Paris",
    ]
    assert ours == [user(f"old {n}") for n in range(27)] + [SUMMARY]
    sdk_store = SDKSQLiteSession("s", str(tmp_path / "sdk.db"))
    try:
        theirs, _ = await _compacted_run(sdk_store)
    finally:
        sdk_store.close()
    assert ours == theirs


async def test_without_the_hook_the_sdk_keeps_a_long_history(tmp_path: Path) -> None:
    # What the hook changes: without it the SDK cannot replace part of the history and
    # skips compaction.
    store = SQLiteSession("s", tmp_path / "hidden.db")
    store._get_compaction_snapshot = None  # type: ignore[method-assign]
    try:
        items, client = await _compacted_run(store)
    finally:
        store.close()
    assert client.requests == []
    assert len(items) == 32


async def test_a_snapshot_is_replaced_only_while_the_history_is_unchanged(
    made: Backends,
) -> None:
    session = made.session("s")
    await session.add_items([user(text) for text in "abcde"])
    snapshot = await session._get_compaction_snapshot(3)  # type: ignore[attr-defined]
    assert snapshot.items == [user("c"), user("d"), user("e")]
    assert not snapshot.complete
    everything = await session._get_compaction_snapshot(5)  # type: ignore[attr-defined]
    assert everything.complete
    # Another writer appends: the snapshot is stale and writes nothing.
    await made.session("s").add_items([user("f")])
    assert not await snapshot.replace_suffix(1, [SUMMARY])
    assert [item["content"] for item in await session.get_items()] == list("abcdef")
    fresh = await session._get_compaction_snapshot(3)  # type: ignore[attr-defined]
    assert not await fresh.replace_suffix(3, [SUMMARY])  # an empty suffix: as the SDK
    assert await fresh.replace_suffix(1, [SUMMARY])
    assert await session.get_items() == [user(text) for text in "abcd"] + [SUMMARY]
    assert not await fresh.replace_suffix(1, [SUMMARY])  # used: the revision moved on


async def test_prune_prefix_removes_the_leading_expired_items_in_the_same_transaction(
    made: Backends, tmp_path: Path
) -> None:
    history = [{**user(f"m{n}"), "expired": n < 2 or n == 3} for n in range(6)]

    def expired(item: Any) -> bool:
        return bool(item.get("expired"))

    session = made.session("s")
    await session.add_items(history)
    snapshot = await session._get_compaction_snapshot(2, prune_prefix=expired)  # type: ignore[attr-defined]
    assert await snapshot.replace_suffix(0, [SUMMARY])
    ours = await session.get_items()
    # m0 and m1 expired and lead the history: gone; m3 follows m2, which did not expire.
    assert [item.get("content") for item in ours] == ["m2", "m3", "summary"]
    sdk = SDKSQLiteSession("s", str(tmp_path / "sdk.db"))
    try:
        await sdk.add_items(history)
        theirs = await sdk._get_compaction_snapshot(2, prune_prefix=expired)
        assert theirs is not None
        assert await theirs.replace_suffix(0, [SUMMARY])
        assert ours == await sdk.get_items()
    finally:
        sdk.close()


async def test_a_subclass_supplies_its_own_snapshot(tmp_path: Path) -> None:
    class Mine(SQLiteSession):
        pass

    with Mine("s", tmp_path / "x.db") as session:
        await session.add_items([user("a")])
        assert await session._get_compaction_snapshot(1) is None
    with SQLiteSession("s", tmp_path / "x.db") as session:
        assert await session._get_compaction_snapshot(0) is None  # no int >= 1
        assert (await session._get_compaction_snapshot(1)).items == [user("a")]
