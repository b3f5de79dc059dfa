"""``PostgresSession`` on the OpenAI Agents SDK's ``SQLAlchemySession`` tables: its reads
and writes there (``SdkLayout``, a mixin of the session).

Rows are read in the SDK's order (``created_at, id``) and written as the SDK writes them
(the session row locked or made first, its ``updated_at`` touched), so either library
reads the other's rows. The SDK changes nothing but its rows, so what changed since a
read is decided by ``_postgres_freshness`` (the cache keeps its ``Stamp``). Revisions,
op ids and the archive live in side tables made by the first write; the revision row
keeps the stamp of the rows after the change it counted, so a change by anyone else is
counted by the next revision() or replace (``_sdk_count``).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from histcore.exceptions import SessionError
from histcore.sessions._postgres_base import PostgresBase
from histcore.sessions._postgres_freshness import Stamp, psycopg_execute
from histcore.sessions._postgres_pools import Pool
from histcore.sessions._postgres_replace import ReplaceSteps
from histcore.sessions._postgres_schema import ensure_tables
from histcore.sessions.base import InputItem
from histcore.sessions.sql_store import (
    AFTER_ALL,
    FETCH_CHUNK,
    DecodedRows,
    HistoryCache,
    NewestPop,
)
from histcore.sessions.transcript import TranscriptEntry, merge

__all__ = ["SdkLayout", "SdkReplace"]

_Conn = psycopg.AsyncConnection[Any]


class SdkLayout(PostgresBase):
    """The operations of ``PostgresSession`` on the SDK's tables. Reads and writes run
    under the session's lock (``PostgresBase._lock``), as on histcore's tables."""

    async def _sdk_side_tables(self, pool: Pool) -> None:
        """The revision and op-id (and archive) tables, made by the first write."""
        sql = self._sdk
        try:
            await ensure_tables(pool, sql.schema, sql.required_columns, sql.indexes)
        except (psycopg.Error, PoolTimeout) as exc:
            raise SessionError(f"{self._who()}: cannot prepare the tables: {exc}") from exc

    # --- reading --------------------------------------------------------------------

    async def _sdk_get_items(self, pool: Pool, limit: int | None) -> list[InputItem]:
        try:
            async with pool.connection() as conn:
                if not self._cache_history:
                    return await self._sdk_uncached(conn, limit)
                history = await self._sdk_synced(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._failure("get_items", exc) from exc
        return history.hand_out(limit, kept=True)

    async def _sdk_synced(self, conn: _Conn) -> HistoryCache:
        """The cache, made current: the rows newer than it appended when the rows it
        holds are intact and the new ones sort after them, else everything read again."""
        execute = psycopg_execute(conn, FETCH_CHUNK)
        history, stamp = self._history, self._stamp
        if history is not None and stamp.last_id is not None:
            probe = await self._fresh.run_probe(execute, self.session_id, stamp)
            if probe.extends(stamp):
                history.add_newer(self._decoded([(row[0], row[1]) for row in probe.rows]))
                self._stamp = stamp.extended(probe.rows)
                return history
        self._history = None
        sql, params = self._fresh.read_all(self.session_id)
        rows = await execute(sql, params)
        history = HistoryCache()
        history.add_newer(self._decoded([(row[0], row[1]) for row in rows]))
        self._history, self._stamp = history, Stamp.of(rows)
        return history

    async def _sdk_uncached(self, conn: _Conn, limit: int | None) -> list[InputItem]:
        """A read without the cache, as the SDK reads: all rows, or the newest ``limit``
        items through a window of rows doubled while corrupt rows leave it short."""
        if limit is None:
            cursor = await conn.execute(self._sdk.all_rows, (self.session_id,))
            return self._decoded(list(await cursor.fetchall())).items
        window = limit
        while True:
            cursor = await conn.execute(self._sdk.latest, (self.session_id, window))
            rows = list(await cursor.fetchall())
            rows.reverse()
            items = self._decoded(rows).items
            if len(items) >= limit or len(rows) < window:
                return items[-limit:]
            window *= 2

    # --- writing --------------------------------------------------------------------

    async def _sdk_add_items(self, pool: Pool, texts: list[str], op_id: str | None) -> None:
        await self._sdk_side_tables(pool)
        sql, session_id = self._sdk, self.session_id

        async def write() -> None:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute(sql.lock_or_create, (session_id,))
                if op_id is not None:
                    cursor = await conn.execute(sql.op_applied, (session_id, op_id))
                    if await cursor.fetchone() is not None:
                        return  # applied before: a retry stores nothing
                rows, digest = await self._sdk_append(conn, texts)
                if op_id is None:
                    await conn.execute(sql.count_by, (session_id, rows, digest))
                    return
                await conn.execute(
                    sql.count_by_with_op, (session_id, rows, digest, session_id, op_id)
                )
                await conn.execute(sql.forget_old_ops, (session_id, session_id, self._op_id_window))

        await self._finish("add_items", write)

    async def _sdk_append(self, conn: _Conn, texts: list[str]) -> tuple[int, int]:
        """Inside a write transaction, before its revision is counted: append ``texts``;
        how many rows, and the sum of their row hashes."""
        sid = self.session_id
        if self._keep_replaced:
            cursor = await conn.execute(self._sdk.append_noted, (sid, sid, texts, sid, sid))
        else:
            cursor = await conn.execute(self._sdk.append, (sid, sid, texts))
        found = await cursor.fetchone()
        assert found is not None  # an aggregate's row
        return int(found[0]), int(found[1])

    async def _sdk_pop_item(self, pool: Pool) -> InputItem | None:
        await self._sdk_side_tables(pool)
        sql, session_id = self._sdk, self.session_id

        async def pop() -> InputItem | None:
            async with pool.connection() as conn, conn.transaction():
                cursor = await conn.execute(sql.lock_existing, (session_id,))
                if await cursor.fetchone() is None:
                    return None
                # Under the lock the cache, made current, names the row to pop.
                history = await self._current_under_lock(conn)
                if history is None:
                    row_id, item = await self._newest_item(conn)
                elif history.ids:
                    row_id, item = history.ids[-1], history.items[-1]
                else:
                    row_id, item = None, None
                if row_id is None:
                    return None
                if self._keep_replaced:
                    await conn.execute(sql.archive_rows, (session_id, session_id, [row_id]))
                cursor = await conn.execute(sql.delete_row, (row_id,))
                deleted = await cursor.fetchone()
                assert deleted is not None  # the session's lock keeps its rows
                await conn.execute(sql.count_by, (session_id, -1, -int(deleted[0])))
                if history is not None:
                    history.ids.pop()
                    history.items.pop()
                    history.rows -= 1
                    self._stamp = self._stamp.without(int(deleted[0]))
                return item

        return await self._finish("pop_item", pop)

    async def _current_under_lock(self, conn: _Conn) -> HistoryCache | None:
        """Inside a transaction holding the session's lock: the cache brought up to date
        when only appends happened since it was read; else None, and it is forgotten."""
        history, stamp = self._history, self._stamp
        if history is None or stamp.last_id is None:
            self._history = None
            return None
        execute = psycopg_execute(conn, FETCH_CHUNK)
        probe = await self._fresh.run_probe(execute, self.session_id, stamp)
        if not probe.extends(stamp):
            self._history = None
            return None
        history.add_newer(self._decoded([(row[0], row[1]) for row in probe.rows]))
        self._stamp = stamp.extended(probe.rows)
        return history

    async def _newest_item(self, conn: _Conn) -> tuple[int | None, Any]:
        """The newest row that holds an item, in the SDK's order (``NewestPop``)."""
        popped = NewestPop(self)
        while not popped.over:
            if popped.below == AFTER_ALL:
                cursor = await conn.execute(self._sdk.newest, (self.session_id,))
            else:
                cursor = await conn.execute(self._sdk.newest_below, (self.session_id, popped.below))
            popped.take(await cursor.fetchone())
        return (popped.removed[0], popped.item) if popped.removed else (None, None)

    async def _sdk_clear_session(self, pool: Pool) -> None:
        await self._sdk_side_tables(pool)
        sql, session_id = self._sdk, self.session_id

        async def clear() -> None:
            async with pool.connection() as conn, conn.transaction():
                # The session row first, as the SDK's clear: writers in progress finish.
                await conn.execute(sql.lock_existing, (session_id,))
                if self._keep_replaced:
                    await conn.execute(sql.archive_all, (session_id, session_id))
                cursor = await conn.execute(sql.delete_messages, (session_id,))
                removed = cursor.rowcount
                await conn.execute(sql.delete_session, (session_id,))
                if removed > 0:
                    await conn.execute(sql.count_to, (session_id, 0, 0))

        await self._finish("clear_session", clear)

    # --- history transactions ---------------------------------------------------------

    async def _sdk_state(self, conn: _Conn) -> tuple[int | None, int, int]:
        """The stored revision, None when the rows are not the ones the stored stamp
        describes (changed by a writer that does not count: the SDK's session, a
        hand-written statement, the doctor); and the rows' stamp now (rows, digest)."""
        sid = self.session_id
        cursor = await conn.execute(self._sdk.revision_state, (sid, sid))
        found = await cursor.fetchone()
        assert found is not None  # one aggregate row
        revision, rows, digest, now_rows, now_digest = found
        now = (int(now_rows), int(now_digest))
        if (int(rows or 0), int(digest or 0)) != now:
            return None, *now
        return int(revision or 0), *now

    async def _sdk_current(self, conn: _Conn) -> int | None:
        """The stored revision; None when a writer that does not count changed the rows."""
        return (await self._sdk_state(conn))[0]

    async def _sdk_count(self, conn: _Conn) -> int:
        """Inside a write transaction holding the session's lock: the revision, one more
        when a writer that does not count changed the rows (``_sdk_state``)."""
        revision, rows, digest = await self._sdk_state(conn)
        if revision is not None:
            return revision
        cursor = await conn.execute(self._sdk.count_to, (self.session_id, rows, digest))
        counted = await cursor.fetchone()
        assert counted is not None  # an upsert returns its row
        return int(counted[0])

    async def _sdk_transcript(self, pool: Pool) -> list[TranscriptEntry]:
        sql, sid = self._sdk, self.session_id

        async def read() -> list[TranscriptEntry]:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor = await conn.execute(sql.by_id, (sid,))
                live = list(await cursor.fetchall())
                cursor = await conn.execute(sql.archived, (sid,))
                archived = [(int(a), b, int(c)) for a, b, c in await cursor.fetchall()]
                cursor = await conn.execute(sql.writes, (sid,))
                writes = [(int(a), int(b), int(c)) for a, b, c in await cursor.fetchall()]
            return merge(live, archived, writes)

        await self._sdk_side_tables(pool)
        return await self._finish("transcript", read)


class SdkReplace(ReplaceSteps):
    """A replacement's statements on the SDK's tables (``_postgres_replace``); the side
    tables are made before."""

    def __init__(self, session: SdkLayout) -> None:
        self._session = session
        # The stamp of the rows the replacement removed.
        self._removed = Stamp()

    async def lock(self, conn: _Conn) -> int:
        session = self._session
        await conn.execute(session._sdk.lock_or_create, (session.session_id,))
        # The stored stamp is the rows' from here on: ``write`` moves it by its change.
        return await session._sdk_count(conn)

    async def kept(self, conn: _Conn) -> HistoryCache | None:
        return await self._session._current_under_lock(conn)

    async def every_row(self, conn: _Conn) -> DecodedRows:
        session = self._session
        cursor = await conn.execute(session._sdk.all_rows, (session.session_id,))
        return session._decoded(list(await cursor.fetchall()))

    async def write(self, conn: _Conn, doomed: list[int], texts: list[str]) -> None:
        session = self._session
        sql, sid = session._sdk, session.session_id
        rows = digest = 0
        if doomed:
            if session._keep_replaced:
                await conn.execute(sql.archive_rows, (sid, sid, doomed))
            cursor = await conn.execute(sql.delete_rows, (doomed,))
            found = await cursor.fetchone()
            assert found is not None  # an aggregate's row
            self._removed = Stamp(int(found[0]), int(found[1]))
            rows, digest = -self._removed.rows, -self._removed.digest
        if texts:
            added, added_digest = await session._sdk_append(conn, texts)
            rows, digest = rows + added, digest + added_digest
        await conn.execute(sql.touch, (sid,))
        await conn.execute(sql.count_by, (sid, rows, digest))

    def committed(self, history: HistoryCache | None, doomed: list[int]) -> None:
        session = self._session
        if history is None or not history.forget_replaced(doomed):
            session._history = None  # rebuilt by the next read
            return
        # The rows with id <= last_id lost the removed ones; the new ones are above it.
        stamp, removed = session._stamp, self._removed
        session._stamp = Stamp(
            stamp.rows - removed.rows, stamp.digest - removed.digest, stamp.last_id
        )
