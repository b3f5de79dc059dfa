"""One SQLite file shared with the OpenAI Agents SDK's SQLiteSession, in both directions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from histcore.sessions import SQLiteSession
from histcore.testing import generate_history
from tests.support.sqlite import query

sdk_memory = pytest.importorskip("agents.memory")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# Values whose JSON text differs between orjson and json.dumps (spacing, escapes,
# non-ASCII, floats) but which both must read back identically.
AWKWARD = [
    user('quotes " and \\ and \n and \t and \u0001 and é 日本 😀'),
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "f",
        "arguments": '{"a": [1, 2.5, -0.0, 1e-07]}',
        "id": "fc_1",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "x" * 5000},
    {"role": "user", "content": "numbers", "values": [0, -1, 2**63 - 1, 0.1, 1e300, -2.5e-8]},
    {"role": "user", "content": "special", "values": [float("inf"), float("-inf")]},
    {"role": "user", "content": "empty", "nested": {"a": {}, "b": [], "c": None, "d": False}},
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "shared.db"


async def test_sdk_reads_what_histcore_writes(db: Path) -> None:
    items = AWKWARD + generate_history(300, seed=3)
    with SQLiteSession("conv", db) as ours:
        await ours.add_items(items)
    theirs = sdk_memory.SQLiteSession("conv", db)
    try:
        assert await theirs.get_items() == items
        assert await theirs.get_items(limit=4) == items[-4:]
        assert await theirs.pop_item() == items[-1]
    finally:
        theirs.close()


async def test_histcore_reads_what_the_sdk_writes(db: Path) -> None:
    items = AWKWARD + generate_history(300, seed=4)
    theirs = sdk_memory.SQLiteSession("conv", db)
    try:
        await theirs.add_items(items)
    finally:
        theirs.close()
    with SQLiteSession("conv", db) as ours:
        assert await ours.get_items() == items
        assert await ours.get_items(4) == items[-4:]
        assert await ours.pop_item() == items[-1]


async def test_nan_survives_both_directions(db: Path) -> None:
    item = {"role": "user", "content": "nan", "score": float("nan")}
    with SQLiteSession("ours", db) as ours:
        await ours.add_items([item])
    theirs = sdk_memory.SQLiteSession("ours", db)
    try:
        (read_by_sdk,) = await theirs.get_items()
        await theirs.add_items([item])
    finally:
        theirs.close()
    assert math.isnan(read_by_sdk["score"])
    with SQLiteSession("ours", db) as ours:
        stored = await ours.get_items()
    assert len(stored) == 2
    assert all(math.isnan(entry["score"]) for entry in stored)


async def test_both_libraries_continue_one_conversation(db: Path) -> None:
    theirs = sdk_memory.SQLiteSession("conv", db)
    try:
        with SQLiteSession("conv", db) as ours:
            await theirs.add_items([user("sdk 1")])
            await ours.add_items([user("histcore 1")])
            assert await ours.get_items() == [user("sdk 1"), user("histcore 1")]
            await theirs.add_items([user("sdk 2")])
            assert await ours.get_items() == [user("sdk 1"), user("histcore 1"), user("sdk 2")]
            assert await ours.pop_item() == user("sdk 2")
            assert await theirs.get_items() == [user("sdk 1"), user("histcore 1")]
            assert await theirs.pop_item() == user("histcore 1")
            assert await ours.get_items() == [user("sdk 1")]
            await theirs.clear_session()
            assert await ours.get_items() == []
            await ours.add_items([user("after clear")])
            assert await theirs.get_items() == [user("after clear")]
    finally:
        theirs.close()


async def test_sdk_created_file_keeps_its_schema(db: Path) -> None:
    theirs = sdk_memory.SQLiteSession("conv", db)
    theirs.close()
    before = query(db, "SELECT type, name, sql FROM sqlite_master")
    with SQLiteSession("conv", db) as ours:
        await ours.add_items([user("a")])
    after = query(db, "SELECT type, name, sql FROM sqlite_master")
    # The SDK's tables and index are as they were; histcore adds only its side tables
    # (revisions and op ids), which the SDK never reads.
    assert [row for row in after if "histcore_" not in row[1]] == before
    assert {row[1] for row in after if row[0] == "table"} - {row[1] for row in before} == {
        "histcore_revisions",
        "histcore_op_ids",
    }
