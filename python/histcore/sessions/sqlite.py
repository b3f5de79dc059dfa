"""``SQLiteSession``: the embedded default session store.

One SQLite connection per session object (WAL, busy timeout), opened by the first
operation and used from worker threads one operation at a time, so the event loop
never blocks on the database (not even on opening a locked file) and no connection is
opened per event loop or per thread. The tables are the OpenAI Agents
SDK's, so a database written by either library opens and continues in the other. The
session keeps the history it has read and later fetches only newer rows (see
``_sqlite_reads`` for how changes by other connections are detected).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from histcore._cancellation import finish_despite_cancellation
from histcore.exceptions import SessionError
from histcore.sessions._codec import encode_items_utf8
from histcore.sessions._compaction import CompactionHook
from histcore.sessions._sqlite_reads import read_only_error
from histcore.sessions._sqlite_store import SQLiteStore
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
from histcore.sessions.sql_store import logger
from histcore.sessions.transcript import TranscriptEntry

__all__ = ["SQLiteSession"]

_T = TypeVar("_T")


class SQLiteSession(OpIdAppending, CompactionHook, _ClosableSession):
    """A session stored in a SQLite file (or ``:memory:``), in the Agents SDK's tables.

    ``db_path``: a file, ``:memory:``, or a ``file:`` URI (``file:chat.db?mode=ro``).
    ``busy_timeout``: seconds a write waits for another connection's write to finish.
    ``cache_history``: keep the decoded history between reads (the default) so a read
    fetches and decodes only rows appended since the previous one.

    The constructor only checks its arguments: the file is opened (and the tables made)
    by the first operation, in a worker thread, so a locked file never stalls the event
    loop; an error opening it (a SessionError) comes from that operation, and the next
    one tries again. A database that cannot be written (a read-only file or directory,
    or a URI with ``mode=ro``) is opened read-only: reads work, and every write raises
    a SessionError saying so.

    ``revision()``, ``add_items(items, op_id=...)`` and ``replace_suffix`` are history
    transactions (``_sqlite_revisions``): the revision counts committed changes and is
    never reused; an op id among the session's latest ``op_id_window`` (1000) applied
    ones stores nothing again. With ``keep_replaced=True`` the rows ``replace_suffix``,
    ``pop_item`` and ``clear_session`` remove are archived (``_sqlite_archive``) and
    ``transcript()`` returns every item stored.

    ``close()`` it when done, or use it as a (sync or async) context manager; after
    that every operation raises ``SessionClosedError``. Rows that hold no item
    (``histcore.sessions.rows``), whoever wrote them, are skipped with a logged warning
    and listed in ``skipped_row_ids``; ``pop_item`` leaves them where they are and
    removes only the row it returns.
    """

    # A read hands out copies of the history cache, or rows decoded for it alone.
    _returns_fresh_items = True
    _answers_compaction = True

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = SESSIONS_TABLE,
        messages_table: str = MESSAGES_TABLE,
        session_settings: SessionSettings | None = None,
        *,
        busy_timeout: float = 30.0,
        cache_history: bool = True,
        op_id_window: int = DEFAULT_OP_ID_WINDOW,
        keep_replaced: bool = False,
    ) -> None:
        check_session_id(session_id)
        if not isinstance(db_path, (str, os.PathLike)):
            raise TypeError(f"db_path must be a str or a path, not {type(db_path).__name__}")
        self.session_id = session_id
        self.db_path = db_path
        self.session_settings = session_settings or SessionSettings()
        self.sessions_table = sessions_table
        self.messages_table = messages_table
        self._checkpoints: set[asyncio.Future[None]] = set()
        # Opens nothing yet (see the class docstring).
        self._store = SQLiteStore(
            session_id,
            db_path,
            sessions_table,
            messages_table,
            busy_timeout,
            cache_history,
            check_op_id_window(op_id_window),
            check_keep_replaced(keep_replaced),
        )

    # --- session API ----------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[InputItem]:
        limit = self._read_limit(limit)
        self._check_open()
        return await self._in_worker("get_items", self._store.read, limit)

    async def _add(self, items: list[InputItem], op_id: str | None) -> None:
        def write() -> bool:
            # Encoded a chunk at a time inside one transaction (a batch of any size
            # never holds the text of all of it): an item that cannot be encoded raises
            # TypeError naming its position, and nothing is written.
            return self._store.append(items, op_id)

        if await self._finish_in_worker("add_items", write):
            self._checkpoint_soon()

    async def pop_item(self) -> InputItem | None:
        self._check_open()
        return await self._finish_in_worker("pop_item", self._store.pop)

    async def clear_session(self) -> None:
        self._check_open()
        await self._finish_in_worker("clear_session", self._store.clear)

    async def revision(self) -> int:
        """The session's revision: one more after every committed change, never reused
        (not even after ``clear_session``), the same for every reader of the file."""
        self._check_open()
        return await self._in_worker("revision", self._store.revision)

    async def transcript(self) -> list[TranscriptEntry]:
        """Every item this session stored, in the order stored (row id), each with the
        revision that stored it and the one that removed it (None: live); see
        ``histcore.sessions.transcript``. Needs ``keep_replaced=True``: otherwise a
        ValueError."""
        if not self._store._keep_replaced:
            raise ValueError("transcript() needs a session made with keep_replaced=True")
        self._check_open()
        return await self._in_worker("transcript", self._store.transcript)

    async def _replace(self, replacement: Replacement[Any]) -> bool:
        texts = encode_items_utf8(replacement.items)
        self._check_open()
        return await self._finish_in_worker(
            "replace_suffix", self._store.replace_suffix, replacement.stored(texts)
        )

    # --- lifetime -------------------------------------------------------------------

    def _check_open(self) -> None:
        self._store.check_open()

    def close(self) -> None:
        """Close the connection; waits for an operation in progress. Idempotent."""
        self._store.close()

    async def _aclose(self) -> None:
        # Closing waits for the worker that may still hold the connection.
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    @property
    def skipped_row_ids(self) -> tuple[int, ...]:
        """Ids of the rows of this session skipped because they hold no item."""
        return self._store.skipped_row_ids

    def __repr__(self) -> str:
        return f"SQLiteSession({describe_session_id(self.session_id)}, {os.fspath(self.db_path)!r})"

    # --- running blocking work ---------------------------------------------------------

    def _checkpoint_soon(self) -> None:
        """Checkpoint the WAL in a worker after a large write, without awaiting it."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, self._guarded("checkpoint", self._store.checkpoint))
        self._checkpoints.add(future)
        future.add_done_callback(self._checkpoint_done)

    def _checkpoint_done(self, future: asyncio.Future[None]) -> None:
        self._checkpoints.discard(future)
        if not future.cancelled() and future.exception() is not None:
            # Harmless: SQLite checkpoints again on a later commit.
            logger.warning(
                "session %s: WAL checkpoint failed: %s",
                describe_session_id(self.session_id),
                future.exception(),
            )

    def _guarded(self, operation: str, work: Callable[..., _T], *args: Any) -> Callable[[], _T]:
        def run() -> _T:
            try:
                return work(*args)
            except sqlite3.Error as exc:
                if read_only_error(exc):
                    reason = f"the database {os.fspath(self.db_path)!r} is read-only ({exc})"
                else:
                    reason = str(exc)
                raise SessionError(f"{self._store.who()}: {operation} failed: {reason}") from exc

        return run

    async def _in_worker(self, operation: str, work: Callable[..., _T], *args: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._guarded(operation, work, *args))

    async def _finish_in_worker(self, operation: str, work: Callable[..., _T], *args: Any) -> _T:
        """Run a write to completion even if the caller is cancelled meanwhile.

        A thread cannot be interrupted, so a cancelled caller would otherwise not know
        whether its write happened. The cancellation is re-raised once the write is over.
        """
        loop = asyncio.get_running_loop()
        return await finish_despite_cancellation(
            loop.run_in_executor(None, self._guarded(operation, work, *args))
        )
