"""``PostgresSession``'s writes on histcore's tables (``HistcoreWrites``, a mixin of the
session): append, pop and clear, the revision each counts, and the statements of a
replacement (``HistcoreReplace``, run by ``_postgres_replace``).

Every write first locks its session's ``agent_sessions`` row (made when missing), so a
session's ids are handed out in commit order; a removal changes the row's
``generation``, which every read checks; every change counts one more revision in its
own transaction (``postgres`` module docstring).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from histcore.sessions._postgres_base import PostgresBase
from histcore.sessions._postgres_pools import Pool
from histcore.sessions._postgres_replace import ReplaceSteps
from histcore.sessions._postgres_statements import fits_jsonb
from histcore.sessions.base import InputItem
from histcore.sessions.sql_store import AFTER_ALL, DecodedRows, HistoryCache, NewestPop

if TYPE_CHECKING:
    from histcore.sessions.postgres import PostgresSession

__all__ = ["HistcoreReplace", "HistcoreWrites"]


class HistcoreWrites(PostgresBase):
    """The writes of ``PostgresSession`` on histcore's tables; each takes the session's
    lock (``_lock``) where it reads or changes the kept history."""

    async def _histcore_add_items(self, pool: Pool, texts: list[str], op_id: str | None) -> None:
        fits = [fits_jsonb(text) for text in texts]
        session_id = self.session_id

        async def write() -> None:
            async with pool.connection() as conn, conn.pipeline(), conn.transaction():
                await conn.execute(self._sql.lock_or_create, (session_id,))
                if op_id is not None:
                    cursor = await conn.execute(self._sql.op_applied, (session_id, op_id))
                    if await cursor.fetchone() is not None:
                        return  # applied before: a retry stores nothing
                await self._append(conn, texts, fits)
                if op_id is None:
                    await conn.execute(self._sql.count_revision, (session_id, session_id))
                else:
                    await conn.execute(
                        self._sql.count_revision_with_op,
                        (session_id, session_id, session_id, op_id),
                    )
                    await conn.execute(
                        self._sql.forget_old_ops,
                        (session_id, session_id, self._op_id_window),
                    )

        await self._finish("add_items", write)

    async def _histcore_pop_item(self, pool: Pool) -> InputItem | None:
        generations: list[int] = []

        async def pop() -> NewestPop:
            popped = NewestPop(self)
            generations.clear()
            async with pool.connection() as conn, conn.transaction():
                cursor = await conn.execute(self._sql.lock_existing, (self.session_id,))
                row = await cursor.fetchone()
                if row is None:
                    return popped
                generations.append(row[0])
                while not popped.over:
                    cursor = await conn.execute(
                        self._sql.newest_below, (self.session_id, popped.below)
                    )
                    if popped.take(await cursor.fetchone()):
                        if self._keep_replaced:
                            await conn.execute(
                                self._sql.archive_rows,
                                (self.session_id, self.session_id, popped.removed),
                            )
                        await conn.execute(self._sql.delete_row, (popped.removed[0],))
                if popped.removed:
                    cursor = await conn.execute(self._sql.bump, (self.session_id,))
                    bumped = await cursor.fetchone()
                    assert bumped is not None  # the row is locked by this transaction
                    generations.append(bumped[0])
                await self._count_revision(conn, changed=bool(popped.removed))
            return popped

        async with self._lock():
            popped = await self._finish_or_forget("pop_item", pop)
            self._forget_popped(popped.removed, generations)
        return popped.item

    async def _histcore_clear_session(self, pool: Pool) -> None:
        async def clear() -> None:
            async with pool.connection() as conn, conn.transaction():
                archived = 0
                if self._keep_replaced:
                    # Locked first, as the delete below would, then copied before the
                    # cascade removes the rows.
                    await conn.execute(self._sql.lock_existing, (self.session_id,))
                    cursor = await conn.execute(
                        self._sql.archive_all, (self.session_id, self.session_id)
                    )
                    archived = cursor.rowcount
                # The session row first: it waits for a writer in progress, whose rows
                # then go too, so a clear never splits a batch.
                await conn.execute(self._sql.delete_session, (self.session_id,))
                await conn.execute(self._sql.delete_messages, (self.session_id,))
                # Counted when rows were there (the newest id is now none).
                await self._count_revision(conn, changed=archived > 0)

        await self._finish("clear_session", clear)

    async def _append(
        self, conn: psycopg.AsyncConnection[Any], texts: list[str], fits: list[bool]
    ) -> None:
        """Inside a write transaction, before its revision is counted: append ``texts``
        (with ``keep_replaced``, noting the range of ids and the revision)."""
        if self._keep_replaced:
            sid = self.session_id
            await conn.execute(self._sql.append_noted, (sid, texts, fits, sid, sid))
        else:
            await conn.execute(self._sql.append, (self.session_id, texts, fits))

    async def _current_revision(self, conn: psycopg.AsyncConnection[Any]) -> int | None:
        """The stored revision; None when a writer that does not count changed the
        session since it was counted (its newest row id is another)."""
        sid = self.session_id
        cursor = await conn.execute(self._sql.revision_state, (sid, sid, sid))
        found = await cursor.fetchone()
        assert found is not None  # one row of scalar subqueries
        revision, last_id, newest = found
        return int(revision or 0) if last_id == newest else None

    async def _count_revision(
        self, conn: psycopg.AsyncConnection[Any], *, changed: bool = False
    ) -> int:
        """Inside a write transaction holding the session's lock: count this change
        (``changed``), or one by a writer that does not count, as one more revision;
        the revision afterwards."""
        if not changed and (revision := await self._current_revision(conn)) is not None:
            return revision
        cursor = await conn.execute(self._sql.count_revision, (self.session_id, self.session_id))
        counted = await cursor.fetchone()
        assert counted is not None  # an upsert returns its row
        return int(counted[0])

    def _forget_popped(self, removed: list[int], generations: list[int]) -> None:
        """Keep the cache in step with our own pop, when it was current before it."""
        history = self._history
        if history is None or not removed:
            return
        if len(generations) != 2 or history.stamp != generations[0]:
            self._history = None
            return
        # Pops take the newest rows: those we hold are at the end of the cache, the
        # others were never read and, being deleted now, never will be.
        if not history.forget_popped(removed):
            self._history = None  # not the newest rows we hold: rebuild on the next read
            return
        history.stamp = generations[1]


class HistcoreReplace(ReplaceSteps):
    """A replacement's statements on histcore's tables (``_postgres_replace``)."""

    def __init__(self, session: PostgresSession, texts: list[str]) -> None:
        self._session = session
        self._fits = [fits_jsonb(text) for text in texts]
        # The session row's generation after the removal (None: nothing removed).
        self._generation: int | None = None

    async def lock(self, conn: psycopg.AsyncConnection[Any]) -> int:
        session = self._session
        await conn.execute(session._sql.lock_or_create, (session.session_id,))
        return await session._count_revision(conn, changed=False)

    async def kept(self, conn: psycopg.AsyncConnection[Any]) -> HistoryCache | None:
        session = self._session
        history = session._history
        if history is not None and history.floor is None:
            # The incremental read's rule: no removal since (the same generation),
            # so the rows above last_id are all that is new.
            generation, rows = await session._fetch(conn, history.last_id, AFTER_ALL, None)
            if generation == history.stamp:
                history.add_newer(session._decoded(rows))
                return history
        session._history = None
        return None

    async def every_row(self, conn: psycopg.AsyncConnection[Any]) -> DecodedRows:
        session = self._session
        cursor = await conn.execute(session._sql.all_rows, (session.session_id,))
        return session._decoded(list(await cursor.fetchall()))

    async def write(
        self, conn: psycopg.AsyncConnection[Any], doomed: list[int], texts: list[str]
    ) -> None:
        session = self._session
        sql, session_id = session._sql, session.session_id
        if doomed:
            if session._keep_replaced:
                await conn.execute(sql.archive_rows, (session_id, session_id, doomed))
            await conn.execute(sql.delete_rows, (doomed,))
            cursor = await conn.execute(sql.bump, (session_id,))  # a removal
            bumped = await cursor.fetchone()
            assert bumped is not None  # the row is locked by this transaction
            self._generation = bumped[0]
        if texts:
            await session._append(conn, texts, self._fits)
        await session._count_revision(conn, changed=True)

    def committed(self, history: HistoryCache | None, doomed: list[int]) -> None:
        session = self._session
        if history is None or not history.forget_replaced(doomed):
            session._history = None  # rebuilt by the next read
        elif self._generation is not None:
            history.stamp = self._generation
