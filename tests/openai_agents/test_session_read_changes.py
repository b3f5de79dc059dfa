"""The installed ``SQLiteSession.get_items`` after changes its count and ids cannot see:
the database file replaced by another store, and rows changed in place below the last
id read. Each read is compared with the SDK's own ``get_items`` on the file."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import SQLiteSession as SDKSQLiteSession

import histcore.openai_agents as accelerator
from histcore.openai_agents._session_read import CHECK_ROWS_VARIABLE
from histcore.sessions import _sqlite_freshness
from tests.support.session_read import decode_calls

# Sessions hold any JSON value here, not only the SDK's typed input items.
SQLiteSession: Any = SDKSQLiteSession
PLAIN_GET_ITEMS = SDKSQLiteSession.get_items


@pytest.fixture(autouse=True)
def uninstalled() -> Iterator[None]:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


def texts(prefix: str, count: int) -> list[Any]:
    return [{"type": "message", "text": f"{prefix}{n}"} for n in range(count)]


def fresh_store(path: str, items: list[Any]) -> None:
    """A new SDK store at ``path`` holding ``items`` for session ``s``, closed."""

    async def fill() -> None:
        session = SQLiteSession("s", path)
        try:
            await session.add_items(items)
        finally:
            session.close()

    asyncio.run(fill())


def sdk_read(path: str) -> list[Any]:
    """What the SDK's own ``get_items`` reads from ``path`` now."""

    async def read() -> list[Any]:
        session = SQLiteSession("s", path)
        try:
            return list(await PLAIN_GET_ITEMS(session))
        finally:
            session.close()

    return asyncio.run(read())


def replace_by_rename(path: str, items: list[Any]) -> None:
    other = path + ".new"
    fresh_store(other, items)
    os.replace(other, path)


def remove_and_create(path: str, items: list[Any]) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    fresh_store(path, items)


@pytest.mark.parametrize("replace", [replace_by_rename, remove_and_create], ids=["rename", "rm"])
def test_a_replaced_file_is_read_whole(tmp_path: Any, replace: Callable[..., None]) -> None:
    # Two fresh SDK stores have the same name, schema_version and (for the rows the
    # first read saw) row count: only the file itself tells them apart.
    path = str(tmp_path / "store.db")
    fresh_store(path, texts("old", 3))
    with accelerator.installed():
        session = SQLiteSession("s", path)
        try:
            # asyncio.run per call: each read runs on a new connection of the session.
            assert asyncio.run(session.get_items()) == texts("old", 3)
            replace(path, texts("new", 5))
            got = asyncio.run(session.get_items())
        finally:
            session.close()
    assert got == sdk_read(path) == texts("new", 5)


def test_a_replaced_file_is_read_whole_when_its_newest_row_matches(tmp_path: Any) -> None:
    # Only the file's identity tells: the row at the last id read is the same in both.
    path = str(tmp_path / "store.db")
    old = texts("old", 3)
    new = [*texts("new", 2), old[2], *texts("newer", 2)]
    fresh_store(path, old)
    with accelerator.installed():
        session = SQLiteSession("s", path)
        try:
            assert asyncio.run(session.get_items()) == old
            replace_by_rename(path, new)
            got = asyncio.run(session.get_items())
        finally:
            session.close()
    assert got == sdk_read(path) == new


def raw(path: str) -> Any:
    return closing(sqlite3.connect(path))


def text(tag: str) -> str:
    return json.dumps({"type": "message", "text": tag})


def update_in_place(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE agent_messages SET message_data = ? WHERE id = 2", (text("edited"),))


def insert_or_replace(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO agent_messages (id, session_id, message_data) VALUES (2, 's', ?)",
        (text("replaced"),),
    )


def exchange_ids(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE agent_messages SET id = -1 WHERE id = 2")
    conn.execute("UPDATE agent_messages SET id = 2 WHERE id = 3")
    conn.execute("UPDATE agent_messages SET id = 3 WHERE id = -1")


def reuse_last_id(conn: sqlite3.Connection) -> None:
    (last,) = conn.execute("SELECT MAX(id) FROM agent_messages").fetchone()
    conn.execute("DELETE FROM agent_messages WHERE id = ?", (last,))
    conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'agent_messages'", (last - 1,))
    cursor = conn.execute(
        "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
        (text("reused"),),
    )
    assert cursor.lastrowid == last  # the same id, other content


ANYWHERE = [update_in_place, insert_or_replace, exchange_ids]


def read_around(
    path: str, change: Callable[[sqlite3.Connection], None], how: str
) -> tuple[list[Any], list[Any], list[Any]]:
    """A session's read, then ``change``, then its next read, and the SDK's read then.
    ``how``: "thread": both reads on one worker thread's connection, the change made on
    another connection; "asyncio-run": the next read on a new connection (the first
    loop's worker is gone); "memory": an in-memory database, changed on its connection."""

    async def in_memory() -> tuple[list[Any], list[Any], list[Any]]:
        session = SQLiteSession("s")
        try:
            await session.add_items(texts("row", 5))
            first = list(await session.get_items())
            with session._shared_connection as conn:
                change(conn)
            return first, list(await session.get_items()), list(await PLAIN_GET_ITEMS(session))
        finally:
            session.close()

    async def on_one_thread(session: Any) -> tuple[list[Any], list[Any]]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        first = list(await session.get_items())
        with raw(path) as conn, conn:
            change(conn)
        return first, list(await session.get_items())

    if how == "memory":
        return asyncio.run(in_memory())
    fresh_store(path, texts("row", 5))
    session = SQLiteSession("s", path)
    try:
        if how == "thread":
            first, got = asyncio.run(on_one_thread(session))
        else:
            first = list(asyncio.run(session.get_items()))
            with raw(path) as conn, conn:
                change(conn)
            got = list(asyncio.run(session.get_items()))
    finally:
        session.close()
    return first, got, sdk_read(path)


HOW = ["thread", "asyncio-run", "memory"]


@pytest.mark.parametrize("change", ANYWHERE, ids=["update", "insert-or-replace", "exchange-ids"])
@pytest.mark.parametrize("how", HOW)
def test_rows_changed_in_place_are_seen_when_every_row_is_checked(
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[sqlite3.Connection], None],
    how: str,
) -> None:
    monkeypatch.setenv(CHECK_ROWS_VARIABLE, "1")
    with accelerator.installed():
        first, got, expected = read_around(str(tmp_path / "store.db"), change, how)
    assert first == texts("row", 5)
    assert expected != first  # a change the SDK's read sees
    assert got == expected


@pytest.mark.parametrize("check", ["0", "1"], ids=["default", "every-row"])
@pytest.mark.parametrize("how", HOW)
def test_a_reused_id_is_seen(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, check: str, how: str
) -> None:
    # The id comes back only as the table's newest: the newest row kept is checked.
    monkeypatch.setenv(CHECK_ROWS_VARIABLE, check)
    with accelerator.installed():
        first, got, expected = read_around(str(tmp_path / "store.db"), reuse_last_id, how)
    assert first == texts("row", 5)
    assert expected == [*texts("row", 4), json.loads(text("reused"))]
    assert got == expected


def test_a_replacement_with_the_same_inode_is_seen(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file made after the old one's last descriptor closed may get its inode number:
    # the newest row kept no longer matches.
    monkeypatch.setattr(_sqlite_freshness, "file_identity", lambda name: (1, 1))
    test_a_replaced_file_is_read_whole(tmp_path, remove_and_create)


@pytest.mark.parametrize("check", ["0", "1"], ids=["default", "every-row"])
def test_only_new_rows_are_decoded(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, check: str
) -> None:
    monkeypatch.setenv(CHECK_ROWS_VARIABLE, check)
    path = str(tmp_path / "store.db")
    fresh_store(path, texts("row", 5))
    calls = decode_calls(monkeypatch)

    async def scenario() -> list[Any]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        session = SQLiteSession("s", path)
        try:
            await session.get_items()
            with raw(path) as conn, conn:
                conn.executemany(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                    [(text("more"),), (text("more"),)],
                )
            return list(await session.get_items())
        finally:
            session.close()

    with accelerator.installed():
        assert asyncio.run(scenario()) == sdk_read(path)
    assert calls == [5, 2]


def test_a_bad_check_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECK_ROWS_VARIABLE, "yes")
    with pytest.raises(ValueError, match=f"{CHECK_ROWS_VARIABLE} must be 1 .* got 'yes'"):
        accelerator.install()
    assert not accelerator.is_installed()
