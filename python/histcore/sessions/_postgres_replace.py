"""``PostgresSession.replace_suffix``: one transaction body for both table layouts.

Under the session row's lock the revision is compared with the expected one; then the
positions come from the kept history when it holds the whole session and is current by
the layout's own freshness rule, the one its incremental read uses (histcore's tables:
the session row's ``generation``; the SDK's: the stamp of ``_postgres_freshness``),
brought up to date with the rows appended since; otherwise every row is decoded. After
the commit the kept history drops the removed rows and takes the stamp the replacement
left; the next read fetches the new rows, whose ids are above every id it holds. A
write that fails forgets the kept history (``PostgresSession._finish_or_forget``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import psycopg

from histcore.sessions._transactions import Replacement
from histcore.sessions.sql_store import DecodedRows, HistoryCache

__all__ = ["ReplaceSteps", "replace_rows"]

_Conn = psycopg.AsyncConnection[Any]


class ReplaceSteps(ABC):
    """One layout's statements of a replacement, each inside its transaction."""

    @abstractmethod
    async def lock(self, conn: _Conn) -> int:
        """Lock the session row (made when missing); the revision, a change by a writer
        that does not count counted first."""

    @abstractmethod
    async def kept(self, conn: _Conn) -> HistoryCache | None:
        """Under the lock: the kept history made current, when it holds the whole
        session and only appends happened since it was read; else None (forgotten)."""

    @abstractmethod
    async def every_row(self, conn: _Conn) -> DecodedRows:
        """Every row of the session, decoded, in the layout's order."""

    @abstractmethod
    async def write(self, conn: _Conn, doomed: list[int], texts: list[str]) -> None:
        """Remove (archiving with ``keep_replaced``) the rows ``doomed``, append
        ``texts`` and count the change."""

    @abstractmethod
    def committed(self, history: HistoryCache | None, doomed: list[int]) -> None:
        """After the commit: ``history`` (the kept history the positions came from, or
        None) without the rows ``doomed``, stamped as the replacement left the rows; or
        forgotten."""


async def replace_rows(conn: _Conn, steps: ReplaceSteps, replacement: Replacement[str]) -> bool:
    """``replacement`` in one transaction on ``conn``: False, nothing written, when the
    revision is not the expected one (or ``from_end`` counts past the start)."""
    history: HistoryCache | None = None
    async with conn.transaction():
        if await steps.lock(conn) != replacement.expected_revision:
            return False
        # Not with ``prune_prefix``, which must not see the kept objects.
        if replacement.prune_prefix is None:
            history = await steps.kept(conn)
        doomed = replacement.doomed(history or await steps.every_row(conn))
        if doomed is None or not replacement.changes(doomed):
            return doomed is not None  # None: fewer items than ``from_end`` counts
        await steps.write(conn, doomed, replacement.items)
    steps.committed(history, doomed)
    return True
