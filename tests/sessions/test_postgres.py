"""The session contract on every backend (memory, SQLite, PostgreSQL), then what only
the PostgreSQL session has: its jsonb column, corrupt rows, its tables and pool, and
its errors. Multi-process and failure tests are in ``test_postgres_failures.py``."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore import canonical_json
from histcore.exceptions import SessionClosedError, SessionError
from histcore.sessions import SessionSettings
from histcore.testing import function_call, function_call_output, text_message, user_message
from tests.support.examples import examples
from tests.support.pg import (
    BACKENDS,
    Backends,
    backends,
    pg_execute,
    require_pg,
    require_psycopg,
    unique,
)


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends("postgres", tmp_path) as made:
        yield made


def turn(n: int) -> list[dict[str, Any]]:
    return [user_message(f"question {n}"), text_message(f"answer {n}")]


# --- the contract, on every backend ------------------------------------------------------


async def test_an_empty_session(backend: Backends) -> None:
    session = backend.session()
    assert await session.get_items() == []
    assert await session.get_items(3) == []
    assert await session.pop_item() is None
    await session.clear_session()
    assert await session.get_items() == []


async def test_items_come_back_in_order_and_limit_reads_the_latest(backend: Backends) -> None:
    session = backend.session()
    for n in range(3):
        await session.add_items(turn(n))
    everything = turn(0) + turn(1) + turn(2)
    assert await session.get_items() == everything
    assert await session.get_items(3) == everything[-3:]
    assert await session.get_items(100) == everything
    assert await session.get_items(0) == []
    await session.add_items([])
    assert await session.get_items() == everything


async def test_the_session_limit_applies_unless_overridden(backend: Backends) -> None:
    session = backend.session("limited", SessionSettings(limit=2))
    await session.add_items(turn(0) + turn(1))
    assert await session.get_items() == turn(1)
    assert await session.get_items(3) == (turn(0) + turn(1))[-3:]


async def test_items_round_trip_exactly(backend: Backends) -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": 'ünïcødé ✓ 😀 \u0000 \\u0000 "quoted" NaN Infinity'},
        {"type": "reasoning", "id": "r1", "summary": [], "z": 1, "a": 2, "m": {"y": 0, "b": 1}},
        function_call("lookup", {"key": "rate"}, "c1"),
        function_call_output("c1", "3%"),
        {"type": "x", "floats": [0.1, -0.0, 1e-300, 1.7976931348623157e308, 2.5]},
        {"type": "x", "ints": [0, -1, 2**63 - 1, -(2**63)], "flags": [True, False, None]},
        {"type": "x", "non_finite": [math.inf, -math.inf]},
        {"type": "x", "tuple": (1, (2, 3))},
        {"type": "x", "deep": [[[[[[{"k": [1]}]]]]]]},
    ]
    session = backend.session()
    await session.add_items(items)
    stored = await session.get_items()
    assert [canonical_json(item) for item in stored] == [canonical_json(item) for item in items]
    # Key order and exact types survive too (canonical_json sorts keys).
    assert [list(item) for item in stored] == [list(item) for item in items]
    assert stored[1]["m"] == {"y": 0, "b": 1}
    assert list(stored[1]["m"]) == ["y", "b"]
    assert [type(v) for v in stored[5]["ints"]] == [int] * 4
    assert math.copysign(1.0, stored[4]["floats"][1]) == -1.0
    assert stored[7]["tuple"] == [1, [2, 3]]  # tuples are stored as JSON arrays


async def test_nan_round_trips(backend: Backends) -> None:
    session = backend.session()
    await session.add_items([{"type": "x", "value": math.nan}])
    (stored,) = await session.get_items()
    assert math.isnan(stored["value"])


async def test_models_are_stored_as_their_dump(backend: Backends) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Message(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        role: str
        content: str
        name: str | None = None

    session = backend.session()
    await session.add_items([Message(role="user", content="hi")])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]


async def test_an_unencodable_item_rejects_the_whole_batch(backend: Backends) -> None:
    session = backend.session()
    await session.add_items(turn(0))
    with pytest.raises(TypeError, match=r"items\[1\]"):
        await session.add_items([user_message("ok"), {"role": "user", "content": object()}])
    with pytest.raises(TypeError, match=r"items\[0\]"):
        await session.add_items(["not an item"])
    with pytest.raises(TypeError, match="list"):
        await session.add_items(user_message("a dict, not a list"))  # type: ignore[arg-type]
    assert await session.get_items() == turn(0)


async def test_pop_returns_the_newest_and_clear_empties(backend: Backends) -> None:
    session = backend.session()
    await session.add_items(turn(0) + turn(1))
    assert await session.pop_item() == text_message("answer 1")
    assert await session.get_items() == [*turn(0), user_message("question 1")]
    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items(turn(2))
    assert await session.get_items() == turn(2)


async def test_reads_hand_out_objects_the_caller_owns(backend: Backends) -> None:
    session = backend.session()
    original = turn(0)
    await session.add_items(original)
    original[0]["content"] = "changed by the caller after add_items"
    first = await session.get_items()
    first[0]["content"] = "changed by the caller after get_items"
    first.append(user_message("appended by the caller"))
    assert await session.get_items() == turn(0)


async def test_sessions_are_kept_apart(backend: Backends) -> None:
    one, two = backend.session("one"), backend.session("two")
    await one.add_items(turn(1))
    await two.add_items(turn(2))
    await one.clear_session()
    assert await one.get_items() == []
    assert await two.get_items() == turn(2)


async def test_another_worker_sees_every_change(backend: Backends) -> None:
    if not backend.durable:
        pytest.skip("in-memory sessions are not shared between session objects")
    reader, writer = backend.session("shared"), backend.session("shared")
    await writer.add_items(turn(0))
    assert await reader.get_items() == turn(0)
    await writer.add_items(turn(1))
    assert await reader.get_items(1) == [text_message("answer 1")]
    assert await reader.get_items() == turn(0) + turn(1)
    await writer.pop_item()
    await writer.add_items([user_message("instead")])
    assert await reader.get_items() == [
        *turn(0),
        user_message("question 1"),
        user_message("instead"),
    ]
    await writer.clear_session()
    assert await reader.get_items() == []
    await writer.add_items(turn(3))
    assert await reader.get_items() == turn(3)
    assert await reader.pop_item() == text_message("answer 3")
    assert await writer.get_items() == [user_message("question 3")]


async def test_a_closed_session_refuses_every_operation(backend: Backends) -> None:
    if backend.name == "memory":
        pytest.skip("in-memory sessions have nothing to close")
    session = backend.session()
    await session.add_items(turn(0))
    session.close()  # type: ignore[attr-defined]
    session.close()  # type: ignore[attr-defined]
    for operation in (
        session.get_items(),
        session.add_items(turn(1)),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(SessionClosedError):
            await operation
    assert await backend.session().get_items() == turn(0)


# Operations of two workers on one session: (op, worker, argument).
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 1), st.integers(0, 4)),
        st.tuples(st.just("pop"), st.integers(0, 1), st.none()),
        st.tuples(st.just("clear"), st.integers(0, 1), st.none()),
        st.tuples(st.just("get"), st.integers(0, 1), st.none() | st.integers(0, 6)),
    ),
    max_size=14,
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=_operations)
async def test_two_workers_agree_with_a_plain_list(
    backend: Backends, operations: list[tuple[str, int, int | None]]
) -> None:
    """Whatever two workers do, each read equals the same reads of a plain list; this
    drives the incremental-read caches through appends, pops and clears by others."""
    session_id = unique("prop")
    workers = [backend.session(session_id), backend.session(session_id)]
    expected: list[dict[str, Any]] = []
    for step, (operation, who, argument) in enumerate(operations):
        worker = workers[who]
        if operation == "add":
            batch = [user_message(f"{step}.{k}") for k in range(argument or 0)]
            await worker.add_items(batch)
            expected += batch
        elif operation == "pop":
            assert await worker.pop_item() == (expected.pop() if expected else None)
        elif operation == "clear":
            await worker.clear_session()
            expected.clear()
        else:
            wanted = expected if argument is None else expected[-argument:] if argument else []
            assert await worker.get_items(argument) == wanted
    assert await workers[0].get_items() == expected
    assert await workers[1].get_items() == expected


# --- PostgreSQL only --------------------------------------------------------------------


async def test_rows_hold_a_jsonb_copy_and_the_exact_text(pg: Backends) -> None:
    from histcore.sessions._codec import encode_items

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "plain", "z": 1, "a": 2},
        {"type": "x", "value": math.nan},
        {"type": "x", "text": "nul \u0000 inside"},
        {"type": "x", "text": "lone \ud800 surrogate"},
        {"type": "x", "text": "mentions NaN and Infinity and \\ud800 harmlessly"},
    ]
    session = pg.session("jsonb")
    await session.add_items(items)
    rows = await pg_execute(
        f"SELECT message_data, message_text FROM {pg.tables}_messages "
        "WHERE session_id = %s ORDER BY id",
        ("jsonb",),
    )
    assert [text for _, text in rows] == encode_items(items)
    data = [value for value, _ in rows]
    assert data[0] == {"role": "user", "content": "plain", "z": 1, "a": 2}
    assert data[1:4] == [None, None, None]  # what jsonb cannot hold stays text only
    assert data[4] == items[4]
    queried = await pg_execute(
        f"SELECT message_data->>'content' FROM {pg.tables}_messages "
        "WHERE session_id = %s AND message_data->>'role' = 'user'",
        ("jsonb",),
    )
    assert queried == [("plain",)]
    stored = await session.get_items()
    assert stored[2]["text"] == "nul \u0000 inside"
    assert stored[3]["text"] == "lone \ud800 surrogate"


async def test_corrupt_rows_are_skipped_with_a_warning(
    pg: Backends, caplog: pytest.LogCaptureFixture
) -> None:
    session = pg.session("corrupt")
    await session.add_items([user_message("u0")])
    messages = f"{pg.tables}_messages"
    insert = f"INSERT INTO {messages} (session_id, message_text) VALUES (%s, %s) RETURNING id"
    (bad_one,) = await pg_execute(insert, ("corrupt", "{not json"))
    await session.add_items([user_message("u1")])
    (bad_two,) = await pg_execute(insert, ("corrupt", ""))
    with caplog.at_level(logging.WARNING, logger="histcore.sessions"):
        assert await session.get_items() == [user_message("u0"), user_message("u1")]
        # Corrupt rows do not count towards the limit.
        assert await session.get_items(2) == [user_message("u0"), user_message("u1")]
    assert session.skipped_row_ids == (bad_one[0], bad_two[0])  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()]
    assert len(warnings) == 2
    assert f"row {bad_one[0]}" in warnings[0]
    # A fresh reader with a limit widens its window past the corrupt rows.
    assert await pg.session("corrupt").get_items(2) == [user_message("u0"), user_message("u1")]
    # pop goes past the corrupt newest row to the newest good one, and leaves it.
    assert await session.pop_item() == user_message("u1")
    assert await session.get_items() == [user_message("u0")]
    remaining = await pg_execute(
        f"SELECT message_text FROM {messages} WHERE session_id = %s ORDER BY id", ("corrupt",)
    )
    assert [text for (text,) in remaining] == ['{"role":"user","content":"u0"}', "{not json", ""]


async def test_a_long_history_is_read_in_windows_and_incrementally(pg: Backends) -> None:
    writer, reader = pg.session("long"), pg.session("long")
    items = [user_message(f"m{n}") for n in range(5000)]
    await writer.add_items(items)
    assert await reader.get_items(3) == items[-3:]
    assert await reader.get_items(40) == items[-40:]
    assert await reader.get_items() == items
    more = [user_message(f"n{n}") for n in range(10)]
    await writer.add_items(more)
    assert await reader.get_items(12) == (items + more)[-12:]
    uncached = pg.session("long", cache_history=False)
    assert await uncached.get_items() == items + more
    assert await uncached.get_items(5) == more[-5:]


async def test_tables_of_another_layout_are_a_clear_error(pg: Backends) -> None:
    name = unique("legacy")
    await pg_execute(f"CREATE TABLE {name}_sessions (session_id TEXT PRIMARY KEY)")
    await pg_execute(
        f"CREATE TABLE {name}_messages (id BIGSERIAL PRIMARY KEY, session_id TEXT, "
        "message_data TEXT)"
    )
    from histcore.sessions.postgres import PostgresSession

    session = PostgresSession(
        "s", pg.dsn, sessions_table=f"{name}_sessions", messages_table=f"{name}_messages"
    )
    try:
        # Neither histcore's layout nor the SDK's: its message_data is the SDK's TEXT.
        with pytest.raises(SessionError, match=r"lacks column\(s\) .*created_at timestamp"):
            await session.get_items()
    finally:
        await pg_execute(f"DROP TABLE {name}_messages, {name}_sessions")


def test_bad_arguments_are_named() -> None:
    require_psycopg()
    from histcore.sessions.postgres import PostgresSession

    with pytest.raises(TypeError, match="exactly one of dsn= and pool="):
        PostgresSession("s")
    with pytest.raises(TypeError, match="session_id must be a str"):
        PostgresSession(7, "postgresql://localhost/x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="messages_table must be a plain SQL identifier"):
        PostgresSession("s", "postgresql://localhost/x", messages_table="m; DROP TABLE x")
    with pytest.raises(TypeError, match=r"pool must be a psycopg_pool.AsyncConnectionPool"):
        PostgresSession("s", pool=object())  # type: ignore[arg-type]


async def test_sessions_share_a_pool_and_accept_their_own(pg: Backends) -> None:
    from psycopg_pool import AsyncConnectionPool

    from histcore.sessions.postgres import PostgresSession, shared_pool

    assert await shared_pool(pg.dsn) is await shared_pool(pg.dsn)
    async with AsyncConnectionPool(pg.dsn, kwargs={"autocommit": True}, min_size=1) as pool:
        own = PostgresSession(
            "own",
            pool=pool,
            sessions_table=f"{pg.tables}_sessions",
            messages_table=f"{pg.tables}_messages",
        )
        await own.add_items(turn(0))
        assert await pg.session("own").get_items() == turn(0)


async def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    require_pg()
    from histcore.sessions.postgres import PostgresSession

    dsn = "postgresql://someone:s3cret-password@127.0.0.1:1/nowhere"
    session = PostgresSession("s", dsn, connect_timeout=1)
    with pytest.raises(
        SessionError, match=r"cannot connect to PostgreSQL at someone@127.0.0.1:1"
    ) as info:
        await session.get_items()
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in repr(session)


async def test_a_cancelled_add_items_still_writes_the_whole_batch(pg: Backends) -> None:
    import psycopg

    session = pg.session("cancelled")
    await session.add_items(turn(0))
    batch = [user_message(f"m{n}") for n in range(1000)]
    async with await psycopg.AsyncConnection.connect(pg.dsn) as blocker:
        # Hold the session row so the write is under way but waiting when cancelled.
        await blocker.execute(
            f"SELECT 1 FROM {pg.tables}_sessions WHERE session_id = %s FOR UPDATE",
            ("cancelled",),
        )
        task = asyncio.ensure_future(session.add_items(batch))
        while not await pg_execute(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            (f"%{pg.tables}_sessions%",),
        ):
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # the write goes on until it knows its outcome
        await blocker.rollback()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pg.session("cancelled").get_items() == turn(0) + batch


async def test_a_role_without_create_privilege_uses_tables_made_for_it(pg: Backends) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from histcore.sessions.postgres import PostgresSession

    (can_create_roles,) = (
        await pg_execute(
            "SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user"
        )
    )[0]
    if not can_create_roles:
        pytest.skip("the test server's role cannot create roles")
    await pg.session("owner").add_items(turn(0))  # the owner creates the tables
    role = unique("worker")
    messages, sessions = f"{pg.tables}_messages", f"{pg.tables}_sessions"
    await pg_execute(f"CREATE ROLE {role} LOGIN")
    try:
        await pg_execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {messages}, {sessions}, "
            f"{sessions}_revisions, {sessions}_op_ids TO {role}"
        )
        await pg_execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
        dsn = make_conninfo(**{**conninfo_to_dict(pg.dsn), "user": role})
        worker = PostgresSession("owner", dsn, sessions_table=sessions, messages_table=messages)
        await worker.add_items(turn(1))
        assert await worker.get_items() == turn(0) + turn(1)
        assert await worker.pop_item() == text_message("answer 1")
        outsider = PostgresSession("x", dsn, messages_table=unique("m"), sessions_table=unique("s"))
        with pytest.raises(SessionError, match="permission denied"):
            await outsider.get_items()
    finally:
        from histcore.sessions.postgres import close_pools

        await close_pools()
        await pg_execute(f"DROP OWNED BY {role}")
        await pg_execute(f"DROP ROLE {role}")
