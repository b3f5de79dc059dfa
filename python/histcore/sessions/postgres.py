"""``PostgresSession``: conversation history in a PostgreSQL database shared by many workers.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool). Sessions built from the same
DSN in one event loop share one connection pool (``shared_pool``); ``close_pools()``
closes them. The tables (``agent_sessions``, ``agent_messages`` with the item's exact
JSON text in ``message_text`` and a ``jsonb`` copy in ``message_data``, and the
revision, op-id and, with ``keep_replaced=True``, archive tables) are made on first use.

Here: the session API and its reads, which keep the decoded items and check the session
row's ``generation`` in the statement that fetches new rows. Its writes on these tables
are ``_postgres_writes``; on the OpenAI Agents SDK's ``SQLAlchemySession`` tables (found
there, or ``layout="sdk"``) it reads and writes as the SDK does (``_postgres_sdk``),
checking a stamp of the rows (``_postgres_freshness``). Layouts, concurrency and what is
not detected: docs/design.md, "Sessions" ("The PostgreSQL store").
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "PostgresSession needs psycopg 3 and psycopg-pool: pip install 'histcore[postgres]'"
    ) from exc

from histcore.exceptions import SessionError
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
from histcore.sessions._postgres_statements import SdkStatements, Statements
from histcore.sessions._postgres_writes import HistcoreReplace, HistcoreWrites
from histcore.sessions._transactions import (
    DEFAULT_OP_ID_WINDOW,
    OpIdAppending,
    Replacement,
    check_keep_replaced,
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
)
from histcore.sessions.sql_store import (
    AFTER_ALL,
    BEFORE_ALL,
    FETCH_CHUNK,
    HistoryCache,
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

# A read retries when removals by others keep changing the history under it.
_MAX_READ_ATTEMPTS = 10


class _HistoryChanged(Exception):
    """Rows were removed between two statements of one read: start the read over."""


# --- the session ----------------------------------------------------------------------


class PostgresSession(SdkLayout, HistcoreWrites, OpIdAppending, CompactionHook, _ClosableSession):
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

    async def _add(self, items: list[InputItem], op_id: str | None) -> None:
        # Encoded before any I/O: an item that cannot be encoded raises TypeError naming
        # its position, and nothing is written.
        texts = encode_items(items)
        pool = await self._ready_pool()
        if self._sdk_layout:
            await self._sdk_add_items(pool, texts, op_id)
        else:
            await self._histcore_add_items(pool, texts, op_id)

    async def pop_item(self) -> InputItem | None:
        self._check_open()
        pool = await self._ready_pool()
        if self._sdk_layout:
            async with self._lock():
                return await self._finish_or_forget("pop_item", lambda: self._sdk_pop_item(pool))
        return await self._histcore_pop_item(pool)

    async def clear_session(self) -> None:
        self._check_open()
        pool = await self._ready_pool()
        clear = self._sdk_clear_session if self._sdk_layout else self._histcore_clear_session
        async with self._lock():
            try:
                await clear(pool)
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
            steps = HistcoreReplace(self, texts)
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
            generation, rows = await self._fetch(conn, history.last_id, AFTER_ALL, None)
            if generation != history.stamp:
                history = None  # rows we hold were removed by someone: start over
            else:
                history.add_newer(self._decoded(rows))
        if history is None:
            # The newest rows and the generation in one statement, then older windows.
            window = read_window(need)
            generation, rows = await self._fetch(conn, BEFORE_ALL, AFTER_ALL, window)
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
