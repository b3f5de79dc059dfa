"""The batch preparation copies the session's history once: around its read, the
installed ``SQLiteSession.get_items`` hands out the kept history itself, and the
preparation's deep copy for the session callback is the only copy. Nothing a callback
does to its copies may reach the kept history, the store or a later read."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import Runner, SQLiteSession

import histcore.openai_agents as accelerator
from histcore.cli.bench.sdk_turn import conversation_agent, run_config
from histcore.engine import items as engine_items
from histcore.openai_agents import _session_read
from histcore.openai_agents.testing import SDKScriptedModel

HISTORY = 40


def stored(index: int, **extra: Any) -> dict[str, Any]:
    return {
        "role": "user" if index % 2 == 0 else "assistant",
        "content": [{"type": "input_text", "text": f"m{index}", "tags": [index]}],
        **extra,
    }


def deface(value: Any) -> None:
    """Mutate every dict and list in ``value``."""
    if isinstance(value, dict):
        for child in list(value.values()):
            deface(child)
        value["vandal"] = True
    elif isinstance(value, list):
        for child in list(value):
            deface(child)
        value.append("vandal")


def vandal(history: list[Any], new_items: list[Any]) -> list[Any]:
    """A session callback that mutates its history copies all the way down."""
    for item in history:
        deface(item)
    return history + new_items


def rows(path: Path) -> list[Any]:
    with closing(sqlite3.connect(path)) as conn:
        found = conn.execute("SELECT message_data FROM agent_messages ORDER BY id").fetchall()
    return [json.loads(text) for (text,) in found]


def whole_history_copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lengths of the lists of at least HISTORY items the engine copies."""
    copied: list[int] = []
    original = engine_items.plain_json_copy

    def counting(value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, list) and len(value) >= HISTORY:
            copied.append(len(value))
        return original(value, *args, **kwargs)

    monkeypatch.setattr(engine_items, "plain_json_copy", counting)
    return copied


async def turn(session: SQLiteSession, message: str) -> None:
    model = SDKScriptedModel(record=False, id_prefix=f"{message}_")
    await Runner.run(
        conversation_agent(model), message, session=session, run_config=run_config(vandal)
    )


@pytest.mark.parametrize("extra", [{}, {"created_by": "x"}], ids=["plain", "stripped key"])
def test_a_callback_mutating_its_copies_reaches_nothing_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any]
) -> None:
    # "created_by" is a key the SDK strips before the callback: the one deep copy cannot
    # be made, so the kept history handed out is copied first, as the read would have.
    path = tmp_path / "kept.db"

    async def scenario() -> tuple[list[Any], list[Any]]:
        session = SQLiteSession("s", str(path))
        try:
            await session.add_items([stored(n, **extra) for n in range(HISTORY)])  # type: ignore[list-item]
            await session.get_items()  # the history is kept from here on
            await turn(session, "one")
            after_one = await session.get_items()
            await turn(session, "two")
            return after_one, await session.get_items()
        finally:
            session.close()

    with accelerator.installed():
        after_one, after_two = asyncio.run(scenario())
    stored_rows = rows(path)
    assert after_two == stored_rows
    assert after_one == stored_rows[: len(after_one)]
    assert "vandal" not in json.dumps(stored_rows)
    assert [item["content"] for item in stored_rows[:HISTORY]] == [
        stored(n)["content"] for n in range(HISTORY)
    ]


def test_the_history_is_copied_once_a_preparation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "once.db"

    async def scenario() -> None:
        session = SQLiteSession("s", str(path))
        try:
            await session.add_items([stored(n) for n in range(HISTORY)])  # type: ignore[misc]
            await session.get_items()
            copied.clear()
            await accelerator_prepare(session)
        finally:
            session.close()

    copied = whole_history_copies(monkeypatch)
    with accelerator.installed():
        asyncio.run(scenario())
    assert copied == [HISTORY]  # the deep copy for the callback; the read copied nothing


async def accelerator_prepare(session: SQLiteSession) -> Any:
    from agents.run_internal.session_persistence import prepare_input_with_session

    return await prepare_input_with_session("hi", session, vandal)


def test_only_the_prepared_session_of_the_sdk_class_hands_out_its_history(
    tmp_path: Path,
) -> None:
    class Subclass(SQLiteSession):
        pass

    path = str(tmp_path / "who.db")

    async def scenario() -> None:
        session, other, sub = (
            SQLiteSession("s", path),
            SQLiteSession("t", path),
            Subclass("s", path),
        )
        try:
            await session.add_items([stored(n) for n in range(3)])  # type: ignore[misc]
            kept = await session.get_items()
            with _session_read.kept_handout(session) as handout:
                first = await session.get_items()
            with _session_read.kept_handout(session):
                second = await session.get_items()
            assert first is second is handout.items  # the kept list itself
            assert first == kept
            assert first is not kept
            assert await session.get_items() is not first  # outside the block: a copy
            with _session_read.kept_handout(other) as handout:
                assert await session.get_items() is not first
            assert handout.items is None
            await sub.get_items()
            with _session_read.kept_handout(sub) as handout:
                await sub.get_items()
            assert handout.items is None  # a subclass may edit what it reads
        finally:
            for each in (session, other, sub):
                each.close()

    with accelerator.installed():
        asyncio.run(scenario())
