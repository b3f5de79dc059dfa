"""The installed ``SQLiteSession.get_items`` reads back exactly what the SDK's does,
whatever the rows hold, and takes its own path only for the unlimited read."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import SQLiteSession
from agents.memory import SessionSettings

import histcore.openai_agents as accelerator
from tests.support.examples import examples
from tests.support.session_read import decode_calls
from tests.support.strategies import json_values

# Rows another writer (or an older release) may have left: JSON orjson refuses or reads
# differently, valid JSON that is not an object, corrupt text, a BLOB, a number (the
# column is NOT NULL).
ODD_ROWS: list[Any] = [
    '{"type": "message", "content": NaN}',
    '{"big": 123456789012345678901234567890}',
    '{"text": "\\ud800 lone"}',
    '{"inf": 1e400}',
    "not json",
    b'{"blob": true}',
    7,
    "[1, 2]",
    '"just text"',
    '{"a": 1}{"b": 2}',
    '{"dup": 1, "dup": 2}',
]


@pytest.fixture(autouse=True)
def uninstalled() -> Any:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


def store_with(path: str, items: list[Any], raw_rows: list[Any]) -> None:
    async def fill() -> None:
        session = SQLiteSession("s", path)
        try:
            await session.add_items(items)
        finally:
            session.close()

    asyncio.run(fill())
    # closing(): a connection's own context manager commits but does not close it.
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            [(row,) for row in raw_rows],
        )


def read(path: str, limit: int | None = None, settings: Any = None) -> Any:
    async def items() -> Any:
        session = SQLiteSession("s", path, session_settings=settings)
        try:
            return await session.get_items(limit)
        finally:
            session.close()

    try:
        # repr tells 1 from 1.0 and shows NaN, which is not equal to itself.
        return ("returned", repr(asyncio.run(items())))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


def test_odd_rows_read_back_as_the_sdk_reads_them(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "odd.db")
    store_with(path, [{"type": "message", "role": "user", "content": "hi"}], ODD_ROWS)
    plain = read(path)
    calls = decode_calls(monkeypatch)
    with accelerator.installed():
        assert read(path) == plain
    assert calls == [1 + len(ODD_ROWS)]  # histcore's path was taken
    assert "123456789012345678901234567890" in plain[1]  # exact, not a float


def test_limited_reads_are_the_sdks(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "limited.db")
    store_with(path, [{"n": n} for n in range(5)], ["corrupt", "{}"])
    cases = [(2, None), (None, SessionSettings(limit=3)), (0, None), (-1, None)]
    plain = [read(path, limit, settings) for limit, settings in cases]
    calls = decode_calls(monkeypatch)
    with accelerator.installed():
        assert [read(path, limit, settings) for limit, settings in cases] == plain
    assert calls == []


@settings(max_examples=examples(40), deadline=None)
@given(values=st.lists(json_values(max_leaves=6), max_size=6))
def test_stored_values_read_back_as_the_sdk_reads_them(
    tmp_path_factory: pytest.TempPathFactory, values: list[Any]
) -> None:
    path = str(tmp_path_factory.mktemp("fuzz") / "store.db")
    items = [{"type": "message", "value": value} for value in values]
    store_with(path, items, [])
    plain = read(path)
    with accelerator.installed():
        assert read(path) == plain
