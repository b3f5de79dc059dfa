"""``histcore doctor`` and history transactions: a ``--fix`` (and a ``--restore``) counts
as a change of the session's revision, so a reader holding the old revision cannot
``replace_suffix`` over the repair; the report gives each session's revision, op ids and
archive; the archive is checked, never changed. On SQLite and PostgreSQL (both layouts)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from histcore.sessions import SQLiteSession
from tests.cli.test_doctor import call, output, report_json, run_cli, session_entry, user
from tests.cli.test_doctor_postgres import PgStore, pg  # noqa: F401 (a fixture)
from tests.support.sqlite import connected, query

#: A call stored twice in the middle: the repair rewrites row 2 and deletes row 4, and
#: the session's newest row id stays what it was.
DAMAGED = [user("q"), call("c1", 1), output("c1"), call("c1", 2), user("last")]
REPAIRED = [user("q"), call("c1", 2), output("c1"), user("last")]

Opener = Callable[[], Any]


async def _stale_replace(open_session: Opener, fix: Callable[[], None]) -> tuple[int, int, bool]:
    """Read the revision, let the doctor fix, then replace_suffix with the old revision:
    (old revision, revision after, whether the replacement went through)."""
    session = open_session()
    try:
        before = await session.revision()
        await asyncio.to_thread(fix)
        replaced = await session.replace_suffix(0, [user("x")], expected_revision=before)
        return before, await session.revision(), replaced
    finally:
        session.close()


def _fixed(*args: str) -> Callable[[], None]:
    def fix() -> None:
        code, report = report_json(*args, "--fix")
        assert code == 0, report
        assert session_entry(report, "s")["fix"] == "fixed"

    return fix


# --- SQLite -------------------------------------------------------------------------


def _write(path: str, **options: Any) -> None:
    async def write() -> None:
        with SQLiteSession("s", path, **options) as session:
            await session.add_items(DAMAGED, op_id="op-1")

    asyncio.run(write())


def test_sqlite_fix_changes_the_revision(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")
    _write(path)
    before, after, replaced = asyncio.run(
        _stale_replace(lambda: SQLiteSession("s", path), _fixed(path))
    )
    assert not replaced
    assert after > before

    async def read() -> list[Any]:
        with SQLiteSession("s", path) as session:
            return await session.get_items()

    assert asyncio.run(read()) == REPAIRED


def test_sqlite_report_gives_revision_op_ids_and_archive(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")

    async def write() -> None:
        with SQLiteSession("s", path, keep_replaced=True) as session:
            await session.add_items([user("q"), user("gone")], op_id="a")
            await session.pop_item()
        with SQLiteSession("t", path) as plain:
            await plain.add_items([user("q")], op_id="b")

    asyncio.run(write())
    code, report = report_json(path)
    assert code == 0
    s, t = session_entry(report, "s"), session_entry(report, "t")
    assert (s["revision"], s["op_ids"], s["archived_rows"], s["noted_writes"]) == (2, 1, 1, 1)
    assert s["archive_problems"] == {}
    assert (t["revision"], t["op_ids"], t["archived_rows"]) == (1, 1, 0)
    code, text, _ = run_cli(path)
    lines = text.splitlines()
    archive = [line for line in lines if line.startswith("  archive:")]
    # One line, for the session with an archive only.
    assert archive == [
        "  archive: 1 archived row(s), 1 noted write(s); revision 2, 1 op id(s) remembered"
    ]
    assert lines[lines.index(archive[0]) - 1].startswith("session 's'")


def test_sqlite_archive_problems_are_reported_never_changed(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")
    _write(path, keep_replaced=True)

    async def pop() -> None:
        with SQLiteSession("s", path, keep_replaced=True) as session:
            await session.pop_item()

    asyncio.run(pop())
    with connected(path) as conn:
        conn.execute("UPDATE histcore_archive SET removed_revision = 99")
        conn.execute("UPDATE histcore_writes SET last_id = 1000")
    archive = query(path, "SELECT * FROM histcore_archive ORDER BY rowid")
    writes = query(path, "SELECT * FROM histcore_writes ORDER BY rowid")
    code, report = report_json(path, "--fix")
    assert code == 1
    entry = session_entry(report, "s")
    assert entry["archive_problems"] == {
        "archived_after_revision": [5],
        "write_outside_ids": [1],
    }
    assert entry["fix"] == "fixed"  # the rows are repaired; the archive is left
    assert query(path, "SELECT * FROM histcore_archive ORDER BY rowid") == archive
    assert query(path, "SELECT * FROM histcore_writes ORDER BY rowid") == writes
    _, text, _ = run_cli(path)
    assert "archived_after_revision: archived row ids 5" in text
    assert "write_outside_ids: noted writes from row ids 1" in text


def test_sqlite_restore_moves_the_revision_forward(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")
    _write(path)
    code, report = report_json(path, "--fix")
    assert code == 0
    fixed = session_entry(report, "s")["revision"]
    ops = query(path, "SELECT * FROM histcore_op_ids")

    def restore() -> None:
        assert run_cli("--restore", report["backup"], path)[0] == 0

    before, after, replaced = asyncio.run(_stale_replace(lambda: SQLiteSession("s", path), restore))
    assert before == fixed
    assert not replaced
    assert after > fixed
    assert query(path, "SELECT * FROM histcore_op_ids") == ops

    async def read() -> list[Any]:
        with SQLiteSession("s", path) as session:
            return await session.get_items()

    assert asyncio.run(read()) == DAMAGED


def test_sdk_store_without_side_tables_gets_none(tmp_path: Any) -> None:
    agents = pytest.importorskip("agents")
    path = os.path.join(tmp_path, "sdk.db")

    async def write() -> None:
        session = agents.SQLiteSession("s", path)
        await session.add_items(DAMAGED)
        session.close()

    asyncio.run(write())
    code, report = report_json(path, "--fix")
    assert code == 0
    assert session_entry(report, "s")["revision"] == 0
    tables = {name for (name,) in query(path, "SELECT name FROM sqlite_master")}
    assert not {"histcore_revisions", "histcore_archive"} & tables


# --- PostgreSQL ---------------------------------------------------------------------


def _postgres(pg: PgStore, **options: Any) -> Any:  # noqa: F811
    from histcore.sessions.postgres import PostgresSession

    return PostgresSession(
        "s", pg.dsn, sessions_table=pg.sessions, messages_table=pg.messages, **options
    )


async def _closing(pg: PgStore, work: Callable[[Any], Awaitable[Any]], **options: Any) -> Any:  # noqa: F811
    from histcore.sessions.postgres import close_pools

    session = _postgres(pg, **options)
    try:
        return await work(session)
    finally:
        session.close()
        await close_pools()


def _pg_drop(pg: PgStore) -> None:  # noqa: F811
    pg.execute(
        f"DROP TABLE IF EXISTS {pg.sessions}_revisions, {pg.sessions}_op_ids, "
        f"{pg.sessions}_archive, {pg.sessions}_writes"
    )


@pytest.fixture
def pgs(pg: PgStore) -> Iterator[PgStore]:  # noqa: F811
    try:
        yield pg
    finally:
        _pg_drop(pg)


def test_postgres_fix_changes_the_revision(pgs: PgStore) -> None:
    asyncio.run(_closing(pgs, lambda s: s.add_items(DAMAGED, op_id="op-1")))

    async def stale() -> tuple[int, int, bool]:
        from histcore.sessions.postgres import close_pools

        try:
            return await _stale_replace(lambda: _postgres(pgs), _fixed(*pgs.args))
        finally:
            await close_pools()

    before, after, replaced = asyncio.run(stale())
    assert not replaced
    assert after > before
    assert pgs.items("s") == REPAIRED


def test_postgres_report_archive_and_problems(pgs: PgStore) -> None:
    async def write(session: Any) -> None:
        await session.add_items(DAMAGED, op_id="a")
        await session.pop_item()

    asyncio.run(_closing(pgs, write, keep_replaced=True))
    code, report = report_json(*pgs.args)
    entry = session_entry(report, "s")
    assert (entry["revision"], entry["op_ids"], entry["archived_rows"]) == (2, 1, 1)
    assert entry["archive_problems"] == {}
    (archived_id,) = [row for (row,) in pgs.execute(f"SELECT id FROM {pgs.sessions}_archive")]
    pgs.execute(f"UPDATE {pgs.sessions}_archive SET removed_revision = 99")
    pgs.execute(f"UPDATE {pgs.sessions}_writes SET last_id = 10000000")
    archive = pgs.execute(f"SELECT * FROM {pgs.sessions}_archive")
    code, report = report_json(*pgs.args, "--fix")
    assert code == 1
    entry = session_entry(report, "s")
    assert entry["fix"] == "fixed"
    assert set(entry["archive_problems"]) == {"archived_after_revision", "write_outside_ids"}
    assert entry["archive_problems"]["archived_after_revision"] == [archived_id]
    assert pgs.execute(f"SELECT * FROM {pgs.sessions}_archive") == archive
    assert entry["revision"] == 3  # read after the fix, which counted one change


def test_postgres_sdk_layout_fix_changes_the_revision() -> None:
    pytest.importorskip("agents")
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("asyncpg")
    from tests.sessions.test_postgres_sdk_layout import sdk_schema

    with sdk_schema() as tables:

        async def run() -> tuple[int, int, bool, list[Any]]:
            try:
                await tables.sdk("s").add_items(DAMAGED)
                session = tables.histcore("s")
                before = await session.revision()
                fix = _fixed("--dsn", tables.dsn)
                await asyncio.to_thread(fix)
                replaced = await session.replace_suffix(0, [user("x")], expected_revision=before)
                after = await session.revision()
                return before, after, replaced, list(await tables.sdk("s").get_items())
            finally:
                await tables.aclose()

        before, after, replaced, items = asyncio.run(run())
        assert not replaced
        assert after > before
        assert items == REPAIRED
