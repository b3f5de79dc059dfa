"""What the parts of ``PostgresSession`` share (``PostgresBase``): the session's state,
set by ``PostgresSession.__init__``; its lock, which the reads and writes of one
session object take in turn; and ``_finish``, which runs an operation to its end even
when its caller is cancelled, a database error becoming a one-line SessionError. The
layout mixins (``_postgres_sdk``, ``_postgres_writes``) and the session derive from it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg_pool import PoolTimeout

from histcore._cancellation import finish_despite_cancellation
from histcore.exceptions import SessionClosedError, SessionError
from histcore.sessions._postgres_freshness import Freshness, Stamp
from histcore.sessions._postgres_statements import SdkStatements, Statements
from histcore.sessions.base import describe_session_id
from histcore.sessions.sql_store import HistoryCache, SkipsCorruptRows

__all__ = ["PostgresBase"]

_T = TypeVar("_T")


class PostgresBase(SkipsCorruptRows):
    """The state and plumbing of ``PostgresSession`` (see the module docstring)."""

    _sql: Statements
    _sdk: SdkStatements
    _fresh: Freshness
    # The kept history; on the SDK's tables ``_stamp`` says which rows it holds.
    _history: HistoryCache | None
    _stamp: Stamp
    _cache_history: bool
    _keep_replaced: bool
    _op_id_window: int
    _closed: bool
    _loop_lock: tuple[weakref.ref[asyncio.AbstractEventLoop], asyncio.Lock] | None

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
