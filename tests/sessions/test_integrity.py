"""Data integrity on every backend: what a store refuses, what it skips when reading,
and that its errors say clearly what went wrong.

Rows "another writer stored" are inserted with plain SQL, as the Agents SDK or a
hand-written script would."""

from __future__ import annotations

import collections
import datetime
import decimal
import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from histcore.exceptions import SessionError
from histcore.items import MAX_DEPTH
from histcore.sessions import MemorySession, SQLiteSession
from tests.support.odd_values import NOW, Color, Level, Mode, Point
from tests.support.pg import BACKENDS, Backends, backends, pg_execute, require_psycopg
from tests.support.sqlite import connected

DURABLE = ("sqlite", "postgres")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


@pytest.fixture(params=DURABLE)
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


async def insert_raw(backend: Backends, tmp_path: Path, session_id: str, text: str) -> int:
    """Store ``text`` as a row of ``session_id``, as another program would; its id."""
    if backend.name == "sqlite":
        with connected(tmp_path / "sessions.db") as conn:
            conn.execute(
                "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", (session_id,)
            )
            cursor = conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                (session_id, text),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid
    sessions, messages = f"{backend.tables}_sessions", f"{backend.tables}_messages"
    await pg_execute(
        f"INSERT INTO {sessions} (session_id) VALUES (%s) ON CONFLICT DO NOTHING", (session_id,)
    )
    ((row_id,),) = await pg_execute(
        f"INSERT INTO {messages} (session_id, message_text) VALUES (%s, %s) RETURNING id",
        (session_id, text),
    )
    return int(row_id)


# --- session ids and messages ------------------------------------------------------------


def test_a_session_id_that_is_not_utf8_is_refused_by_every_constructor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"session_id .*surrogate"):
        MemorySession("\ud800")
    with pytest.raises(ValueError, match=r"session_id .*surrogate"):
        SQLiteSession("a\udfffb", tmp_path / "x.db")
    require_psycopg()
    from histcore.sessions.postgres import PostgresSession

    with pytest.raises(ValueError, match=r"session_id .*surrogate"):
        PostgresSession("\ud800", "postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(ValueError, match=r"session_id .*NUL"):
        PostgresSession("a\x00b", "postgresql://nobody@127.0.0.1:1/none")


async def test_a_failing_model_dump_is_a_type_error_naming_the_item(backend: Backends) -> None:
    class Broken:
        def model_dump(self, **options: Any) -> dict[str, Any]:
            raise RuntimeError("dump exploded")

    session = backend.session()
    await session.add_items([user("kept")])
    for bad in ([user("a"), Broken()], [user("a"), {"role": "user", "content": [Broken()]}]):
        with pytest.raises(TypeError, match=r"items\[1\].*model_dump.*dump exploded") as caught:
            await session.add_items(bad)
        assert isinstance(caught.value.__cause__, RuntimeError)
    assert await session.get_items() == [user("kept")]


async def test_long_session_ids_are_cut_short_in_messages(tmp_path: Path) -> None:
    long_id = "x" * 1_000_000
    session = SQLiteSession(long_id, tmp_path / "x.db")
    session.close()
    assert len(repr(session)) < 300
    with pytest.raises(SessionError) as closed:
        await session.get_items()
    assert len(str(closed.value)) < 300
    assert "1000000 characters" in str(closed.value)
    assert len(repr(MemorySession(long_id))) < 300


async def test_postgres_errors_cut_long_session_ids_short(tmp_path: Path) -> None:
    async with backends("postgres", tmp_path) as pg:
        # Far beyond what a btree index entry holds: the insert fails.
        session = pg.session("y" * 1_000_000)
        with pytest.raises(SessionError, match="add_items failed") as failure:
            await session.add_items([user("a")])
        message = str(failure.value)
        assert len(message) < 1000 and "1000000 characters" in message, message[:2000]  # noqa: PT018
        assert len(repr(session)) < 300


# --- rows that are JSON but not an item ------------------------------------------------

NOT_ITEMS = ("42", "null", '"x"', "[1]", "true", "[]", "-0.5")


async def test_json_rows_that_are_not_items_are_skipped_and_reported(
    durable: Backends, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = durable.session("s")
    await session.add_items([user("a")])
    bad = [await insert_raw(durable, tmp_path, "s", text) for text in NOT_ITEMS]
    await session.add_items([user("b")])
    with caplog.at_level(logging.WARNING, logger="histcore.sessions"):
        assert await session.get_items() == [user("a"), user("b")]
        assert await session.get_items(2) == [user("a"), user("b")]
    assert session.skipped_row_ids == tuple(bad)  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records if "not an input item" in r.getMessage()]
    assert len(warnings) == len(NOT_ITEMS)  # each once
    assert f"row {bad[1]} of " in warnings[1]
    assert "a JSON null, not an object" in warnings[1]
    # A fresh reader with a limit widens its window past them.
    assert await durable.session("s").get_items(1) == [user("b")]


async def test_pop_skips_and_removes_rows_that_are_not_items(
    durable: Backends, tmp_path: Path
) -> None:
    session = durable.session("s")
    await session.add_items([user("a")])
    for text in NOT_ITEMS:
        await insert_raw(durable, tmp_path, "s", text)
    # The stored null is not an item: pop goes past it to the newest item.
    assert await session.pop_item() == user("a")
    assert await session.get_items() == []
    await insert_raw(durable, tmp_path, "s", "null")
    assert await session.pop_item() is None
    assert await durable.session("s").get_items() == []
    assert await session.pop_item() is None


# --- nesting depth --------------------------------------------------------------------


def nested(levels: int) -> dict[str, Any]:
    """An item whose containers nest ``levels`` deep, the item itself counted."""
    value: Any = "deep"
    for _ in range(levels - 1):
        value = [value]
    return {"role": "user", "content": value}


def nested_text(levels: int) -> str:
    """The JSON text of ``nested(levels)``, built without recursion."""
    inner = levels - 1
    return '{"role": "user", "content": ' + "[" * inner + '"deep"' + "]" * inner + "}"


async def test_items_nested_deeper_than_the_limit_are_refused(backend: Backends) -> None:
    session = backend.session()
    await session.add_items([nested(MAX_DEPTH)])
    assert await session.get_items() == [nested(MAX_DEPTH)]
    for levels in (MAX_DEPTH + 1, 480, 600, 990, 5000):
        with pytest.raises(
            TypeError, match=rf"items\[1\] cannot be encoded as JSON: .*deeper than {MAX_DEPTH}"
        ):
            await session.add_items([user("a"), nested(levels)])
    assert await session.get_items() == [nested(MAX_DEPTH)]
    assert await session.pop_item() == nested(MAX_DEPTH)


async def test_rows_nested_deeper_than_the_limit_are_skipped_and_reported(
    durable: Backends, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert json.loads(nested_text(7)) == nested(7)
    session = durable.session("s")
    await session.add_items([user("a")])
    deepest_allowed = await insert_raw(durable, tmp_path, "s", nested_text(MAX_DEPTH))
    deep = [
        await insert_raw(durable, tmp_path, "s", nested_text(levels))
        for levels in (MAX_DEPTH + 1, 600, 990, 5000, 100_000)
    ]
    await session.add_items([user("b")])
    expected = [user("a"), nested(MAX_DEPTH), user("b")]
    with caplog.at_level(logging.WARNING, logger="histcore.sessions"):
        assert await session.get_items() == expected
        assert await session.get_items() == expected  # from the history cache
        assert await session.get_items(2) == expected[1:]
    assert session.skipped_row_ids == tuple(deep)  # type: ignore[attr-defined]
    assert deepest_allowed not in session.skipped_row_ids  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records if "deeper than" in r.getMessage()]
    assert len(warnings) == len(deep)
    # Fresh readers, with and without a cache, and with a limit.
    assert await durable.session("s").get_items(2) == expected[1:]
    assert await durable.session("s", cache_history=False).get_items() == expected
    # pop goes past the deep rows to the newest item, and removes them.
    assert await session.pop_item() == user("b")
    await insert_raw(durable, tmp_path, "s", nested_text(600))
    assert await session.pop_item() == nested(MAX_DEPTH)
    assert await durable.session("s").get_items() == [user("a")]


async def test_brackets_inside_strings_are_no_nesting(backend: Backends) -> None:
    brackets = "[" * 3000 + "{" * 3000 + '\\"[' * 500
    items = [
        {"role": "user", "content": brackets},
        {"role": "user", "content": [brackets, {"k" + brackets: '"'}], "tail": "]" * 900},
        {**nested(MAX_DEPTH), "text": '"[{' * 400},
    ]
    session = backend.session()
    await session.add_items(items)
    assert await session.get_items() == items


# --- values that would not read back as written ----------------------------------------


class Stamped(pydantic.BaseModel):
    at: datetime.datetime


class Note(pydantic.BaseModel):
    text: str
    level: Level = Level.HIGH


# (value, a piece of the TypeError message): each would be stored as something else.
CHANGED_ON_WRITE = [
    (NOW, "datetime"),
    (NOW.date(), "date"),
    (NOW.time(), "time"),
    (uuid.UUID(int=7), "UUID"),
    (Color.RED, "Color"),
    (Color.ONE, "Color"),
    (Point(1), "Point"),
    ({1: "a", "1": "b"}, "key 1 (int)"),
    ({1: "a"}, "key 1 (int)"),
    ({None: 1}, "key None (NoneType)"),
    ({True: 1}, "key True (bool)"),
    ({1.5: 1}, "key 1.5 (float)"),
    ([Stamped(at=NOW)], "datetime"),
    (decimal.Decimal("1.5"), "Decimal"),
    ({1, 2}, "set"),
    (b"bytes", "bytes"),
    ("\ud83d\ude00", "surrogate pair"),  # two characters, read back as one: "😀"
    ({"\udbff\udc00": 1}, "surrogate pair"),
]


@pytest.mark.parametrize(
    ("value", "named"), CHANGED_ON_WRITE, ids=[named for _, named in CHANGED_ON_WRITE]
)
async def test_values_that_would_change_type_are_refused(
    backend: Backends, value: Any, named: str
) -> None:
    session = backend.session()
    await session.add_items([user("kept")])
    bad = {"role": "user", "content": "x", "v": value}
    with pytest.raises(TypeError, match=r"items\[1\] cannot be encoded as JSON") as caught:
        await session.add_items([user("a"), bad])
    message = str(caught.value)
    assert named in message and "items[1]['v']" in message, message  # noqa: PT018
    assert await session.get_items() == [user("kept")]


async def test_values_json_writes_as_themselves_are_kept(backend: Backends) -> None:
    session = backend.session()
    item = {
        "role": "user",
        "content": "x",
        "int_enum": Level.HIGH,
        "str_enum": Mode.FAST,
        "ordered": collections.OrderedDict(b=1, a=2),
        "default": collections.defaultdict(list, k=[1]),
        "tuple": (1, (2, "three")),
        "model": [Note(text="nested")],
    }
    await session.add_items([item])
    (stored,) = await session.get_items()
    assert stored == {
        **item,
        "tuple": [1, [2, "three"]],
        "model": [{"text": "nested"}],
    }
    assert type(stored["int_enum"]) is int
    assert type(stored["str_enum"]) is str


def test_rows_that_are_no_text_at_all_are_corrupt() -> None:
    from histcore.sessions._codec import decode_id_rows

    good = json.dumps(user("a")).encode()
    ids, items, corrupt = decode_id_rows([(1, good), (2, None), (3, 42), (4, nested_text(300))])
    assert ids == [1]
    assert items == [user("a")]
    assert [row_id for row_id, _ in corrupt] == [2, 3, 4]
    assert "not JSON" in corrupt[0][1]
    assert "deeper than" in corrupt[2][1]


async def test_runs_go_on_over_rows_that_hold_no_item(durable: Backends, tmp_path: Path) -> None:
    from histcore.runner.agent import Agent
    from histcore.runner.run import Runner
    from histcore.testing import ScriptedModel, text_message, user_message

    session = durable.session("run")
    await session.add_items([user_message("u0"), text_message("a0")])
    for text in (*NOT_ITEMS, nested_text(600), "{broken"):
        await insert_raw(durable, tmp_path, "run", text)
    model = ScriptedModel([[text_message("a1")], [text_message("a2")]])
    agent = Agent("helper", model=model)
    for turn in ("u1", "u2"):
        await Runner.run(agent, turn, session=session)
    assert model.last_input == [
        user_message("u0"),
        text_message("a0"),
        user_message("u1"),
        text_message("a1"),
        user_message("u2"),
    ]
    assert len(session.skipped_row_ids) == len(NOT_ITEMS) + 2  # type: ignore[attr-defined]
