"""``SQLiteTextStore``: versioned texts (``versioned``) in a SQLite file.

Layout (``table`` is the caller's; the column names are those of the first databases
made with it, kept so that they open unchanged)::

    <table>(state_key TEXT PRIMARY KEY, version INTEGER, state_json TEXT,
            created_at, updated_at)
    <table>_versions(state_key TEXT PRIMARY KEY, last_version INTEGER)

The file is opened by the constructor (WAL mode, the tables created if missing) with
the SQLite sessions' plumbing (``_sqlite_connect``, ``_sqlite_schema.enable_wal``);
blocking work runs in a worker thread, one operation at a time.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

from histcore._cancellation import finish_despite_cancellation
from histcore.sessions._sqlite_connect import check_busy_timeout, connect, transaction
from histcore.sessions._sqlite_schema import enable_wal
from histcore.sessions.sql_store import check_table_name
from histcore.sessions.versioned import (
    TextConflictError,
    TextStoreClosedError,
    TextStoreError,
    VersionedTextStore,
)

__all__ = ["SQLiteTextStore"]

_T = TypeVar("_T")


class SQLiteTextStore(VersionedTextStore):
    """Versioned texts in a SQLite file (or ``:memory:``), one row per key in ``table``.

    The file may be one a ``SQLiteSession`` uses. A file that cannot be opened, or is
    not a database, is a TextStoreError (``operation`` ``"open"``) and nothing is left
    open. ``close()`` when done.
    """

    def __init__(
        self, db_path: str | os.PathLike[str], *, table: str, busy_timeout: float = 30.0
    ) -> None:
        if not isinstance(db_path, (str, os.PathLike)):
            raise TypeError(f"db_path must be a str or a path, not {type(db_path).__name__}")
        self.db_path = db_path
        self.table = check_table_name(table, "table")
        self._versions = f"{self.table}_versions"
        self._lock = threading.Lock()
        self._closed = False
        path = os.fspath(db_path)
        try:
            self._conn = connect(path, check_busy_timeout(busy_timeout))
        except sqlite3.Error as exc:
            raise self._open_error(path, exc) from exc
        try:
            if path != ":memory:":
                enable_wal(self._conn, busy_timeout)
            self._create_tables()
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.Error):
                raise self._open_error(path, exc) from exc
            raise

    @staticmethod
    def _open_error(path: str, exc: sqlite3.Error) -> TextStoreError:
        return TextStoreError(
            f"cannot open text store {path!r}: {exc}", operation="open", reason=str(exc)
        )

    def _create_tables(self) -> None:
        self._conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {self.table} (
                state_key TEXT PRIMARY KEY,
                version INTEGER NOT NULL,
                state_json TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            )"""
        )
        # The last version of each deleted key; added to older databases as well.
        self._conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {self._versions} (
                state_key TEXT PRIMARY KEY,
                last_version INTEGER NOT NULL
            )"""
        )

    async def _in_worker(self, operation: str, work: Callable[[], _T]) -> _T:
        """``work()`` in a worker thread under the lock, to its end even if the caller
        is cancelled (see ``finish_despite_cancellation``); SQLite errors become TextStoreError."""

        def run() -> _T:
            with self._lock:
                if self._closed:
                    raise TextStoreClosedError(
                        f"{self!r} is closed", operation=operation, reason="closed"
                    )
                try:
                    return work()
                except sqlite3.Error as exc:
                    raise TextStoreError(
                        f"{self!r}: {operation} failed: {exc}", operation=operation, reason=str(exc)
                    ) from exc

        return await finish_despite_cancellation(
            asyncio.get_running_loop().run_in_executor(None, run)
        )

    def _current(self, key: str) -> tuple[int, str] | None:
        row = self._conn.execute(
            f"SELECT version, state_json FROM {self.table} WHERE state_key = ?", (key,)
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _deleted_version(self, key: str) -> int:
        row = self._conn.execute(
            f"SELECT last_version FROM {self._versions} WHERE state_key = ?", (key,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    async def _read(self, key: str) -> tuple[int, str] | None:
        return await self._in_worker("read", lambda: self._current(key))

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        def write() -> int:
            conn = self._conn
            with transaction(conn, "BEGIN IMMEDIATE"):
                if expected_version == 0:
                    version = self._deleted_version(key) + 1
                    cursor = conn.execute(
                        f"INSERT OR IGNORE INTO {self.table} (state_key, version, state_json) "
                        "VALUES (?, ?, ?)",
                        (key, version, text),
                    )
                else:
                    version = expected_version + 1
                    cursor = conn.execute(
                        f"UPDATE {self.table} SET version = version + 1, state_json = ?, "
                        "updated_at = CURRENT_TIMESTAMP WHERE state_key = ? AND version = ?",
                        (text, key, expected_version),
                    )
                if cursor.rowcount != 1:
                    current = self._current(key)
                    raise TextConflictError(
                        key,
                        expected_version,
                        0 if current is None else current[0],
                        operation="write",
                    )
            return version

        return await self._in_worker("write", write)

    async def _delete(self, key: str, expected_version: int | None) -> bool:
        def delete() -> bool:
            conn = self._conn
            with transaction(conn, "BEGIN IMMEDIATE"):
                current = self._current(key)
                version = 0 if current is None else current[0]
                if expected_version is not None and version != expected_version:
                    raise TextConflictError(key, expected_version, version, operation="delete")
                if current is not None:
                    conn.execute(f"DELETE FROM {self.table} WHERE state_key = ?", (key,))
                    conn.execute(
                        f"INSERT INTO {self._versions} (state_key, last_version) VALUES (?, ?) "
                        "ON CONFLICT (state_key) DO UPDATE SET last_version = "
                        "MAX(last_version, excluded.last_version)",
                        (key, version),
                    )
            return current is not None

        return await self._in_worker("delete", delete)

    def close(self) -> None:
        """Close the connection (waits for an operation in progress). Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteTextStore({os.fspath(self.db_path)!r})"
