"""``PostgresTextStore``: versioned texts (``versioned``) in PostgreSQL, next to the
``PostgresSession`` tables, on the sessions' shared connection pools. Needs the
``postgres`` extra.

Layout, created on first use (``table`` is the caller's; the column names are those of
the first databases made with it, kept so that they open unchanged)::

    <table>(state_key TEXT PRIMARY KEY, version BIGINT, state_json TEXT,
            created_at, updated_at)
    <table>_versions(state_key TEXT PRIMARY KEY, last_version BIGINT)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from histcore._cancellation import finish_despite_cancellation
from histcore.exceptions import SessionError
from histcore.sessions.postgres import (  # first: it says when the postgres extra is missing
    CONNECT_TIMEOUT,
    describe_dsn,
    ensure_tables,
    shared_pool,
)
from histcore.sessions.sql_store import check_table_name
from histcore.sessions.versioned import TextConflictError, TextStoreError, VersionedTextStore

if TYPE_CHECKING:
    from histcore.sessions._postgres_pools import Pool

__all__ = ["PostgresTextStore"]


class PostgresTextStore(VersionedTextStore):
    """Versioned texts in PostgreSQL, one row per key in ``table`` (made on first use).

    Connections come from ``pool`` (open, autocommit) or else from the pool of ``dsn``
    that the sessions of that DSN share in the running event loop, as for
    ``PostgresSession``; a server that takes no connection within ``connect_timeout``
    seconds (default: the sessions' 5) is a one-line TextStoreError.
    """

    def __init__(
        self,
        table: str,
        *,
        dsn: str | None = None,
        pool: Pool | None = None,
        pool_max_size: int = 10,
        connect_timeout: float | None = None,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise TypeError(f"{type(self).__name__} needs exactly one of dsn= and pool=")
        if dsn is not None and (not isinstance(dsn, str) or not dsn):
            raise TypeError(f"dsn must be a non-empty str, not {dsn!r}")
        self._dsn = dsn
        self._pool = pool
        self._pool_max_size = pool_max_size
        #: Seconds to wait for the server (the sessions' default, 5 s: a missing server
        #: is a one-line error, not a 30 s wait).
        self.connect_timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        #: Where the texts are, for messages (``user@host:port/db``; never a password).
        self.location = describe_dsn(dsn) if dsn is not None else "<pool>"
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
        cancelled (see ``finish_despite_cancellation``); database errors become TextStoreError."""
        # Imported here, not above: importing ``postgres`` first says when the postgres
        # extra is missing (and it is installed by the time a store works).
        import psycopg
        from psycopg_pool import PoolTimeout

        errors = (psycopg.Error, PoolTimeout, SessionError)

        async def run() -> Any:
            pool = self._pool
            if pool is None:
                assert self._dsn is not None
                pool = await shared_pool(
                    self._dsn, max_size=self._pool_max_size, timeout=self.connect_timeout
                )
            await ensure_tables(pool, self._schema, self._columns)
            async with pool.connection() as conn:
                return await work(conn)

        try:
            return await finish_despite_cancellation(asyncio.ensure_future(run()))
        except errors as exc:
            raise TextStoreError(
                f"{self!r}: {operation} failed: {exc}", operation=operation, reason=str(exc)
            ) from exc

    async def _read(self, key: str) -> tuple[int, str] | None:
        async def read(conn: Any) -> tuple[int, str] | None:
            cursor = await conn.execute(
                f"SELECT version, state_json FROM {self.table} WHERE state_key = %s", (key,)
            )
            row = await cursor.fetchone()
            return None if row is None else (int(row[0]), str(row[1]))

        found: tuple[int, str] | None = await self._run("read", read)
        return found

    async def _current_version(self, key: str) -> int:
        found = await self._read(key)
        return 0 if found is None else found[0]

    async def _lock_key(self, conn: Any, key: str) -> None:
        """Take the transaction lock that first writes and deletes of ``key`` share,
        so a first write reads the version a concurrent delete leaves behind (updates
        need none: the row lock and the version check decide them)."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.table}:{key}",)
        )

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        async def write(conn: Any) -> int | None:
            # Concurrent writers of one key are decided by the row lock (UPDATE re-checks
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

        version: int | None = await self._run("write", write)
        if version is None:
            current = await self._current_version(key)
            raise TextConflictError(key, expected_version, current, operation="write")
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
            current = await self._current_version(key)
            if current != expected_version:
                raise TextConflictError(key, expected_version, current, operation="delete")
        return deleted

    def __repr__(self) -> str:
        return f"PostgresTextStore({self.location!r}, table={self.table!r})"
