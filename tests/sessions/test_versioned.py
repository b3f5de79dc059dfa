"""The versioned text stores (memory, SQLite, PostgreSQL): exact round trips, versions
that never repeat, optimistic concurrency, and their own (session-layer) errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from histcore.exceptions import SessionError
from histcore.sessions.versioned import (
    MemoryTextStore,
    StoredText,
    TextConflictError,
    TextStoreClosedError,
    TextStoreError,
    VersionedTextStore,
)
from histcore.sessions.versioned_sqlite import SQLiteTextStore
from tests.support.pg import BACKENDS, pg_execute, require_pg, require_psycopg, unique
from tests.support.sqlite import no_file_left_open, write_junk


@pytest.fixture(params=BACKENDS)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[VersionedTextStore]:
    if request.param == "memory":
        yield MemoryTextStore()
        return
    if request.param == "sqlite":
        sqlite = SQLiteTextStore(tmp_path / "texts.db", table="texts")
        yield sqlite
        sqlite.close()
        return
    from histcore.sessions.postgres import close_pools
    from histcore.sessions.versioned_postgres import PostgresTextStore

    table = unique("texts")
    yield PostgresTextStore(table, dsn=require_pg().dsn)
    await close_pools()
    await pg_execute(f"DROP TABLE IF EXISTS {table}, {table}_versions")


async def test_a_written_text_reads_back_exactly_with_its_version(
    store: VersionedTextStore,
) -> None:
    text = '{"a": "é ü 🎉", "b": [1, 2.5, null]}\n  '
    assert await store.read("k") is None
    assert await store.version("k") == 0
    assert await store.write("k", text) == 1
    assert await store.read("k") == StoredText(1, text)
    assert await store.write("k", "second", expected_version=1) == 2
    assert await store.read("k") == StoredText(2, "second")
    assert await store.version("k") == 2


async def test_a_stale_write_is_a_conflict_and_keeps_the_newer_text(
    store: VersionedTextStore,
) -> None:
    await store.write("k", "one")
    assert await store.write("k", "two", expected_version=1) == 2
    with pytest.raises(TextConflictError) as info:
        await store.write("k", "three", expected_version=1)
    error = info.value
    assert (error.key, error.expected_version, error.current_version) == ("k", 1, 2)
    assert error.operation == "write"
    assert isinstance(error, TextStoreError)
    assert isinstance(error, SessionError)
    with pytest.raises(TextConflictError, match="based on a new key"):
        await store.write("k", "three")
    assert await store.read("k") == StoredText(2, "two")


async def test_versions_go_on_after_a_delete(store: VersionedTextStore) -> None:
    assert await store.write("k", "one") == 1
    with pytest.raises(TextConflictError) as info:
        await store.delete("k", expected_version=5)
    assert info.value.operation == "delete"
    assert await store.delete("k", expected_version=1) is True
    assert await store.delete("k") is False
    assert await store.read("k") is None
    with pytest.raises(TextConflictError, match="holds nothing"):
        await store.write("k", "stale", expected_version=1)
    assert await store.write("k", "again") == 2
    assert await store.delete("k") is True
    assert await store.write("k", "once more") == 3
    assert await store.write("other", "x") == 1


async def test_racing_writers_of_one_version_have_exactly_one_winner(
    store: VersionedTextStore,
) -> None:
    await store.write("k", "base")

    async def attempt(text: str) -> bool:
        try:
            await store.write("k", text, expected_version=1)
        except TextConflictError:
            return False
        return True

    texts = [f"writer {n}" for n in range(8)]
    outcomes = await asyncio.gather(*(attempt(text) for text in texts))
    assert outcomes.count(True) == 1
    assert await store.read("k") == StoredText(2, texts[outcomes.index(True)])


async def test_racing_deletes_and_first_writes_never_issue_a_version_twice(
    store: VersionedTextStore,
) -> None:
    issued: list[int] = []

    async def writer() -> None:
        for _ in range(15):
            try:
                issued.append(await store.write("k", "text"))
            except TextConflictError:
                pass
            await asyncio.sleep(0)

    async def deleter() -> None:
        for _ in range(15):
            await store.delete("k")
            await asyncio.sleep(0)

    await asyncio.gather(writer(), writer(), deleter(), deleter())
    assert issued
    assert len(issued) == len(set(issued)), issued


async def test_bad_arguments_are_named_and_nothing_is_written(store: VersionedTextStore) -> None:
    calls: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: store.write(7, "t"), TypeError, "key must be a str"),  # type: ignore[arg-type]
        (lambda: store.write("", "t"), ValueError, "key must be a non-empty str"),
        (lambda: store.write("k", b"t"), TypeError, "text must be a str"),  # type: ignore[arg-type]
        (lambda: store.write("k", "t", expected_version=-1), ValueError, "expected_version"),
        (lambda: store.write("k", "t", expected_version=True), TypeError, "expected_version"),
        (lambda: store.delete("k", expected_version=1.0), TypeError, "expected_version"),  # type: ignore[arg-type]
        (lambda: store.read(None), TypeError, "key must be a str"),  # type: ignore[arg-type]
    ]
    for call, error, message in calls:
        with pytest.raises(error, match=message):
            await call()  # type: ignore[misc]
    assert await store.version("k") == 0


# --- SQLite -------------------------------------------------------------------------------


def test_a_closed_sqlite_store_refuses_to_work(tmp_path: Path) -> None:
    store = SQLiteTextStore(tmp_path / "texts.db", table="texts")
    store.close()
    store.close()
    with pytest.raises(TextStoreClosedError, match=r"SQLiteTextStore\(.*\) is closed") as info:
        asyncio.run(store.version("k"))
    assert info.value.operation == "read"


def test_a_file_that_is_not_a_database_is_refused_and_closed(tmp_path: Path) -> None:
    write_junk(tmp_path / "texts.db")
    with no_file_left_open(), pytest.raises(TextStoreError, match="not a database") as info:
        SQLiteTextStore(tmp_path / "texts.db", table="texts")
    assert info.value.operation == "open"
    assert "not a database" in info.value.reason


def test_sqlite_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="db_path must be a str or a path"):
        SQLiteTextStore(3, table="texts")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="table must be a plain SQL identifier"):
        SQLiteTextStore(tmp_path / "t.db", table="texts; DROP")
    with pytest.raises(ValueError, match="busy_timeout must be >= 0"):
        SQLiteTextStore(tmp_path / "t.db", table="texts", busy_timeout=-1)


def test_two_sqlite_stores_on_one_file_share_its_texts(tmp_path: Path) -> None:
    async def use() -> None:
        first = SQLiteTextStore(tmp_path / "texts.db", table="texts")
        second = SQLiteTextStore(tmp_path / "texts.db", table="texts")
        try:
            assert await first.write("k", "one") == 1
            assert await second.read("k") == StoredText(1, "one")
            assert await second.write("k", "two", expected_version=1) == 2
            with pytest.raises(TextConflictError):
                await first.write("k", "three", expected_version=1)
        finally:
            first.close()
            second.close()

    asyncio.run(use())


# --- PostgreSQL ---------------------------------------------------------------------------


async def test_an_unreachable_server_is_a_one_line_text_store_error() -> None:
    require_psycopg()
    from histcore.sessions.versioned_postgres import PostgresTextStore

    store = PostgresTextStore("texts", dsn="postgresql://someone:s3cret@127.0.0.1:1/nowhere")
    assert store.connect_timeout == 5.0
    assert repr(store) == "PostgresTextStore('someone@127.0.0.1:1/nowhere', table='texts')"
    with pytest.raises(TextStoreError, match="cannot connect to PostgreSQL at someone@") as info:
        await store.version("k")
    assert info.value.operation == "read"
    assert "\n" not in str(info.value)
    assert "s3cret" not in str(info.value)


def test_postgres_arguments_are_checked() -> None:
    require_psycopg()
    from histcore.sessions.versioned_postgres import PostgresTextStore

    with pytest.raises(TypeError, match="PostgresTextStore needs exactly one of dsn= and pool="):
        PostgresTextStore("texts")
    with pytest.raises(TypeError, match="dsn must be a non-empty str"):
        PostgresTextStore("texts", dsn="")
    with pytest.raises(ValueError, match="table must be a plain SQL identifier"):
        PostgresTextStore("1texts", dsn="postgresql://x@127.0.0.1:1/y")


async def test_a_postgres_table_of_another_layout_is_refused() -> None:
    server = require_pg()
    from histcore.sessions.postgres import close_pools
    from histcore.sessions.versioned_postgres import PostgresTextStore

    table = unique("texts")
    await pg_execute(f"CREATE TABLE {table} (state_key TEXT PRIMARY KEY, body TEXT)")
    try:
        store = PostgresTextStore(table, dsn=server.dsn)
        with pytest.raises(TextStoreError, match=f"table {table} exists but lacks column"):
            await store.write("k", "text")
        await close_pools()
    finally:
        await pg_execute(f"DROP TABLE IF EXISTS {table}, {table}_versions")
