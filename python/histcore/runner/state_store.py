"""Durable ``RunState`` checkpoints with optimistic concurrency.

A store keeps one checkpoint per key (a conversation, a job, ...) together with a
version number: 0 means "no checkpoint", each save adds one. A save names the version
it was based on (``expected_version``, 0 for the first save of a key) and succeeds only
if that is still the stored version; otherwise it raises ``RunStateConflictError`` and
leaves the newer checkpoint alone. So two workers that resumed the same checkpoint
cannot both record their continuation: the slower one learns it is stale::

    stored = await store.load_stored_state(agent, "job-7")    # version 3
    result = await Runner.run(agent, stored.state)
    await store.save_state("job-7", result.to_state(), expected_version=stored.version)

A version is never issued twice for one key, not even after ``delete_state``: the
first save after a delete gets the version after the deleted one, so a worker still
holding a version from before the delete is stale, not mistaken for the current
writer. The stores remember the last version of each deleted key for that (memory:
in a dict; SQLite and PostgreSQL: in a second table, ``<table>_versions``, created
next to the checkpoints, also in databases made before it existed).

Backends: ``MemoryRunStateStore`` (this process only), ``SQLiteRunStateStore`` (a
file, possibly the SQLite session's) and ``PostgresRunStateStore`` (the PostgreSQL
session's database and connection pool; needs the ``postgres`` extra). All keep the
state as its ``to_string()`` text, so a load always builds a new ``RunState`` that
shares nothing with the one saved.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from histcore._cancellation import to_the_end
from histcore.exceptions import HistcoreError, RunStateError
from histcore.runner.run_state import RunState
from histcore.sessions.sql_store import check_table_name

if TYPE_CHECKING:
    from histcore.runner.agent import Agent
    from histcore.sessions._postgres_pools import Pool

__all__ = [
    "MemoryRunStateStore",
    "PostgresRunStateStore",
    "RunStateConflictError",
    "RunStateStore",
    "RunStateStoreError",
    "SQLiteRunStateStore",
    "StoredRunState",
]

_T = TypeVar("_T")


class RunStateStoreError(HistcoreError):
    """The store could not do what was asked; the stored checkpoints are unchanged."""


class RunStateConflictError(RunStateStoreError):
    """A save or delete was based on a version that is no longer the stored one."""

    def __init__(self, key: str, expected_version: int, current_version: int) -> None:
        self.key = key
        self.expected_version = expected_version
        self.current_version = current_version
        if current_version == 0:
            now = "it has no checkpoint (it was deleted, or never saved)"
        else:
            now = f"it is at version {current_version}"
        based = "a new key" if expected_version == 0 else f"version {expected_version}"
        super().__init__(
            f"run state {key!r}: the save was based on {based} but {now}; "
            "load the current checkpoint and continue from it instead"
        )


@dataclass(frozen=True)
class StoredRunState:
    """A loaded checkpoint and the version to pass as ``expected_version`` when
    saving its continuation."""

    state: RunState
    version: int


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, not {type(key).__name__}")
    if not key:
        raise ValueError("key must be a non-empty str")
    return key


def _check_version(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 0, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value}")
    return value


class RunStateStore(ABC):
    """Versioned ``RunState`` checkpoints by key (see the module docstring)."""

    async def save_state(self, key: str, state: RunState, *, expected_version: int = 0) -> int:
        """Store ``state`` under ``key`` if the stored version is ``expected_version``
        (0: the key has no checkpoint now); return the new version, one more than
        any version the key ever had.

        Raises ``RunStateConflictError`` when another save got there first, and
        ``RunStateError`` when the state cannot be serialised; nothing is written then.
        """
        key = _check_key(key)
        expected_version = _check_version(expected_version, "expected_version")
        if not isinstance(state, RunState):
            raise TypeError(f"state must be a RunState, not {type(state).__name__}")
        text = state.to_string()
        return await self._write(key, text, expected_version)

    async def load_stored_state(self, agent: Agent, key: str) -> StoredRunState | None:
        """The checkpoint under ``key``, loaded for ``agent``, with its version; None
        when there is none. A stored state that does not load raises ``RunStateError``
        naming the key, its version and the offending field."""
        key = _check_key(key)
        found = await self._read(key)
        if found is None:
            return None
        version, text = found
        try:
            state = RunState.from_string(agent, text)
        except RunStateError as exc:
            raise RunStateError(f"run state {key!r} (version {version}): {exc}") from exc
        return StoredRunState(state, version)

    async def load_state(self, agent: Agent, key: str) -> RunState | None:
        """The checkpoint under ``key`` loaded for ``agent``, or None (see
        ``load_stored_state``, which also gives the version to save against)."""
        stored = await self.load_stored_state(agent, key)
        return None if stored is None else stored.state

    async def version(self, key: str) -> int:
        """The stored version of ``key``: 0 when it has no checkpoint."""
        found = await self._read(_check_key(key))
        return 0 if found is None else found[0]

    async def delete_state(self, key: str, *, expected_version: int | None = None) -> bool:
        """Remove the checkpoint under ``key``; True if there was one. With
        ``expected_version``, only if that is still the stored version (else
        ``RunStateConflictError``). The key's versions go on from the deleted one."""
        key = _check_key(key)
        if expected_version is not None:
            expected_version = _check_version(expected_version, "expected_version")
        return await self._delete(key, expected_version)

    @abstractmethod
    async def _read(self, key: str) -> tuple[int, str] | None:
        """``(version, text)`` stored under ``key``, or None."""

    @abstractmethod
    async def _write(self, key: str, text: str, expected_version: int) -> int:
        """Atomically: if the stored version is ``expected_version``, store ``text``
        with the next version (after a delete: the one after the deleted version)
        and return it; else raise RunStateConflictError."""

    @abstractmethod
    async def _delete(self, key: str, expected_version: int | None) -> bool:
        """Atomically remove ``key`` (if at ``expected_version``, when given),
        remembering its version for the next ``_write``."""


# --- in memory ------------------------------------------------------------------------


class MemoryRunStateStore(RunStateStore):
    """Checkpoints in this process's memory (thread-safe; lost when it ends)."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[int, str]] = {}
        #: The last version of each deleted key (a new checkpoint starts after it).
        self._deleted: dict[str, int] = {}
        self._lock = threading.Lock()

    async def _read(self, key: str) -> tuple[int, str] | None:
        with self._lock:
            return self._states.get(key)

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        with self._lock:
            stored = self._states.get(key)
            current = 0 if stored is None else stored[0]
            if current != expected_version:
                raise RunStateConflictError(key, expected_version, current)
            version = (current if stored is not None else self._deleted.get(key, 0)) + 1
            self._states[key] = (version, text)
            return version

    async def _delete(self, key: str, expected_version: int | None) -> bool:
        with self._lock:
            stored = self._states.get(key)
            current = 0 if stored is None else stored[0]
            if expected_version is not None and current != expected_version:
                raise RunStateConflictError(key, expected_version, current)
            if stored is None:
                return False
            del self._states[key]
            self._deleted[key] = current
            return True

    def __repr__(self) -> str:
        return f"MemoryRunStateStore(keys={len(self._states)})"


# --- SQLite ---------------------------------------------------------------------------


class SQLiteRunStateStore(RunStateStore):
    """Checkpoints in a SQLite file (or ``:memory:``), one row per key in ``table``.

    The file may be the one a ``SQLiteSession`` uses. Blocking work runs in a worker
    thread; ``close()`` when done.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = "agent_run_states",
        busy_timeout: float = 30.0,
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
            self._conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise RunStateStoreError(f"cannot open run state store {path!r}: {exc}") from exc
        try:
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
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
        except BaseException as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.Error):
                raise RunStateStoreError(f"cannot open run state store {path!r}: {exc}") from exc
            raise

    async def _in_worker(self, operation: str, work: Callable[[], _T]) -> _T:
        def run() -> _T:
            with self._lock:
                if self._closed:
                    raise RunStateStoreError(f"{self!r} is closed")
                try:
                    return work()
                except sqlite3.Error as exc:
                    raise RunStateStoreError(f"{self!r}: {operation} failed: {exc}") from exc

        return await to_the_end(asyncio.get_running_loop().run_in_executor(None, run))

    def _current(self, key: str) -> tuple[int, str] | None:
        row = self._conn.execute(
            f"SELECT version, state_json FROM {self.table} WHERE state_key = ?", (key,)
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    async def _read(self, key: str) -> tuple[int, str] | None:
        return await self._in_worker("load", lambda: self._current(key))

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        def write() -> int:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
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
                    raise RunStateConflictError(
                        key, expected_version, 0 if current is None else current[0]
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return version

        return await self._in_worker("save", write)

    def _deleted_version(self, key: str) -> int:
        row = self._conn.execute(
            f"SELECT last_version FROM {self._versions} WHERE state_key = ?", (key,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    async def _delete(self, key: str, expected_version: int | None) -> bool:
        def delete() -> bool:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                current = self._current(key)
                version = 0 if current is None else current[0]
                if expected_version is not None and version != expected_version:
                    raise RunStateConflictError(key, expected_version, version)
                if current is not None:
                    conn.execute(f"DELETE FROM {self.table} WHERE state_key = ?", (key,))
                    conn.execute(
                        f"INSERT INTO {self._versions} (state_key, last_version) VALUES (?, ?) "
                        "ON CONFLICT (state_key) DO UPDATE SET last_version = "
                        "MAX(last_version, excluded.last_version)",
                        (key, version),
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return current is not None

        return await self._in_worker("delete", delete)

    def close(self) -> None:
        """Close the connection (waits for an operation in progress). Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteRunStateStore({os.fspath(self.db_path)!r})"


# --- PostgreSQL -----------------------------------------------------------------------


class PostgresRunStateStore(RunStateStore):
    """Checkpoints in PostgreSQL, next to ``PostgresSession``'s tables.

    Give ``dsn`` (the pool is shared with the sessions of the same DSN in the running
    event loop) or an open autocommit ``pool``, as for ``PostgresSession``. The table
    is created on first use. A server that does not accept a connection within
    ``connect_timeout`` seconds (the sessions' default, 5, when not given) is a one-line
    RunStateStoreError.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Pool | None = None,
        table: str = "agent_run_states",
        pool_max_size: int = 10,
        connect_timeout: float | None = None,
    ) -> None:
        from histcore.sessions import postgres  # needs the postgres extra

        if (dsn is None) == (pool is None):
            raise TypeError("PostgresRunStateStore needs exactly one of dsn= and pool=")
        if dsn is not None and (not isinstance(dsn, str) or not dsn):
            raise TypeError(f"dsn must be a non-empty str, not {dsn!r}")
        self._pg = postgres
        self._dsn = dsn
        self._pool = pool
        self._pool_max_size = pool_max_size
        # The sessions' default (5 s): a missing server is a one-line error, not a 30 s wait.
        self._connect_timeout = (
            postgres.CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        )
        self.table = check_table_name(table, "table")
        self._versions = f"{self.table}_versions"
        self._schema = [
            f"""CREATE TABLE IF NOT EXISTS {self.table} (
                state_key TEXT PRIMARY KEY,
                version BIGINT NOT NULL,
                state_json TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
            # The last version of each deleted key; added to older databases as well.
            f"""CREATE TABLE IF NOT EXISTS {self._versions} (
                state_key TEXT PRIMARY KEY,
                last_version BIGINT NOT NULL
            )""",
        ]
        self._columns = {
            self.table: {"state_key": "text", "version": "bigint", "state_json": "text"},
            self._versions: {"state_key": "text", "last_version": "bigint"},
        }

    async def _run(self, operation: str, work: Callable[[Any], Any]) -> Any:
        """``await work(conn)`` on a pooled connection, to its end even if the caller is
        cancelled (see ``to_the_end``); database errors become RunStateStoreError."""
        pg = self._pg
        errors = (pg.psycopg.Error, pg.PoolTimeout, pg.SessionError)

        async def run() -> Any:
            pool = self._pool
            if pool is None:
                assert self._dsn is not None
                pool = await pg.shared_pool(
                    self._dsn, max_size=self._pool_max_size, timeout=self._connect_timeout
                )
            await pg.ensure_tables(pool, self._schema, self._columns)
            async with pool.connection() as conn:
                return await work(conn)

        try:
            return await to_the_end(asyncio.ensure_future(run()))
        except errors as exc:
            raise RunStateStoreError(f"{self!r}: {operation} failed: {exc}") from exc

    async def _read(self, key: str) -> tuple[int, str] | None:
        async def read(conn: Any) -> tuple[int, str] | None:
            cursor = await conn.execute(
                f"SELECT version, state_json FROM {self.table} WHERE state_key = %s", (key,)
            )
            row = await cursor.fetchone()
            return None if row is None else (int(row[0]), str(row[1]))

        found: tuple[int, str] | None = await self._run("load", read)
        return found

    async def _lock_key(self, conn: Any, key: str) -> None:
        """Take the transaction lock that first saves and deletes of ``key`` share,
        so a first save reads the version a concurrent delete leaves behind (updates
        need none: the row lock and the version check decide them)."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.table}:{key}",)
        )

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        async def write(conn: Any) -> int | None:
            # Concurrent savers of one key are decided by the row lock (UPDATE re-checks
            # the version after waiting) or the primary key.
            if expected_version == 0:
                async with conn.transaction():
                    await self._lock_key(conn, key)
                    cursor = await conn.execute(
                        f"INSERT INTO {self.table} (state_key, version, state_json) "
                        f"SELECT %s, COALESCE(MAX(last_version), 0) + 1, %s FROM {self._versions} "
                        "WHERE state_key = %s ON CONFLICT (state_key) DO NOTHING RETURNING version",
                        (key, text, key),
                    )
                    row = await cursor.fetchone()
            else:
                cursor = await conn.execute(
                    f"UPDATE {self.table} SET version = version + 1, state_json = %s, "
                    "updated_at = now() WHERE state_key = %s AND version = %s "
                    "RETURNING version",
                    (text, key, expected_version),
                )
                row = await cursor.fetchone()
            return None if row is None else int(row[0])

        version: int | None = await self._run("save", write)
        if version is None:
            current = await self._read(key)
            raise RunStateConflictError(key, expected_version, 0 if current is None else current[0])
        return version

    async def _delete(self, key: str, expected_version: int | None) -> bool:
        async def delete(conn: Any) -> bool:
            async with conn.transaction():
                await self._lock_key(conn, key)
                if expected_version is None:
                    cursor = await conn.execute(
                        f"DELETE FROM {self.table} WHERE state_key = %s RETURNING version",
                        (key,),
                    )
                else:
                    cursor = await conn.execute(
                        f"DELETE FROM {self.table} WHERE state_key = %s AND version = %s "
                        "RETURNING version",
                        (key, expected_version),
                    )
                row = await cursor.fetchone()
                if row is None:
                    return False
                await conn.execute(
                    f"INSERT INTO {self._versions} AS v (state_key, last_version) "
                    "VALUES (%s, %s) ON CONFLICT (state_key) DO UPDATE SET "
                    "last_version = GREATEST(v.last_version, EXCLUDED.last_version)",
                    (key, int(row[0])),
                )
            return True

        deleted: bool = await self._run("delete", delete)
        if not deleted and expected_version is not None:
            current = await self._read(key)
            version = 0 if current is None else current[0]
            if version != expected_version:
                raise RunStateConflictError(key, expected_version, version)
        return deleted

    def __repr__(self) -> str:
        where = self._pg.describe_dsn(self._dsn) if self._dsn is not None else "<pool>"
        return f"PostgresRunStateStore({where!r}, table={self.table!r})"
