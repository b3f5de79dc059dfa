"""``histcore doctor`` on stores the OpenAI Agents SDK's own session classes wrote.

Each store is written through the SDK class itself, damage included (an output whose
call is missing, a reasoning item without the item it produced, a repeated call); the
doctor checks and repairs it, and the same SDK class then reads it back: the items
must break no model-input rule.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

import histcore.items
from tests.cli.test_doctor import answer, call, output, report_json, run_cli, session_entry, user
from tests.support.pg import require_pg, require_psycopg, unique
from tests.support.sqlite import query

agents = pytest.importorskip("agents")


def reasoning(item_id: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": []}


#: Two turns written through the SDK class, with every kind of damage a repair fixes.
TURNS: list[list[dict[str, Any]]] = [
    [
        user("q1"),
        reasoning("rs_1"),
        call("c1", 1),
        output("c1", "a"),
        output("c9", "its call is missing"),
        reasoning("rs_2"),  # without the item it produced
    ],
    [
        user("q2"),
        call("c2", 1),
        output("c2", "x"),
        call("c2", 2),  # the call repeated
        output("c2", "y"),
        answer("done"),
    ],
]

EXPECTED = [
    user("q1"),
    reasoning("rs_1"),
    call("c1", 1),
    output("c1", "a"),
    user("q2"),
    call("c2", 2),
    output("c2", "y"),
    answer("done"),
]


def _check_found(report: dict[str, Any], session_id: str) -> None:
    entry = session_entry(report, session_id)
    problems = entry["problems"]
    assert problems["output_without_call"] == 1, problems
    assert problems["reasoning_without_item"] == 1, problems
    assert problems["duplicate_calls"] == 1, problems
    assert problems["invalid_json"] == 0, problems


def _check_and_fix(args: list[str], session_id: str) -> None:
    code, report = report_json(*args)
    assert code == 1, report
    _check_found(report, session_id)
    code, report = report_json(*args, "--fix")
    entry = session_entry(report, session_id)
    assert entry["fix"] == "fixed", entry
    assert code == 0, report
    code, report = report_json(*args)
    assert code == 0, report


def _read_back(items: list[Any]) -> None:
    assert items == EXPECTED
    assert histcore.items.input_problems(items) == []


# --- SQLite: SQLiteSession, AsyncSQLiteSession -------------------------------------


def _sdk_sqlite(path: str, session_id: str) -> Any:
    return agents.SQLiteSession(session_id, path)


def _sdk_async_sqlite(path: str, session_id: str) -> Any:
    pytest.importorskip("aiosqlite")
    from agents.extensions.memory import AsyncSQLiteSession

    return AsyncSQLiteSession(session_id, path)


async def _close(session: Any) -> None:
    closing = session.close()
    if asyncio.iscoroutine(closing):
        await closing


@pytest.mark.parametrize("make", [_sdk_sqlite, _sdk_async_sqlite], ids=["sqlite", "async"])
def test_sqlite_stores_of_the_sdk_are_repaired_and_read_back(
    tmp_path: Any, make: Callable[[str, str], Any]
) -> None:
    path = os.path.join(tmp_path, "sdk.db")

    async def write() -> None:
        session = make(path, "s")
        try:
            for turn in TURNS:
                await session.add_items(turn)
        finally:
            await _close(session)

    asyncio.run(write())
    _check_and_fix([path], "s")

    async def read() -> list[Any]:
        session = make(path, "s")
        try:
            return list(await session.get_items())
        finally:
            await _close(session)

    _read_back(asyncio.run(read()))


# --- SQLite: AdvancedSQLiteSession ----------------------------------------------------


def _advanced(path: str, session_id: str = "s") -> Any:
    from agents.extensions.memory import AdvancedSQLiteSession

    return AdvancedSQLiteSession(session_id=session_id, db_path=path, create_tables=True)


def _usage(tokens: int) -> Any:
    usage = agents.Usage(requests=1, input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1)
    return SimpleNamespace(context_wrapper=SimpleNamespace(usage=usage))


def _write_advanced(path: str, first: list[dict[str, Any]] | None = None) -> None:
    async def write() -> None:
        session = _advanced(path)
        try:
            if first:
                await session.add_items(first)
            for number, turn in enumerate(TURNS):
                await session.add_items(turn)
                await session.store_run_usage(_usage(10 * (number + 1)))
        finally:
            session.close()

    asyncio.run(write())


def _structure_consistent(path: str) -> None:
    dangling = query(
        path,
        "SELECT id FROM message_structure WHERE message_id NOT IN (SELECT id FROM agent_messages)",
    )
    assert dangling == [], "message_structure rows whose message is gone"
    unstructured = query(
        path,
        "SELECT id FROM agent_messages WHERE id NOT IN (SELECT message_id FROM message_structure)",
    )
    assert unstructured == [], "messages no branch holds"
    empty_turns = query(
        path,
        "SELECT u.session_id, u.branch_id, u.user_turn_number FROM turn_usage u WHERE NOT EXISTS "
        "(SELECT 1 FROM message_structure s WHERE s.session_id = u.session_id AND "
        "s.branch_id = u.branch_id AND s.user_turn_number = u.user_turn_number)",
    )
    assert empty_turns == [], "usage of turns that no longer exist"


def test_advanced_sqlite_store_is_repaired_with_its_structure(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "advanced.db")
    _write_advanced(path)
    before = query(path, "SELECT COUNT(*) FROM message_structure")[0][0]
    _check_and_fix([path], "s")
    _structure_consistent(path)
    after = query(path, "SELECT COUNT(*) FROM message_structure")[0][0]
    assert after == before - 4  # c9's output, rs_2, c2's first output and second call
    assert query(path, "SELECT COUNT(*) FROM turn_usage")[0][0] == 2

    async def read() -> tuple[list[Any], list[Any], Any]:
        session = _advanced(path)
        try:
            items = await session.get_items()
            tools = await session.get_tool_usage()
            popped = await session.pop_item()
            return items, tools, popped
        finally:
            session.close()

    items, tools, popped = asyncio.run(read())
    _read_back(items)
    assert popped == answer("done")
    assert sum(count for name, count, _ in tools if name == "lookup") == 2


def test_advanced_sqlite_usage_of_a_turn_repaired_away_goes_too(tmp_path: Any) -> None:
    # Items before the first user message are turn 0: the repair drops all of them.
    path = os.path.join(tmp_path, "advanced.db")

    async def write() -> None:
        session = _advanced(path)
        try:
            await session.add_items([output("c0", "orphan")])
            await session._update_turn_usage_internal(
                0, _usage(5).context_wrapper.usage, turn_anchor=1
            )
            for turn in TURNS:
                await session.add_items(turn)
        finally:
            session.close()

    asyncio.run(write())
    assert query(path, "SELECT user_turn_number FROM turn_usage") == [(0,)]
    code, report = report_json(path, "--fix")
    assert code == 0, report
    _structure_consistent(path)
    assert query(path, "SELECT COUNT(*) FROM turn_usage")[0][0] == 0


def test_advanced_sqlite_store_with_branches_is_refused_naming_the_table(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "advanced.db")
    _write_advanced(path)

    async def branch() -> None:
        session = _advanced(path)
        try:
            await session.create_branch_from_turn(2, "other")
            await session.add_items([user("q3")])
        finally:
            session.close()

    asyncio.run(branch())
    before = query(path, "SELECT * FROM agent_messages ORDER BY id")
    for fix in ([], ["--fix"]):
        code, out, err = run_cli(path, *fix)
        assert code == 2
        assert out == ""
        assert err.count("\n") == 1, err
        assert "message_structure" in err
    assert query(path, "SELECT * FROM agent_messages ORDER BY id") == before


CLEAN_TURNS = [user("q1"), answer("a1"), user("q2"), answer("a2")]


def _write_clean_advanced(path: str, session_ids: tuple[str, ...] = ("s", "t")) -> None:
    async def write() -> None:
        for session_id in session_ids:
            session = _advanced(path, session_id)
            try:
                await session.add_items(CLEAN_TURNS)
            finally:
                session.close()

    asyncio.run(write())


def test_advanced_rows_without_structure_are_reported_and_never_changed(tmp_path: Any) -> None:
    # SDK issue #4729: such a row is invisible to the SDK's reads, and its next pop_item
    # deletes it. The doctor names it, and leaves it (a writer may be mid-append).
    path = os.path.join(tmp_path, "advanced.db")
    _write_clean_advanced(path)
    (lost,) = query(path, "SELECT id FROM agent_messages WHERE session_id = 's' ORDER BY id")[1]
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM message_structure WHERE message_id = ?", (lost,))
        # a crash between the SDK's two inserts (the message row, then its structure row)
        crashed = conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            ('{"role": "user", "content": "q3"}',),
        ).lastrowid
    conn.close()
    before = query(path, "SELECT * FROM agent_messages ORDER BY id")

    code, out, _ = run_cli(path)
    assert code == 1, out
    assert "session 's' (5 rows): 2 rows without a message_structure row" in out
    assert f"  row_without_structure: row ids {lost}, {crashed} (" in out
    assert "pop_item deletes them" in out
    assert "session 't' (4 rows): clean" in out
    assert "1 of 2 session(s) with problems" in out
    code, out, _ = run_cli(path, "--quiet")
    assert code == 1
    assert "row_without_structure" in out
    assert "'t'" not in out

    for fix in ([], ["--fix"], ["--dry-run"]):
        code, report = report_json(path, *fix)
        assert code == 1, (fix, report)
        assert report["exit_code"] == 1
        entry = session_entry(report, "s")
        assert entry["row_without_structure"] == [lost, crashed]
        assert entry["row_without_structure_left"] == [lost, crashed]
        assert entry["clean"] is False
        assert entry["removed_rows"] == []
        assert session_entry(report, "t")["row_without_structure"] == []
        assert report["backup"] is None
    assert query(path, "SELECT * FROM agent_messages ORDER BY id") == before

    async def read() -> list[Any]:
        session = _advanced(path)
        try:
            return list(await session.get_items())
        finally:
            session.close()

    # What the rule says of the SDK: neither row is read.
    assert asyncio.run(read()) == [CLEAN_TURNS[0], *CLEAN_TURNS[2:]]


def test_advanced_store_without_the_issue_reports_no_row_without_structure(
    tmp_path: Any,
) -> None:
    path = os.path.join(tmp_path, "advanced.db")
    _write_clean_advanced(path)
    code, out, _ = run_cli(path)
    assert code == 0, out
    assert "message_structure" not in out
    assert "row_without_structure" not in out
    code, report = report_json(path)
    assert code == 0
    assert [entry["row_without_structure"] for entry in report["sessions"]] == [[], []]


def test_plain_sqlite_store_has_no_row_without_structure(tmp_path: Any) -> None:
    # No message_structure table: no row is "without" one.
    path = os.path.join(tmp_path, "sdk.db")

    async def write() -> None:
        session = _sdk_sqlite(path, "s")
        try:
            await session.add_items(CLEAN_TURNS)
        finally:
            await _close(session)

    asyncio.run(write())
    code, out, _ = run_cli(path)
    assert code == 0, out
    assert "row_without_structure" not in out
    code, report = report_json(path)
    assert code == 0
    assert session_entry(report, "s")["row_without_structure"] == []


def test_a_table_pointing_at_the_messages_is_refused_by_fix(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "sdk.db")

    async def write() -> None:
        session = _sdk_sqlite(path, "s")
        try:
            for turn in TURNS:
                await session.add_items(turn)
        finally:
            session.close()

    asyncio.run(write())
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, message_id INTEGER "
            "REFERENCES agent_messages (id))"
        )
    connection.close()
    code, _out, err = run_cli(path, "--fix")
    assert code == 2
    assert err.count("\n") == 1, err
    assert "notes" in err


# --- PostgreSQL: SQLAlchemySession ----------------------------------------------------


@pytest.fixture
def sqlalchemy_url() -> Iterator[tuple[str, str, str]]:
    """(the SQLAlchemy asyncpg URL, the libpq DSN, a new schema): the SDK's default table
    names in a schema of their own on the test server, dropped afterwards."""
    require_psycopg()
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("asyncpg")
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server = require_pg()
    schema = unique("sdk")
    parts = conninfo_to_dict(server.dsn)
    with psycopg.connect(server.dsn, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    dsn = make_conninfo(server.dsn, options=f"-csearch_path={schema}")
    user_part = parts.get("user", "")
    password = f":{parts['password']}" if parts.get("password") else ""
    host = parts.get("host", "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    url = f"postgresql+asyncpg://{user_part}{password}@{host}{port}/{parts.get('dbname', '')}"
    try:
        yield url, dsn, schema
    finally:
        with psycopg.connect(server.dsn, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


def _sqlalchemy_session(url: str, schema: str) -> Any:
    from agents.extensions.memory import SQLAlchemySession

    return SQLAlchemySession.from_url(
        "s",
        url=url,
        create_tables=True,
        engine_kwargs={"connect_args": {"server_settings": {"search_path": schema}}},
    )


def test_sqlalchemy_store_on_postgres_is_repaired_and_read_back(
    sqlalchemy_url: tuple[str, str, str],
) -> None:
    url, dsn, schema = sqlalchemy_url

    async def write() -> None:
        session = _sqlalchemy_session(url, schema)
        try:
            for turn in TURNS:
                await session.add_items(turn)
        finally:
            await session._engine.dispose()

    asyncio.run(write())
    _check_and_fix(["--dsn", dsn], "s")

    async def read() -> list[Any]:
        session = _sqlalchemy_session(url, schema)
        try:
            return list(await session.get_items())
        finally:
            await session._engine.dispose()

    _read_back(asyncio.run(read()))
