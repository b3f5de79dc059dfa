"""``histcore doctor``'s ``archived_partial_unit``: the transcript (live and archived rows)
holds every archived item's whole unit; reported, never changed, and no reason for
``--fix`` to touch the live rows. On SQLite and PostgreSQL (histcore's layout and the
SDK's)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from histcore.sessions import SQLiteSession
from tests.cli.test_doctor import (
    answer,
    call,
    output,
    report_json,
    run_cli,
    session_entry,
    user,
)
from tests.cli.test_doctor_postgres import PgStore, pg  # noqa: F401 (a fixture)
from tests.support.sqlite import connected, query

KIND = "archived_partial_unit"
#: Sessions whose archive holds only whole units (a pending call popped or cleared too).
WHOLE = ("whole", "cleared")
#: Sessions whose transcript loses a row by raw SQL, and the ``--fix`` of each.
BROKEN = {
    "output": "clean",
    "archived_call": "clean",
    "call": "clean",
    "reasoning": "clean",
    "fixed": "fixed",
}

Opener = Callable[[str], Any]


def reasoning(item_id: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": []}


async def _replace(session: Any, start: int, items: list[Any]) -> None:
    revision = await session.revision()
    assert await session.replace_suffix(start, items, expected_revision=revision)


async def write_sessions(open_session: Opener) -> None:
    """Every scenario, each in a ``keep_replaced=True`` session of its own."""
    s = open_session("whole")
    await s.add_items([user("q"), call("c1"), output("c1"), reasoning("rs_1"), answer("a")])
    await _replace(s, 1, [answer("summary")])  # archives two whole units
    await s.add_items([call("c9")])
    await s.pop_item()  # a call awaiting its output, archived: whole
    await s.add_items([user("next"), answer("b"), call("c3")])
    await s.add_items([output("c3")])
    await s.pop_item()  # an output whose call stays live
    await s.add_items([output("c3", "again")])
    s = open_session("cleared")
    await s.add_items([user("q"), call("c5")])
    await s.clear_session()  # paused for approval, then cleared
    await s.add_items([user("new start")])
    s = open_session("output")
    await s.add_items([user("q"), call("c1"), output("c1")])
    await s.pop_item()
    for name in ("archived_call", "call"):
        s = open_session(name)
        await s.add_items([user("q"), call("c1"), output("c1"), answer("a")])
        await _replace(s, 1, [user("again")])
    s = open_session("reasoning")
    await s.add_items([user("q"), reasoning("rs_1"), answer("a")])
    await _replace(s, 1, [user("again")])
    s = open_session("fixed")
    await s.add_items([user("q"), call("c1"), output("c1"), user("u2")])
    await _replace(s, 1, [user("again")])
    # A call stored twice: --fix changes the live rows of this session.
    await s.add_items([call("c8", 1), output("c8"), call("c8", 2), user("last")])


@dataclass(frozen=True)
class Layout:
    """Where a store keeps its live and archived rows, and how to reach them by SQL."""

    execute: Callable[[str, tuple[Any, ...]], list[Any]]
    messages: str
    live_text: str
    archive: str
    archive_text: str
    writes: str
    mark: str  # the parameter placeholder
    args: tuple[str, ...]  # the doctor's store arguments

    def ids(self, table: str, session: str, like: str) -> list[int]:
        text = self.archive_text if table == self.archive else self.live_text
        found = self.execute(
            f"SELECT id FROM {table} WHERE session_id = {self.mark} "
            f"AND {text} LIKE {self.mark} ORDER BY id",
            (session, f'%"{like}"%'),
        )
        return [int(row_id) for (row_id,) in found]

    def delete(self, table: str, row_ids: list[int]) -> None:
        assert row_ids
        for row_id in row_ids:
            self.execute(f"DELETE FROM {table} WHERE id = {self.mark}", (row_id,))

    def side_tables(self) -> list[Any]:
        return [
            *self.execute(f"SELECT * FROM {self.archive} ORDER BY session_id, id", ()),
            *self.execute(f"SELECT * FROM {self.writes} ORDER BY session_id, first_id", ()),
        ]

    def live(self, session: str) -> list[Any]:
        return self.execute(
            f"SELECT id, {self.live_text} FROM {self.messages} "
            f"WHERE session_id = {self.mark} ORDER BY id",
            (session,),
        )


def damage(layout: Layout) -> dict[str, list[int]]:
    """Remove one row of a unit per broken session, by raw SQL; the archived row ids
    each session should then report."""
    archive, messages = layout.archive, layout.messages
    expected = {
        "output": layout.ids(archive, "output", "function_call_output"),
        "archived_call": layout.ids(archive, "archived_call", "function_call_output"),
        "call": layout.ids(archive, "call", "function_call"),
        "reasoning": layout.ids(archive, "reasoning", "reasoning"),
        "fixed": layout.ids(archive, "fixed", "function_call"),
    }
    assert all(len(found) == 1 for found in expected.values()), expected
    layout.delete(messages, layout.ids(messages, "output", "function_call"))  # live call
    layout.delete(archive, layout.ids(archive, "archived_call", "function_call"))
    layout.delete(archive, layout.ids(archive, "call", "function_call_output"))
    layout.delete(archive, layout.ids(archive, "reasoning", "assistant"))
    layout.delete(archive, layout.ids(archive, "fixed", "function_call_output"))
    return expected


def check_reports(layout: Layout) -> None:
    """Whole units first; then, after the damage, the problem in the text and JSON
    reports, and a --fix that leaves the archive byte-equal and changes only the live
    rows it repairs."""
    _, report = report_json(*layout.args)
    for name in (*WHOLE, *BROKEN):
        entry = session_entry(report, name)
        assert entry["archived_rows"] > 0
        assert entry["archive_problems"] == {}, name
        assert entry["clean"] is (name != "fixed"), name
    expected = damage(layout)
    code, report = report_json(*layout.args)
    assert code == 1
    for name in WHOLE:
        assert session_entry(report, name)["archive_problems"] == {}
    for name, row_ids in expected.items():
        entry = session_entry(report, name)
        assert entry["archive_problems"] == {KIND: row_ids}, name
        assert entry["clean"] is False
        # Not a problem of the live history: only "fixed" has one (its twice-stored call).
        assert any(entry["problems"].values()) is (name == "fixed"), name
    code, text, _ = run_cli(*layout.args)
    assert code == 1
    for row_ids in expected.values():
        assert f"  {KIND}: archived row ids {row_ids[0]}: their unit is not whole" in text
    side = layout.side_tables()
    live = {name: layout.live(name) for name in (*WHOLE, *BROKEN) if name != "fixed"}
    code, report = report_json(*layout.args, "--fix")
    assert code == 1
    for name, fix in BROKEN.items():
        entry = session_entry(report, name)
        assert entry["fix"] == fix, name
        # Read again after the repair: still there, never changed.
        assert entry["archive_problems"] == {KIND: expected[name]}, name
    assert layout.side_tables() == side
    assert {name: layout.live(name) for name in live} == live


# --- SQLite -------------------------------------------------------------------------


def test_sqlite_archived_units(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")

    async def write() -> None:
        opened: list[SQLiteSession] = []

        def open_session(name: str) -> SQLiteSession:
            opened.append(SQLiteSession(name, path, keep_replaced=True))
            return opened[-1]

        try:
            await write_sessions(open_session)
        finally:
            for session in opened:
                session.close()

    asyncio.run(write())

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        if sql.startswith("DELETE"):
            with connected(path) as conn:
                conn.execute(sql, params)
            return []
        return query(path, sql, params)

    check_reports(
        Layout(
            execute,
            "agent_messages",
            "message_data",
            "histcore_archive",
            "message_data",
            "histcore_writes",
            "?",
            (path,),
        )
    )


def test_sqlite_archive_check_reads_each_session_once(tmp_path: Any) -> None:
    """The archive is checked with the live rows the session's check read: no second
    read of them, with or without an archive."""
    from histcore.cli.doctor import check as doctor_check

    path = os.path.join(tmp_path, "s.db")

    async def write() -> None:
        with SQLiteSession("plain", path) as plain:
            await plain.add_items([user("q"), call("c1"), output("c1")])
        with SQLiteSession("kept", path, keep_replaced=True) as kept:
            await kept.add_items([user("q"), call("c1"), output("c1")])
            await kept.pop_item()

    asyncio.run(write())
    (archived,) = query(path, "SELECT id FROM histcore_archive")
    with connected(path) as conn:  # the live call of the archived output
        conn.execute("DELETE FROM agent_messages WHERE id = ?", (archived[0] - 1,))
    reads: list[str] = []
    store = doctor_check.open_store(path)
    read_facts = store.read_facts
    try:

        def counted(session_id: str) -> Any:
            reads.append(session_id)
            return read_facts(session_id)

        store.read_facts = counted  # type: ignore[method-assign]
        report = doctor_check.StoreReport(path, [], fix=False)
        doctor_check._check(store, report, None, None)
    finally:
        store.close()
    assert sorted(reads) == ["kept", "plain"]
    problems = {entry.session_id: entry.side.problems for entry in report.sessions}
    assert problems == {"plain": {}, "kept": {KIND: [archived[0]]}}


# --- PostgreSQL ---------------------------------------------------------------------


async def _write_postgres(make: Callable[[str], Any], after: Callable[[], Awaitable[Any]]) -> None:
    opened: list[Any] = []

    def open_session(name: str) -> Any:
        opened.append(make(name))
        return opened[-1]

    try:
        await write_sessions(open_session)
    finally:
        for session in opened:
            session.close()
        await after()


@pytest.fixture
def pgs(pg: PgStore) -> Iterator[PgStore]:  # noqa: F811
    try:
        yield pg
    finally:
        pg.execute(
            f"DROP TABLE IF EXISTS {pg.sessions}_revisions, {pg.sessions}_op_ids, "
            f"{pg.sessions}_archive, {pg.sessions}_writes"
        )


def test_postgres_archived_units(pgs: PgStore) -> None:
    from histcore.sessions.postgres import PostgresSession, close_pools

    def make(name: str) -> Any:
        return PostgresSession(
            name,
            pgs.dsn,
            sessions_table=pgs.sessions,
            messages_table=pgs.messages,
            keep_replaced=True,
        )

    asyncio.run(_write_postgres(make, close_pools))
    check_reports(
        Layout(
            pgs.execute,
            pgs.messages,
            "message_text",
            f"{pgs.sessions}_archive",
            "message_text",
            f"{pgs.sessions}_writes",
            "%s",
            tuple(pgs.args),
        )
    )


def test_postgres_sdk_layout_archived_units() -> None:
    pytest.importorskip("agents")
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("asyncpg")
    from tests.sessions.test_postgres_sdk_layout import sdk_schema

    with sdk_schema() as tables:

        async def write() -> None:
            await tables.sdk("setup").get_items()  # the SDK's tables
            await _write_postgres(
                lambda name: tables.histcore(name, keep_replaced=True), tables.aclose
            )

        asyncio.run(write())

        def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
            return asyncio.run(tables.execute(sql, params))

        check_reports(
            Layout(
                execute,
                "agent_messages",
                "message_data",
                "agent_sessions_archive",
                "message_text",
                "agent_sessions_writes",
                "%s",
                ("--dsn", tables.dsn),
            )
        )
