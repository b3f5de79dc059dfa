"""One rule for what a stored row is (``histcore.sessions.rows``), applied alike by the
sessions, ``pop_item`` and ``histcore doctor``: a row a session reads as an item is an
item to the doctor (never deleted as invalid), a row a session skips is not valid JSON
to the doctor, and ``pop_item`` removes only the row it returns."""

from __future__ import annotations

import array
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from histcore.items import MAX_DEPTH, input_problems
from tests.cli.test_doctor import call, output, report_json, session_entry, user
from tests.support.pg import Backends, backends, pg_execute
from tests.support.sqlite import connected, query

DURABLE = ("sqlite", "postgres")


@pytest.fixture(params=DURABLE)
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


def doctor_args(backend: Backends, tmp_path: Path) -> list[str]:
    if backend.name == "sqlite":
        return [str(tmp_path / "sessions.db")]
    return [
        "--dsn",
        backend.dsn,
        "--sessions-table",
        f"{backend.tables}_sessions",
        "--messages-table",
        f"{backend.tables}_messages",
    ]


async def insert_raw(backend: Backends, tmp_path: Path, session_id: str, data: Any) -> int:
    """Store ``data`` (str: TEXT, bytes: a BLOB in SQLite) as a row; its id."""
    if backend.name == "sqlite":
        with connected(tmp_path / "sessions.db") as conn:
            conn.execute(
                "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", (session_id,)
            )
            cursor = conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                (session_id, data),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid
    sessions, messages = f"{backend.tables}_sessions", f"{backend.tables}_messages"
    await pg_execute(
        f"INSERT INTO {sessions} (session_id) VALUES (%s) ON CONFLICT DO NOTHING", (session_id,)
    )
    ((row_id,),) = await pg_execute(
        f"INSERT INTO {messages} (session_id, message_text) VALUES (%s, %s) RETURNING id",
        (session_id, data),
    )
    return int(row_id)


async def row_ids(backend: Backends, tmp_path: Path, session_id: str) -> list[int]:
    if backend.name == "sqlite":
        found = query(
            tmp_path / "sessions.db",
            "SELECT id FROM agent_messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
    else:
        found = await pg_execute(
            f"SELECT id FROM {backend.tables}_messages WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
    return [int(row_id) for (row_id,) in found]


def deep_text(levels: int) -> str:
    """A user message whose containers nest ``levels`` deep, the item itself counted."""
    inner = levels - 1
    return '{"role": "user", "content": ' + "[" * inner + '"deep"' + "]" * inner + "}"


# --- nesting deeper than MAX_DEPTH ------------------------------------------------------


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 600, 900])
async def test_a_row_nested_too_deeply_is_no_item_to_any_reader(
    durable: Backends, tmp_path: Path, levels: int
) -> None:
    session = durable.session("s")
    await session.add_items([user("a")])
    deep = await insert_raw(durable, tmp_path, "s", deep_text(levels))
    json.loads(deep_text(levels))  # json itself reads it
    assert await session.get_items() == [user("a")]
    assert session.skipped_row_ids == (deep,)  # type: ignore[attr-defined]

    code, report = report_json(*doctor_args(durable, tmp_path))
    entry = session_entry(report, "s")
    assert code == 1, "the doctor does not call the session clean"
    assert entry["details"]["invalid_json_rows"] == [deep]
    assert entry["details"]["invalid_json_reasons"] == {
        str(deep): f"nested deeper than {MAX_DEPTH} levels"
    }

    # pop returns the item below the deep row, and removes only that item's row.
    assert await session.pop_item() == user("a")
    assert await row_ids(durable, tmp_path, "s") == [deep]
    assert await session.pop_item() is None
    assert await row_ids(durable, tmp_path, "s") == [deep]


async def test_pop_removes_only_the_row_it_returns(durable: Backends, tmp_path: Path) -> None:
    session = durable.session("s")
    await session.add_items([user("a"), user("b")])
    first, _ = await row_ids(durable, tmp_path, "s")
    junk = [await insert_raw(durable, tmp_path, "s", text) for text in ("garbage", "null", "[1]")]
    assert await session.pop_item() == user("b")
    assert await row_ids(durable, tmp_path, "s") == [first, *junk]
    assert await session.get_items() == [user("a")]
    assert await durable.session("s").pop_item() == user("a")
    assert await row_ids(durable, tmp_path, "s") == junk
    assert await session.pop_item() is None
    assert await row_ids(durable, tmp_path, "s") == junk


# --- encodings ----------------------------------------------------------------------------

CALL = call("c1", 1) | {"arguments": '{"city": "Zürich 😀"}'}
ENCODINGS = ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]


def cesu8(text: str) -> bytes:
    """``text`` in CESU-8: a character beyond the BMP as its two UTF-16 surrogates, each
    written as three UTF-8 bytes."""
    units = array.array("H", text.encode("utf-16-le"))
    return "".join(map(chr, units)).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_json_in_another_unicode_encoding_is_an_item_to_every_reader(
    tmp_path: Path, encoding: str
) -> None:
    async with backends("sqlite", tmp_path) as made:
        session = made.session("s")
        await session.add_items([user("q")])
        await insert_raw(made, tmp_path, "s", json.dumps(CALL, ensure_ascii=False).encode(encoding))
        await session.add_items([output("c1", "sunny")])
        items = await session.get_items()
        assert items == [user("q"), CALL, output("c1", "sunny")]
        assert input_problems(items) == []

        args = doctor_args(made, tmp_path)
        code, report = report_json(*args)
        assert code == 0, session_entry(report, "s")
        code, report = report_json(*args, "--fix", "--drop-invalid-rows")
        assert code == 0
        assert len(await row_ids(made, tmp_path, "s")) == 3, "no row the session reads goes"
        assert await made.session("s").get_items() == items


async def test_a_byte_order_mark_in_postgres_text_is_skipped_as_in_sqlite(
    durable: Backends, tmp_path: Path
) -> None:
    session = durable.session("s")
    await session.add_items([user("q")])
    await insert_raw(durable, tmp_path, "s", "\ufeff" + json.dumps(CALL))
    await session.add_items([output("c1", "sunny")])
    assert await session.get_items() == [user("q"), CALL, output("c1", "sunny")]
    code, report = report_json(*doctor_args(durable, tmp_path), "--fix", "--drop-invalid-rows")
    assert code == 0, session_entry(report, "s")
    assert len(await row_ids(durable, tmp_path, "s")) == 3


async def test_cesu8_is_no_item_to_any_reader(tmp_path: Path, caplog: Any) -> None:
    async with backends("sqlite", tmp_path) as made:
        session = made.session("s")
        await session.add_items([user("q")])
        bad = await insert_raw(made, tmp_path, "s", cesu8(json.dumps(CALL, ensure_ascii=False)))
        await session.add_items([output("c1", "sunny")])
        with caplog.at_level(logging.WARNING, logger="histcore.sessions"):
            assert await session.get_items() == [user("q"), output("c1", "sunny")]
        assert any("CESU-8" in record.getMessage() for record in caplog.records)
        code, report = report_json(*doctor_args(made, tmp_path))
        entry = session_entry(report, "s")
        assert code == 1
        assert entry["details"]["invalid_json_rows"] == [bad]
        assert "CESU-8" in entry["details"]["invalid_json_reasons"][str(bad)]
        # The session sends the output without its call: the repair drops it, and
        # keeps the row it cannot read.
        assert entry["problems"]["output_without_call"] == 1
        code, report = report_json(*doctor_args(made, tmp_path), "--fix")
        assert await made.session("s").get_items() == [user("q")]
        assert await row_ids(made, tmp_path, "s") == [1, bad]


# --- the rule itself ----------------------------------------------------------------------

ODD_ROWS: list[Any] = [
    b'{"a": 1}',
    b"\xef\xbb\xbf{}",
    '{"a": 1}'.encode("utf-16"),
    '{"a": 1}'.encode("utf-32-be"),
    "\ufeff{}",
    '{"a": NaN}',
    '{"n": 123456789012345678901234567890}',
    "null",
    "[1]",
    '"x"',
    "",
    "{",
    b"\xff\xfe\xff",
    b'{"a": "\xed\xa0\xbd\xed\xb8\x80"}',
    b'{"a": "\xed\xb0\x80"}',
    deep_text(MAX_DEPTH),
    deep_text(MAX_DEPTH + 1),
    None,
    42,
]


@pytest.mark.parametrize("data", ODD_ROWS, ids=range(len(ODD_ROWS)))
def test_the_doctor_reads_a_row_as_the_sessions_do(data: Any) -> None:
    from histcore.sessions._codec import decode_id_rows
    from histcore.sessions._store_readers.model import decode_text
    from histcore.sessions.rows import CorruptRow, decode_stored

    try:
        item = decode_stored(data)
    except CorruptRow:
        item = None
    _ids, items, _corrupt = decode_id_rows([(1, data)])
    assert items == ([] if item is None else [item])
    row = decode_text(1, data)
    assert (row.valid and isinstance(row.item, dict)) == (item is not None)
    if item is not None:
        assert row.item == item
