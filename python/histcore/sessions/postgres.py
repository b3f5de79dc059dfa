"""``PostgresSession``: conversation history in a PostgreSQL database shared by many workers.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool). Sessions built from the same
DSN in one event loop share one connection pool (``shared_pool``); ``close_pools()``
closes them. The tables (``agent_sessions``, ``agent_messages`` with the item's exact
JSON text in ``message_text`` and a ``jsonb`` copy in ``message_data``, and the
revision, op-id and, with ``keep_replaced=True``, archive tables) are made on first use.

Rules: every write first locks its session's ``agent_sessions`` row, so a session's ids
are handed out in commit order and "rows with id > the last id I read" is exactly what a
reader has not seen; a read keeps the decoded items and checks the session row's
``generation`` in the statement that fetches new rows. On the tables of the OpenAI Agents
SDK's ``SQLAlchemySession`` (found there, or ``layout="sdk"``) the session reads and
writes as the SDK does (``_postgres_sdk``) and checks a stamp of the rows instead
(``_postgres_freshness``). Layouts, concurrency and what is not detected:
docs/design.md, "Sessions" ("The PostgreSQL store").
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "PostgresSession needs psycopg 3 and psycopg-pool: pip install 'histcore[postgres]'"
    ) from exc

from histcore._cancellation import finish_despite_cancellation
from histcore.exceptions import SessionClosedError, SessionError
from histcore.sessions._codec import encode_items
from histcore.sessions._compaction import CompactionHook
from histcore.sessions._postgres_freshness import Freshness, Stamp
from histcore.sessions._postgres_pools import (
    CONNECT_TIMEOUT,
    Pool,
    close_pools,
    describe_dsn,
    shared_pool,
)
from histcore.sessions._postgres_replace import ReplaceSteps, replace_rows
from histcore.sessions._postgres_schema import SDK, check_layout, ensure_tables, find_layout
from histcore.sessions._postgres_sdk import SdkLayout, SdkReplace
from histcore.sessions._postgres_statements import SdkStatements, Statements, fits_jsonb
from histcore.sessions._transactions import (
    DEFAULT_OP_ID_WINDOW,
    Replacement,
    check_keep_replaced,
    check_op_id,
    check_op_id_window,
)
from histcore.sessions.base import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    InputItem,
    SessionSettings,
    _ClosableSession,
    check_session_id,
    describe_session_id,
    items_argument,
)
from histcore.sessions.sql_store import (
    BEFORE_ALL,
    FETCH_CHUNK,
    DecodedRows,
    HistoryCache,
    NewestPop,
    SkipsCorruptRows,
    check_table_name,
    read_window,
)
from histcore.sessions.transcript import TranscriptEntry, merge

__all__ = [
    "CONNECT_TIMEOUT",
    "PostgresSession",
    "close_pools",
    "describe_dsn",
    "ensure_tables",
    "shared_pool",
]

_T = TypeVar("_T")

_AFTER_ALL = 2**63 - 1
# A read retries when removals by others keep changing the history under it.
_MAX_READ_ATTEMPTS = 10


class _HistoryChanged(Exception):
    """Rows were removed between two statements of one read: start the read over."""


# --- the session ----------------------------------------------------------------------


class PostgresSession(SdkLayout, CompactionHook, _ClosableSession, SkipsCorruptRows):
    """A session stored in PostgreSQL, shared safely by any number of workers.

    Give either ``dsn`` (sessions with the same DSN share a pool, see ``shared_pool``;
    ``pool_max_size`` and ``connect_timeout`` apply when that pool is first opened: a
    server that does not accept a connection within ``connect_timeout`` seconds, 5 by
    default, is a one-line SessionError) or
    an open ``psycopg_pool.AsyncConnectionPool`` as ``pool`` (its connections must be
    in autocommit mode, e.g. ``kwargs={"autocommit": True}``); the caller then owns it.
    Tables are created on first use. ``cache_history``: keep the decoded history
    between reads so a read fetches only newer rows (the default).

    ``close()`` ends the session (not the shared pool: ``close_pools()`` does that);
    afterwards every operation raises ``SessionClosedError``. Rows whose text holds no
    item (``histcore.sessions.rows``), whoever wrote them, are skipped with a logged
    warning and listed in ``skipped_row_ids``; ``pop_item`` leaves them where they are
    and removes only the row it returns.

    ``revision()``, ``add_items(items, op_id=...)`` and ``replace_suffix`` are history
    transactions (see the module docstring): the revision counts committed changes and
    is never reused; an op id among the session's latest ``op_id_window`` (1000)
    applied ones stores nothing again. With ``keep_replaced=True`` removed rows are
    archived and ``transcript()`` returns every item stored (module docstring).

    ``layout``: ``"auto"`` (the default) uses the tables' layout, histcore's or the one
    the OpenAI Agents SDK's ``SQLAlchemySession`` makes, and makes histcore's when there
    are none; ``"sdk"`` makes the SDK's; ``"histcore"`` or ``"sdk"`` refuses tables of
    the other layout (SessionError). On the SDK's tables rows are read in its order
    (``created_at, id``), written as it writes them, and its writes are seen by the
    next read and counted by the next ``revision()``; the side tables are made by the
    first write. Details: docs/design.md ("The PostgreSQL store").

    The history cache's ``stamp`` is the session row's generation it was read under
    (on the SDK's tables, ``_stamp`` holds a ``_postgres_freshness.Stamp`` instead).
    """

    # A read hands out copies of the history cache, or rows decoded for it alone.
    _returns_fresh_items = True
    _answers_compaction = True

    def __init__(
        self,
        session_id: str,
        dsn: str | None = None,
        *,
        pool: Pool | None = None,
        sessions_table: str = SESSIONS_TABLE,
        messages_table: str = MESSAGES_TABLE,
        session_settings: SessionSettings | None = None,
        cache_history: bool = True,
        pool_max_size: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT,
        op_id_window: int = DEFAULT_OP_ID_WINDOW,
        keep_replaced: bool = False,
        layout: str = "auto",
    ) -> None:
        check_session_id(session_id)
        if "\x00" in session_id:
            raise ValueError(
                f"session_id {describe_session_id(session_id)} holds a NUL character, "
                "which PostgreSQL text cannot store"
            )
        if (dsn is None) == (pool is None):
            raise TypeError("PostgresSession needs exactly one of dsn= and pool=")
        if dsn is not None and (not isinstance(dsn, str) or not dsn):
            raise TypeError(f"dsn must be a non-empty str, not {dsn!r}")
        if pool is not None and not isinstance(pool, AsyncConnectionPool):
            raise TypeError(
                f"pool must be a psycopg_pool.AsyncConnectionPool, not {type(pool).__name__}"
            )
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self.sessions_table = check_table_name(sessions_table, "sessions_table")
        self.messages_table = check_table_name(messages_table, "messages_table")
        self._dsn = dsn
        self._own_pool = pool
        self._pool_max_size = pool_max_size
        self._connect_timeout = connect_timeout
        self._cache_history = cache_history
        self._op_id_window = check_op_id_window(op_id_window)
        self._keep_replaced = check_keep_replaced(keep_replaced)
        self._history: HistoryCache | None = None
        self._skipped: dict[int, str] = {}
        self._closed = False
        self._loop_lock: tuple[weakref.ref[asyncio.AbstractEventLoop], asyncio.Lock] | None = None
        self._layout_wanted = check_layout(layout)
        self._sdk_layout = False  # known once the tables are (``_ready_pool``)
        self._sql = Statements(self.sessions_table, self.messages_table, self._keep_replaced)
        self._sdk = SdkStatements(self.sessions_table, self.messages_table, self._keep_replaced)
        self._fresh = Freshness(self.messages_table)
        self._stamp = Stamp()

    # --- session API ----------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[InputItem]:
        limit = self._read_limit(limit)
        self._check_open()
        if limit == 0:
            return []
        pool = await self._ready_pool()
        async with self._lock():
            try:
                if self._sdk_layout:
                    return await self._sdk_get_items(pool, limit)
                history = await self._read(pool, limit)
            except BaseException:
                self._history = None
                raise
            return history.hand_out(limit, kept=self._cache_history)

    async def add_items(self, items: list[InputItem], *, op_id: str | None = None) -> None:
        """Append ``items``, all or none; when ``op_id`` is among the latest
        ``op_id_window`` op ids this session applied, store nothing (a retried call)."""
        items = items_argument(items)
        op_id = check_op_id(op_id)
        self._check_open()
        if not items:
            return
        # Encoded before any I/O: an item that cannot be encoded raises TypeError naming
        # its position, and nothing is written.
        texts = encode_items(items)
        pool = await self._ready_pool()
        if self._sdk_layout:
            await self._sdk_add_items(pool, texts, op_id)
            return
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

    async def pop_item(self) -> InputItem | None:
        self._check_open()
        pool = await self._ready_pool()
        if self._sdk_layout:
            async with self._lock():
                return await self._finish_or_forget("pop_item", lambda: self._sdk_pop_item(pool))
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

    async def clear_session(self) -> None:
        self._check_open()
        pool = await self._ready_pool()
        if self._sdk_layout:
            async with self._lock():
                try:
                    await self._sdk_clear_session(pool)
                finally:
                    self._history = None
                self._skipped.clear()
            return

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

        async with self._lock():
            try:
                await self._finish("clear_session", clear)
            finally:
                self._history = None
            self._skipped.clear()

    async def revision(self) -> int:
        """The session's revision: one more after every committed change, never reused
        (not even after ``clear_session``), the same for every reader of the database."""
        self._check_open()
        pool = await self._ready_pool()
        current: Callable[[psycopg.AsyncConnection[Any]], Awaitable[int | None]]
        count: Callable[[psycopg.AsyncConnection[Any]], Awaitable[int]]
        if self._sdk_layout:
            await self._sdk_side_tables(pool)
            current, count, lock = self._sdk_current, self._sdk_count, self._sdk.lock_existing
        else:
            current, count = self._current_revision, self._count_revision
            lock = self._sql.lock_existing

        async def read() -> int:
            async with pool.connection() as conn:
                revision = await current(conn)
                if revision is not None:
                    return revision
                # Changed by a writer that does not count: count it now.
                async with conn.transaction():
                    await conn.execute(lock, (self.session_id,))
                    return await count(conn)

        return await self._finish("revision", read)

    async def _replace(self, replacement: Replacement[Any]) -> bool:
        texts = encode_items(replacement.items)
        self._check_open()
        pool = await self._ready_pool()
        steps: ReplaceSteps
        if self._sdk_layout:
            await self._sdk_side_tables(pool)
            steps = SdkReplace(self)
        else:
            steps = _HistcoreReplace(self, texts)
        stored = replacement.stored(texts)

        async def replace() -> bool:
            async with pool.connection() as conn:
                return await replace_rows(conn, steps, stored)

        async with self._lock():
            return await self._finish_or_forget("replace_suffix", replace)

    async def transcript(self) -> list[TranscriptEntry]:
        """Every item this session stored, in the order stored (row id), each with the
        revision that stored it and the one that removed it (None: live); see
        ``histcore.sessions.transcript``. Needs ``keep_replaced=True``: otherwise a
        ValueError."""
        if not self._keep_replaced:
            raise ValueError("transcript() needs a session made with keep_replaced=True")
        self._check_open()
        pool = await self._ready_pool()
        if self._sdk_layout:
            return await self._sdk_transcript(pool)
        session_id = self.session_id

        async def read() -> list[TranscriptEntry]:
            async with pool.connection() as conn, conn.transaction():
                # One snapshot for the three reads.
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor = await conn.execute(self._sql.all_rows, (session_id,))
                live = list(await cursor.fetchall())
                cursor = await conn.execute(self._sql.archived, (session_id,))
                archived = [(int(a), b, int(c)) for a, b, c in await cursor.fetchall()]
                cursor = await conn.execute(self._sql.writes, (session_id,))
                writes = [(int(a), int(b), int(c)) for a, b, c in await cursor.fetchall()]
            return merge(live, archived, writes)

        return await self._finish("transcript", read)

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

    # --- lifetime -------------------------------------------------------------------

    def close(self) -> None:
        """End this session object (the shared pool stays open). Idempotent."""
        self._closed = True
        self._history = None

    @property
    def skipped_row_ids(self) -> tuple[int, ...]:
        """Ids of the rows of this session skipped because they hold no item."""
        return self._skipped_ids()

    def __repr__(self) -> str:
        where = describe_dsn(self._dsn) if self._dsn is not None else "<pool>"
        return f"PostgresSession({describe_session_id(self.session_id)}, {where!r})"

    # --- plumbing ---------------------------------------------------------------------

    def _who(self) -> str:
        """This session as messages name it (a long id cut short)."""
        return f"PostgresSession {describe_session_id(self.session_id)}"

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"{self._who()} is closed")

    def _lock(self) -> asyncio.Lock:
        """This session's lock for the running loop: reads and writes through one
        session object take turns, so its history cache sees them in order."""
        loop = asyncio.get_running_loop()
        if self._loop_lock is None or self._loop_lock[0]() is not loop:
            self._loop_lock = (weakref.ref(loop), asyncio.Lock())
        return self._loop_lock[1]

    async def _ready_pool(self) -> Pool:
        try:
            if self._own_pool is not None:
                pool = self._own_pool
            else:
                assert self._dsn is not None
                pool = await shared_pool(
                    self._dsn, max_size=self._pool_max_size, timeout=self._connect_timeout
                )
            layout, exists = await find_layout(
                pool, self.sessions_table, self.messages_table, self._layout_wanted
            )
            if layout == SDK:
                # The SDK's tables are made only when asked for (layout="sdk").
                sdk = self._sdk
                await ensure_tables(pool, [] if exists else sdk.tables, sdk.tables_required)
            else:
                await ensure_tables(
                    pool, self._sql.schema, self._sql.required_columns, self._sql.indexes
                )
            self._sdk_layout = layout == SDK
        except (psycopg.Error, PoolTimeout) as exc:
            raise SessionError(f"{self._who()}: cannot prepare the tables: {exc}") from exc
        return pool

    def _failure(self, operation: str, exc: BaseException) -> SessionError:
        what = "nothing of the batch was written, or all of it" if operation == "add_items" else ""
        suffix = f" ({what})" if what else ""
        return SessionError(f"{self._who()}: {operation} failed{suffix}: {exc}")

    async def _finish_or_forget(self, name: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """``_finish(name, work)`` under the session's lock; a write that failed may have
        left the store other than the kept history says, so the history is forgotten."""
        try:
            return await self._finish(name, work)
        except BaseException:
            self._history = None
            raise

    async def _finish(self, operation: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run a write to its end even if the caller is cancelled meanwhile, so a
        cancelled caller never leaves a transaction whose outcome nobody learns; the
        cancellation is re-raised afterwards. Database errors become SessionError."""

        async def mapped() -> _T:
            try:
                return await work()
            except (psycopg.Error, PoolTimeout) as exc:
                raise self._failure(operation, exc) from exc

        return await finish_despite_cancellation(asyncio.ensure_future(mapped()))

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

    # --- reading --------------------------------------------------------------------

    async def _read(self, pool: Pool, limit: int | None) -> HistoryCache:
        for _ in range(_MAX_READ_ATTEMPTS):
            try:
                async with pool.connection() as conn:
                    return await self._synced(conn, limit)
            except _HistoryChanged:
                self._history = None
            except (psycopg.Error, PoolTimeout) as exc:
                raise self._failure("get_items", exc) from exc
        raise SessionError(
            f"{self._who()}: get_items gave up: the history kept "
            f"changing under {_MAX_READ_ATTEMPTS} consecutive reads"
        )

    async def _synced(self, conn: psycopg.AsyncConnection[Any], need: int | None) -> HistoryCache:
        history = self._history if self._cache_history else None
        if history is not None:
            generation, rows = await self._fetch(conn, history.last_id, _AFTER_ALL, None)
            if generation != history.stamp:
                history = None  # rows we hold were removed by someone: start over
            else:
                history.add_newer(self._decoded(rows))
        if history is None:
            # The newest rows and the generation in one statement, then older windows.
            window = read_window(need)
            generation, rows = await self._fetch(conn, BEFORE_ALL, _AFTER_ALL, window)
            fetched = self._decoded(rows)
            history = HistoryCache(stamp=generation)
            history.add_newer(fetched)
            history.floor = fetched.unread_below(window)
        if self._cache_history:
            self._history = history
        for upto, window in history.older_windows(need):
            generation, rows = await self._fetch(conn, BEFORE_ALL, upto, window)
            if generation != history.stamp:
                raise _HistoryChanged
            history.add_older(self._decoded(rows), window)
        return history

    async def _fetch(
        self, conn: psycopg.AsyncConnection[Any], after: int, upto: int, window: int | None
    ) -> tuple[int | None, list[tuple[int, str]]]:
        """The session's generation and its rows with ``after < id <= upto``, oldest
        first (the newest ``window`` of them when given), read in one statement."""
        session_id = self.session_id
        cursor = conn.cursor()
        await cursor.execute(self._sql.fetch, (session_id, session_id, after, upto, window))
        generation: int | None = None
        rows: list[tuple[int, str]] = []
        while chunk := await cursor.fetchmany(FETCH_CHUNK):
            generation = chunk[0][0]
            rows += [(row_id, text) for _, row_id, text in chunk]
        if not rows:
            # A later snapshot than the (empty) read: if nothing was removed up to it,
            # nothing was before it either; if something was, the cache is rebuilt.
            await cursor.execute(self._sql.generation, (session_id,))
            found = await cursor.fetchone()
            generation = None if found is None else found[0]
        rows.reverse()
        return generation, rows


class _HistcoreReplace(ReplaceSteps):
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
            generation, rows = await session._fetch(conn, history.last_id, _AFTER_ALL, None)
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
