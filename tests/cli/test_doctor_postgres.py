"""``histcore doctor --dsn``: PostgreSQL session stores (histcore's ``PostgresSession``
layout) are checked and repaired as SQLite ones are, each repair in a transaction that
holds its session's lock, with a backup table written first."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.cli.test_doctor import call, output, report_json, run_cli, session_entry, user
from tests.cli.test_doctor_rules import DAMAGE, Stored
from tests.support.pg import require_pg, require_psycopg, unique


@dataclass(frozen=True)
class PgStore:
    dsn: str
    sessions: str
    messages: str

    @property
    def args(self) -> list[str]:
        return [
            "--dsn",
            self.dsn,
            "--sessions-table",
            self.sessions,
            "--messages-table",
            self.messages,
        ]

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as connection:
            cursor = connection.execute(sql, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def write(self, sessions: dict[str, list[Stored]]) -> None:
        """Every row as its exact text, with the jsonb copy the session would store."""
        for session_id, rows in sessions.items():
            self.execute(f"INSERT INTO {self.sessions} (session_id) VALUES (%s)", (session_id,))
            for row in rows:
                text = row if isinstance(row, str) else json.dumps(row)
                self.execute(
                    f"INSERT INTO {self.messages} (session_id, message_data, message_text) "
                    "VALUES (%s, %s::jsonb, %s)",
                    (session_id, None if isinstance(row, str) else text, text),
                )

    def rows(self, session_id: str) -> list[tuple[int, str, Any]]:
        return [
            (int(row_id), text, data)
            for row_id, text, data in self.execute(
                f"SELECT id, message_text, message_data FROM {self.messages} "
                "WHERE session_id = %s ORDER BY id",
                (session_id,),
            )
        ]

    def items(self, session_id: str) -> list[Any]:
        return [json.loads(text) for _, text, _ in self.rows(session_id)]

    def generation(self, session_id: str) -> int:
        found = self.execute(
            f"SELECT generation FROM {self.sessions} WHERE session_id = %s", (session_id,)
        )
        return int(found[0][0])

    def backups(self) -> list[str]:
        return [
            str(name)
            for (name,) in self.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE %s ORDER BY tablename",
                (f"{self.messages[:40]}_bak_%",),
            )
        ]


@pytest.fixture
def pg() -> Iterator[PgStore]:
    require_psycopg()
    server = require_pg()
    prefix = unique("doctor")
    store = PgStore(server.dsn, f"{prefix}_sessions", f"{prefix}_messages")

    async def create() -> None:
        from histcore.sessions.postgres import PostgresSession, close_pools

        session = PostgresSession(
            "setup", server.dsn, sessions_table=store.sessions, messages_table=store.messages
        )
        try:
            await session.get_items()  # creates the tables
            await session.clear_session()
        finally:
            session.close()
            await close_pools()

    asyncio.run(create())
    try:
        yield store
    finally:
        tables = [*store.backups(), store.messages, store.sessions]
        store.execute(f"DROP TABLE IF EXISTS {', '.join(tables)}")


def test_every_kind_of_damage_is_found_and_repaired(pg: PgStore) -> None:
    pg.write({name: damage.rows for name, damage in DAMAGE.items()})
    before = {name: pg.rows(name) for name in DAMAGE}
    generations = {name: pg.generation(name) for name in DAMAGE}

    code, report = report_json(*pg.args)
    assert code == 1
    assert report["path"].startswith("histcore@")
    assert "/" in report["path"]
    for name, damage in DAMAGE.items():
        assert session_entry(report, name)["problems"][damage.key] == damage.count, name
    assert pg.backups() == [], "checking never writes"

    code, report = report_json(*pg.args, "--fix", "--drop-invalid-rows")
    assert code == 0, report
    for name, damage in DAMAGE.items():
        expected = damage.repaired if damage.repaired is not None else damage.dropped
        assert pg.items(name) == expected, name
        # The jsonb copy follows the text it was copied with.
        for _, text, data in pg.rows(name):
            assert data is None or data == json.loads(text)
        assert pg.generation(name) != generations[name], "cached histories are read again"
    (backup,) = pg.backups()
    assert report["backup"] == backup
    for name in DAMAGE:
        kept = pg.execute(
            f"SELECT id, message_text, message_data FROM {backup} WHERE session_id = %s "
            "ORDER BY id",
            (name,),
        )
        assert [tuple(row) for row in kept] == before[name]
    assert report_json(*pg.args)[0] == 0


def test_rows_that_are_not_items_are_left_without_the_flag(pg: PgStore) -> None:
    pg.write({"s": [user("q"), "42", call("c1", 1), output("c1"), call("c1", 2)]})
    code, report = report_json(*pg.args, "--fix")
    entry = session_entry(report, "s")
    assert code == 1
    assert entry["fix"] == "fixed"
    assert entry["left"]["not_item"] == 1
    assert [text for _, text, _ in pg.rows("s")][1] == "42"
    assert pg.items("s") == [user("q"), 42, call("c1", 2), output("c1")]


def test_a_session_read_in_chunks_is_repaired_whole(
    pg: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The doctor streams a session (and its checks under the lock) a chunk at a time.
    from histcore.sessions._store_readers import postgres

    monkeypatch.setattr(postgres, "_CHUNK", 2)
    pg.write({"s": [user("q"), call("c1", 1), output("c1"), call("c1", 2), output("lost")]})
    code, report = report_json(*pg.args, "--fix")
    assert code == 0, report
    assert session_entry(report, "s")["fix"] == "fixed"
    assert pg.items("s") == [user("q"), call("c1", 2), output("c1")]
    assert report_json(*pg.args)[0] == 0


def test_a_cached_session_reads_the_repair(pg: PgStore) -> None:
    pg.write({"s": [user("q"), call("c1", 1), output("c1"), call("c1", 2)]})
    first, second = asyncio.run(_read_fix_read(pg))
    assert len(first) == 4
    assert second == [user("q"), call("c1", 2), output("c1")]


async def _read_fix_read(pg: PgStore) -> tuple[list[Any], list[Any]]:
    # One session object reads (and caches) the history, the doctor fixes it from
    # another connection, and the session's next read returns the repair.
    from histcore.sessions.postgres import PostgresSession, close_pools

    session = PostgresSession("s", pg.dsn, sessions_table=pg.sessions, messages_table=pg.messages)
    try:
        first = await session.get_items()
        code, _ = await asyncio.to_thread(report_json, *pg.args, "--fix")
        assert code == 0
        return first, await session.get_items()
    finally:
        session.close()
        await close_pools()


@contextmanager
def session_locked(pg: PgStore, session_id: str) -> Iterator[None]:
    """Another worker in the middle of a write to the session: it holds the session's row."""
    import psycopg

    with psycopg.connect(pg.dsn) as connection:
        connection.execute(
            f"SELECT 1 FROM {pg.sessions} WHERE session_id = %s FOR UPDATE",  # type: ignore[arg-type]
            (session_id,),
        )
        yield
        connection.rollback()


def test_a_session_locked_by_a_writer_says_so_within_a_second(pg: PgStore) -> None:
    pg.write({"s": [call("c1"), call("c1")], "t": [user("x")]})
    before = pg.rows("s")
    with session_locked(pg, "s"):
        assert report_json(*pg.args)[0] == 1, "checking is never blocked by writers"
        started = time.monotonic()
        code, out, err = run_cli(*pg.args, "--fix", "--json")
        elapsed = time.monotonic() - started
    assert code == 3
    assert elapsed < 1.0
    assert "locked by another process" in err
    assert json.loads(out)["locked"] is True
    assert pg.rows("s") == before


def test_the_wrong_tables_are_not_a_store(pg: PgStore) -> None:
    code, _, err = run_cli("--dsn", pg.dsn, "--messages-table", unique("none"))
    assert code == 2
    assert "not a session store" in err


def test_a_dsn_password_is_never_shown() -> None:
    require_psycopg()
    dsn = "postgresql://someone:sekrit-pass@127.0.0.1:1/nowhere?connect_timeout=2"
    code, out, err = run_cli("--dsn", dsn, "--json")
    assert code == 2
    assert "sekrit-pass" not in out + err
    assert json.loads(out)["path"] == "someone@127.0.0.1:1/nowhere"


def test_a_path_and_a_dsn_are_one_too_many(tmp_path: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(str(tmp_path / "x.db"), "--dsn", "postgresql:///x")
    assert exited.value.code == 2
