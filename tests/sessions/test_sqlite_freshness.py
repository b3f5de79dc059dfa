"""histcore's SQLiteSession under changes its row count cannot see, checked by the SQLite
freshness rule it shares with the drop-in's reads (``sessions/_sqlite_freshness``): the
file replaced at its path, an id handed out again, the table rebuilt. Each read is
compared with a fresh session's read of the file."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from histcore.sessions import SQLiteSession
from histcore.sessions._sqlite_store import SQLiteStore


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def users(*names: str) -> list[dict[str, Any]]:
    return [user(name) for name in names]


def row(text: str) -> str:
    return f'{{"role":"user","content":"{text}"}}'


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def other(db: Path) -> Iterator[sqlite3.Connection]:
    """Another program's connection to the file (made once the session made it)."""
    connections: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        connections.append(sqlite3.connect(db, isolation_level=None))
        return connections[-1]

    yield connect  # type: ignore[misc]
    for connection in connections:
        connection.close()


async def fresh_read(path: Path, limit: int | None = None) -> list[Any]:
    with SQLiteSession("s", path) as session:
        return await session.get_items(limit)


async def filled(path: Path, *names: str) -> None:
    with SQLiteSession("s", path) as session:
        await session.add_items(users(*names))


@pytest.mark.parametrize("how", ["replace", "remove_and_create"])
async def test_a_file_replaced_at_the_path_is_read_whole_and_written(
    db: Path, tmp_path: Path, how: str
) -> None:
    # As many rows as the session holds, and the same newest row: only the file tells.
    await filled(db, "a", "b", "c")
    with SQLiteSession("s", db) as session:
        assert await session.get_items() == users("a", "b", "c")
        if how == "replace":
            await filled(tmp_path / "new.db", "x", "y", "c")
            os.replace(tmp_path / "new.db", db)
        else:
            os.remove(db)
            await filled(db, "x", "y", "c")
        assert await session.get_items() == users("x", "y", "c")
        await session.add_items(users("w"))
        assert await session.get_items() == users("x", "y", "c", "w")
    assert await fresh_read(db) == users("x", "y", "c", "w")


@pytest.mark.parametrize("limit", [None, 2])
async def test_an_id_handed_out_again_is_seen(db: Path, other: Any, limit: int | None) -> None:
    # The newest row deleted and the sequence set back: the next insert gets its id, and
    # the count up to the last id read is what it was.
    await filled(db, "a", "b", "c")
    with SQLiteSession("s", db) as session:
        assert await session.get_items(limit) == users("a", "b", "c")[-(limit or 3) :]
        conn = other()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM agent_messages WHERE id = 3")
        conn.execute("UPDATE sqlite_sequence SET seq = 2 WHERE name = 'agent_messages'")
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)", (row("z"),)
        )
        conn.execute("COMMIT")
        assert await session.get_items(limit) == await fresh_read(db, limit)
        assert await session.get_items() == users("a", "b", "z")


def rebuild(conn: sqlite3.Connection, autoincrement: bool, change: tuple[int, str]) -> None:
    """Make the messages table again, as a migration would (new table, rows copied, old
    one dropped), with row ``change[0]``'s text set to ``change[1]``."""
    key = "INTEGER PRIMARY KEY AUTOINCREMENT" if autoincrement else "INTEGER PRIMARY KEY"
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        f"CREATE TABLE new_messages (id {key}, session_id TEXT NOT NULL, "
        "message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
    )
    conn.execute(
        "INSERT INTO new_messages SELECT id, session_id, "
        "CASE WHEN id = ? THEN ? ELSE message_data END, created_at FROM agent_messages",
        change,
    )
    conn.execute("DROP TABLE agent_messages")
    conn.execute("ALTER TABLE new_messages RENAME TO agent_messages")
    conn.execute("CREATE INDEX idx_agent_messages_session_id ON agent_messages (session_id, id)")
    conn.execute("COMMIT")


async def test_a_rebuilt_table_is_read_whole(db: Path, other: Any) -> None:
    # Same count, same newest row, same rewrite generation: only the schema tells.
    await filled(db, "a", "b", "c")
    with SQLiteSession("s", db) as session:
        assert await session.get_items() == users("a", "b", "c")
        rebuild(other(), autoincrement=True, change=(2, row("B")))
        assert await session.get_items() == users("a", "B", "c")


async def test_a_table_rebuilt_without_autoincrement_is_no_longer_cached(
    db: Path, other: Any
) -> None:
    # Ids may now be handed out again: the two newest rows deleted and two inserted get
    # their ids, and the newest holds the same text as before.
    await filled(db, "a", "b", "c")
    with SQLiteSession("s", db) as session:
        assert await session.get_items() == users("a", "b", "c")
        conn = other()
        rebuild(conn, autoincrement=False, change=(1, row("a")))
        assert await session.get_items() == users("a", "b", "c")
        conn.execute("DELETE FROM agent_messages WHERE id >= 2")
        conn.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            [(row("q"),), (row("c"),)],
        )
        assert await session.get_items() == users("a", "q", "c")


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the caches a store builds from nothing (a read of the whole history)."""
    calls: list[int] = []
    real = SQLiteStore._empty_cache

    def counted(self: SQLiteStore, version: int) -> Any:
        calls.append(version)
        return real(self, version)

    monkeypatch.setattr(SQLiteStore, "_empty_cache", counted)
    return calls


async def test_own_writes_keep_the_cache_current_for_the_check(
    db: Path, other: Any, whole_reads: list[int]
) -> None:
    # After each write through the session, another program's append is fetched alone:
    # the newest row the cache checks against is the one the write left.
    await filled(db, "a")
    with SQLiteSession("s", db) as session:
        assert await session.get_items() == users("a")
        conn = other()
        expected = ["a"]

        async def then_another_appends(tag: str) -> None:
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                (row(tag),),
            )
            expected.append(tag)
            assert await session.get_items() == users(*expected)

        await session.add_items(users("b", "c"))
        expected += ["b", "c"]
        await then_another_appends("o1")
        assert await session.pop_item() == user("o1")
        expected.pop()
        await then_another_appends("o2")
        items = await session.get_items()
        revision = await session.revision()
        assert await session.replace_suffix(len(items) - 1, users("r"), expected_revision=revision)
        expected[-1] = "r"
        await then_another_appends("o3")
        revision = await session.revision()
        assert await session.replace_suffix(len(expected) - 1, [], expected_revision=revision)
        expected.pop()
        await then_another_appends("o4")
        await session.clear_session()
        expected.clear()
        await then_another_appends("o5")
    assert len(whole_reads) == 1
