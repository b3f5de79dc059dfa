"""SQLiteSession specifics: file setup, incremental reads, corrupt rows, lifetime."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import histcore
from histcore.exceptions import SessionError
from histcore.sessions import SessionSettings, SQLiteSession
from histcore.sessions._sqlite_schema import insert_batch_size
from tests.support.sqlite import no_file_left_open, write_junk


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


_raw_connections: list[sqlite3.Connection] = []


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection, standing in for another program using the same file; closed
    when the test ends."""
    connection = sqlite3.connect(path, isolation_level=None)
    _raw_connections.append(connection)
    return connection


@pytest.fixture(autouse=True)
def _close_raw_connections() -> Iterator[None]:
    yield
    while _raw_connections:
        _raw_connections.pop().close()


def child_env() -> dict[str, str]:
    """Environment for a child Python that imports this very histcore."""
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


# --- the file ----------------------------------------------------------------------------


async def test_file_is_in_wal_mode_with_the_sdk_schema(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        await session.get_items()  # the first operation opens the file
    conn = raw(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    assert set(tables) >= {"agent_sessions", "agent_messages"}
    assert "AUTOINCREMENT" in tables["agent_messages"]
    columns = [row[1] for row in conn.execute("PRAGMA table_info(agent_messages)")]
    assert columns == ["id", "session_id", "message_data", "created_at"]
    indexes = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")]
    assert "idx_agent_messages_session_id" in indexes


async def test_rows_are_json_text_with_timestamps(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        await session.add_items([user("é 😀")])
    row = (
        raw(db)
        .execute(
            "SELECT typeof(message_data), json_extract(message_data, '$.content'), created_at, "
            "(SELECT updated_at FROM agent_sessions WHERE session_id = 's') FROM agent_messages"
        )
        .fetchone()
    )
    assert row[0] == "text"
    assert row[1] == "é 😀"
    assert row[2]
    assert row[3]


async def test_custom_table_names(db: Path) -> None:
    with SQLiteSession("s", db, "my_sessions", "my_messages") as session:
        await session.add_items([user("a")])
        assert await session.get_items() == [user("a")]
    names = {row[0] for row in raw(db).execute("SELECT name FROM sqlite_master")}
    assert {"my_sessions", "my_messages"} <= names
    assert "agent_messages" not in names


def test_table_names_must_be_identifiers(db: Path) -> None:
    with pytest.raises(ValueError, match="messages_table must be a plain SQL identifier"):
        SQLiteSession("s", db, messages_table="x; DROP TABLE y")
    with pytest.raises(ValueError, match="sessions_table must be a plain SQL identifier"):
        SQLiteSession("s", db, sessions_table="")


async def test_a_foreign_table_is_refused(db: Path) -> None:
    raw(db).execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, body TEXT)")
    with SQLiteSession("s", db) as session:
        with pytest.raises(SessionError, match=r"lacks column.*message_data"):
            await session.get_items()
        with pytest.raises(SessionError, match=r"lacks column.*message_data"):
            await session.add_items([user("a")])


async def test_bad_settings_are_refused(db: Path) -> None:
    with pytest.raises(ValueError, match="busy_timeout must be >= 0"):
        SQLiteSession("s", db, busy_timeout=-1)
    with pytest.raises(TypeError, match="db_path must be a str or a path, not int"):
        SQLiteSession("s", 3)  # type: ignore[arg-type]
    missing = SQLiteSession("s", db.parent / "missing" / "dir" / "x.db")
    with pytest.raises(SessionError, match="cannot open SQLite session store"):
        await missing.get_items()


async def test_a_file_that_is_not_a_database_is_refused_and_closed(db: Path) -> None:
    write_junk(db)
    with no_file_left_open():
        session = SQLiteSession("s", db)
        with pytest.raises(SessionError, match="file is not a database"):
            await session.get_items()
        session.close()


async def test_sessions_share_a_file_without_mixing(db: Path) -> None:
    with SQLiteSession("a", db) as first, SQLiteSession("b", db) as second:
        await first.add_items([user("a1")])
        await second.add_items([user("b1")])
        await first.add_items([user("a2")])
        assert texts(await first.get_items()) == ["a1", "a2"]
        assert texts(await second.get_items()) == ["b1"]
        await second.clear_session()
        assert texts(await first.get_items()) == ["a1", "a2"]


# --- incremental history ------------------------------------------------------------------


async def test_reader_sees_appends_pops_and_clears_of_another_connection(db: Path) -> None:
    with SQLiteSession("s", db) as reader, SQLiteSession("s", db) as writer:
        await writer.add_items([user("1"), user("2")])
        assert texts(await reader.get_items()) == ["1", "2"]
        await writer.add_items([user("3")])
        assert texts(await reader.get_items()) == ["1", "2", "3"]
        assert await writer.pop_item() == user("3")
        assert texts(await reader.get_items()) == ["1", "2"]
        await writer.add_items([user("4")])
        await writer.pop_item()
        await writer.pop_item()
        await writer.add_items([user("5")])
        assert texts(await reader.get_items()) == ["1", "5"]
        await writer.clear_session()
        assert await reader.get_items() == []
        await writer.add_items([user("6")])
        assert texts(await reader.get_items()) == ["6"]


async def test_reader_sees_any_change_of_a_plain_connection(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        await session.add_items([user(str(index)) for index in range(6)])
        assert len(await session.get_items()) == 6
        other = raw(db)
        other.execute("DELETE FROM agent_messages WHERE message_data LIKE '%\"2\"%'")
        assert texts(await session.get_items()) == ["0", "1", "3", "4", "5"]
        other.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            ('{"role":"user","content":"6"}',),
        )
        assert texts(await session.get_items()) == ["0", "1", "3", "4", "5", "6"]
        other.execute("DELETE FROM agent_messages WHERE id <= 2")
        assert texts(await session.get_items()) == ["3", "4", "5", "6"]


async def test_own_writes_interleaved_with_another_writer(db: Path) -> None:
    with SQLiteSession("s", db) as mine, SQLiteSession("s", db) as theirs:
        await mine.add_items([user("m1")])
        assert texts(await mine.get_items()) == ["m1"]
        await theirs.add_items([user("t1")])
        await mine.add_items([user("m2")])  # its cache is stale: must not skip t1
        await theirs.add_items([user("t2")])
        assert await mine.pop_item() == user("t2")
        await mine.add_items([user("m3")])
        assert texts(await mine.get_items()) == ["m1", "t1", "m2", "m3"]
        assert await mine.get_items() == await theirs.get_items()


async def test_another_process_appending_is_seen(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        await session.add_items([user("here")])
        assert len(await session.get_items()) == 1
        script = (
            "import asyncio, sys\n"
            "from histcore.sessions import SQLiteSession\n"
            "async def main():\n"
            "    with SQLiteSession('s', sys.argv[1]) as s:\n"
            "        await s.add_items([{'role': 'user', 'content': 'there'}])\n"
            "        await s.pop_item()\n"
            "        await s.add_items([{'role': 'user', 'content': 'again'}])\n"
            "asyncio.run(main())\n"
        )
        subprocess.run([sys.executable, "-c", script, str(db)], check=True, env=child_env())
        assert texts(await session.get_items()) == ["here", "again"]


async def test_limited_reads_fetch_only_what_they_need_then_extend(db: Path) -> None:
    items = [user(str(index)) for index in range(200)]
    with SQLiteSession("s", db) as writer:
        await writer.add_items(items)
    with SQLiteSession("s", db) as session:
        assert await session.get_items(5) == items[-5:]
        assert await session.get_items(50) == items[-50:]
        assert await session.get_items(3) == items[-3:]
        assert await session.get_items() == items
        assert await session.get_items(0) == []


async def test_limited_reads_with_another_writer(db: Path) -> None:
    with SQLiteSession("s", db) as session, SQLiteSession("s", db) as writer:
        await writer.add_items([user(str(index)) for index in range(30)])
        assert texts(await session.get_items(2)) == ["28", "29"]
        await writer.pop_item()
        await writer.add_items([user("new")])
        assert texts(await session.get_items(3)) == ["27", "28", "new"]
        raw(db).execute("DELETE FROM agent_messages WHERE id = 29")  # holds "28"
        assert texts(await session.get_items(3)) == ["26", "27", "new"]
        assert len(await session.get_items()) == 29


async def test_session_settings_limit(db: Path) -> None:
    settings = SessionSettings(limit=2)
    with SQLiteSession("s", db, session_settings=settings) as session:
        await session.add_items([user("a"), user("b"), user("c")])
        assert texts(await session.get_items()) == ["b", "c"]


@pytest.mark.parametrize("cache_history", [True, False])
async def test_results_do_not_depend_on_caching(db: Path, cache_history: bool) -> None:
    with SQLiteSession("s", db, cache_history=cache_history) as session:
        await session.add_items([user("a"), user("b")])
        first = await session.get_items()
        first[0]["content"] = "changed"
        assert texts(await session.get_items()) == ["a", "b"]
        assert await session.pop_item() == user("b")
        assert texts(await session.get_items(5)) == ["a"]


async def test_table_without_autoincrement_is_read_without_a_cache(db: Path) -> None:
    # An old layout that reuses the id of a popped row: a cache keyed on ids would
    # serve the old content, so the session reads afresh each time.
    conn = raw(db)
    conn.execute(
        "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, "
        "message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
    )
    with SQLiteSession("s", db) as session, SQLiteSession("s", db) as other:
        await session.add_items([user("a"), user("b")])
        assert texts(await session.get_items()) == ["a", "b"]
        await other.pop_item()
        await other.add_items([user("c")])  # gets the id "b" had
        assert texts(await session.get_items()) == ["a", "c"]


async def test_add_items_binds_without_warnings(db: Path) -> None:
    # Python 3.12.0-3.12.3 warn on numbered placeholders bound from a sequence.
    with SQLiteSession("s", db) as session, warnings.catch_warnings():
        warnings.simplefilter("error")
        await session.add_items([user(str(index)) for index in range(300)])
        assert texts(await session.get_items()) == [str(index) for index in range(300)]


async def test_batches_split_under_a_low_variable_limit(db: Path) -> None:
    """A SQLite built with few variables per statement gets smaller INSERTs, in order."""
    with SQLiteSession("s", db) as session:
        await session.get_items()  # opens the connection
        store = session._store
        if hasattr(store._conn, "setlimit"):  # Python 3.11+
            store._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 7)
            assert insert_batch_size(store._conn) == 3  # a session id and a text per row
        else:  # SQLite's compiled-in default before 3.32 is assumed: 999 variables
            assert insert_batch_size(store._conn) == 499
        store._rows_per_insert = 3
        batch = [user(str(index)) for index in range(1000)]
        await session.add_items(batch)
        await session.add_items([user("last")])
    with SQLiteSession("s", db) as reader:
        assert await reader.get_items() == [*batch, user("last")]


async def test_large_batch_is_checkpointed_after_the_write(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        batch = [user(f"{index} " + "x" * 1000) for index in range(5000)]  # ~5 MB of JSON
        await session.add_items(batch)
        for _ in range(500):
            if not session._checkpoints:
                break
            await asyncio.sleep(0.01)
        # The rows reached the database file itself, not only the WAL ...
        assert db.stat().st_size > 5_000_000
        # ... and automatic checkpoints are back on for later commits.
        assert session._store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert await session.get_items() == batch
        await session.add_items([user("small")])
        assert (await session.get_items(1)) == [user("small")]


# --- corrupt rows ----------------------------------------------------------------------


async def test_corrupt_rows_are_skipped_logged_and_reported(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SQLiteSession("s", db) as session:
        await session.add_items([user("a")])
        conn = raw(db)
        for data in ("not json", '{"role": "user", "content": "b"}', "{broken", ""):
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)", (data,)
            )
        await session.add_items([user("c")])
        with caplog.at_level(logging.WARNING, logger="histcore.sessions"):
            assert texts(await session.get_items()) == ["a", "b", "c"]
            assert texts(await session.get_items()) == ["a", "b", "c"]
        assert session.skipped_row_ids == (2, 4, 5)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 3  # each bad row is reported once
        assert "skipped row 2 of agent_messages" in warnings[0]
        # A limit counts good items only.
        with SQLiteSession("s", db) as fresh:
            assert texts(await fresh.get_items(2)) == ["b", "c"]
            assert texts(await fresh.get_items(3)) == ["a", "b", "c"]


async def test_pop_skips_corrupt_rows(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        await session.add_items([user("a")])
        raw(db).execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', 'garbage')"
        )
        assert texts(await session.get_items()) == ["a"]
        assert await session.pop_item() == user("a")
        assert await session.get_items() == []
        assert await session.pop_item() is None


async def test_non_text_message_data_is_corrupt_not_fatal(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        assert await session.get_items() == []  # makes the tables
        conn = raw(db)
        conn.execute("INSERT INTO agent_sessions (session_id) VALUES ('s')")
        conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('s', 42)")
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (b'{"role": "user", "content": "blob"}',),
        )
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (b"\xff\xfe",),
        )
        got = await session.get_items()
        # 42 is valid JSON but not an item (a number); bytes holding JSON are JSON;
        # invalid UTF-8 is not.
        assert got == [user("blob")]
        assert session.skipped_row_ids == (1, 3)


# --- lifetime and threads -------------------------------------------------------------------


def open_files_of(path: Path) -> int:
    fd_dir = Path("/proc/self/fd")
    count = 0
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(path)):
            count += 1
    return count


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_no_connection_or_thread_leaks_across_event_loops(db: Path) -> None:
    session = SQLiteSession("s", db)
    threads_before = threading.active_count()

    async def one_turn(index: int) -> int:
        await session.add_items([user(str(index))])
        return len(await session.get_items())

    files_after_first = None
    for index in range(40):
        assert asyncio.run(one_turn(index)) == index + 1
        if files_after_first is None:
            files_after_first = open_files_of(db)
    assert open_files_of(db) == files_after_first
    assert files_after_first is not None
    assert files_after_first <= 3
    assert threading.active_count() == threads_before
    session.close()
    assert open_files_of(db) == 0


async def test_async_context_manager_closes(db: Path) -> None:
    async with SQLiteSession("s", db) as session:
        await session.add_items([user("a")])
    with pytest.raises(SessionError, match="closed"):
        await session.get_items()


async def test_cancelled_add_items_still_completes(db: Path) -> None:
    with SQLiteSession("s", db) as session:
        batch = [user(str(index)) for index in range(20000)]
        task = asyncio.create_task(session.add_items(batch))
        await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The write was in flight or done: it finished whole, never half.
        assert len(await session.get_items()) in (0, len(batch))


async def test_concurrent_tasks_on_one_session(db: Path) -> None:
    with SQLiteSession("s", db) as session:

        async def writer(name: str) -> None:
            for index in range(20):
                await session.add_items([user(f"{name}{index}")])
                await session.get_items(3)

        await asyncio.gather(*(writer(name) for name in "abcd"))
        stored = texts(await session.get_items())
        assert len(stored) == 80
        for name in "abcd":
            assert [s for s in stored if s[0] == name] == [f"{name}{i}" for i in range(20)]
