"""The SDK's ``SQLAlchemySession`` read on PostgreSQL, fetching only the new rows.

Each session object keeps what its last unlimited read decoded with the ``Stamp`` of
those rows (``sessions/_postgres_freshness``, the one freshness rule for the SDK's
layout: their count and a sum of per-row hashes of ``(id, xmin)``). A read runs that
rule's probe through the SDK's own session context (``exec_driver_sql``: asyncpg's
``$n`` or psycopg's ``%s``): one statement, one snapshot, which gives the stamp of the
rows up to the newest kept id and the rows after it in the SDK's order. When the kept
rows are intact and the new ones sort after them (``created_at`` not older than the
newest kept one), only those are decoded and appended; otherwise (a pop, clear, UPDATE,
a back-dated row, another read meanwhile) the whole history is read again, stamped.
A read hands out a fresh copy. Any error forgets the kept items and leaves the read to
the SDK. What is not seen: docs/design.md, "Drop-in accelerator" ("The other stores'
reads").
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from histcore.openai_agents._handouts import can_keep
from histcore.openai_agents._session_read import fresh_copy
from histcore.sessions._postgres_freshness import Freshness, Stamp

__all__ = ["PostgresHistories", "style_of"]

Decode = Callable[[list[Any]], list[Any]]


def style_of(dialect: Any) -> str | None:
    """The freshness rule's parameter style for a SQLAlchemy dialect, or None when it is
    not PostgreSQL through asyncpg or psycopg (the read is then a whole one)."""
    if dialect.name != "postgresql":
        return None
    return {"numeric_dollar": "numeric_dollar", "pyformat": "format", "format": "format"}.get(
        dialect.paramstyle
    )


def _texts(rows: Sequence[Sequence[Any]]) -> list[Any]:
    """The ``(message_data,)`` of ``(id, message_data, hash)`` rows."""
    return list(zip(map(itemgetter(1), rows)))


class _Kept:
    """One session object's last read: ``items`` of the rows ``stamp`` covers, on
    ``where`` (the engine, table and session id it was read for)."""

    __slots__ = ("items", "stamp", "version", "where")

    def __init__(self, where: tuple[Any, ...], items: list[Any], stamp: Stamp) -> None:
        self.where, self.items, self.stamp = where, items, stamp
        #: bumped at each change of ``items``: a probe made before it is stale
        self.version = 0


class PostgresHistories:
    """The kept read of each session object (weakly keyed; dropped with ``install``)."""

    def __init__(self) -> None:
        self._kept: weakref.WeakKeyDictionary[Any, _Kept] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    can_keep = staticmethod(can_keep)

    def forget(self, session: Any) -> None:
        with self._lock:
            self._kept.pop(session, None)

    async def read(self, session: Any, sess: Any, style: str, decode: Decode) -> list[Any]:
        """The unlimited read of ``session`` on the SQLAlchemy ``sess`` (an AsyncSession
        of the SDK's own context), through the kept items."""
        conn = await sess.connection()
        table = conn.dialect.identifier_preparer.format_table(session._messages)
        rule = Freshness(table, style)
        where = (session._engine, table, session.session_id)

        async def execute(sql: str, params: Sequence[Any]) -> Sequence[Sequence[Any]]:
            result = await conn.exec_driver_sql(sql, tuple(params))
            return list(result.all())

        with self._lock:
            kept = self._kept.get(session)
            if kept is not None and (kept.where != where or kept.stamp.last_id is None):
                kept = None
            version = None if kept is None else kept.version
        if kept is not None:
            probe = await rule.run_probe(execute, session.session_id, kept.stamp)
            with self._lock:
                if (
                    self._kept.get(session) is kept
                    and kept.version == version
                    and probe.extends(kept.stamp)
                ):
                    if probe.rows:
                        kept.items += decode(_texts(probe.rows))
                        kept.stamp = kept.stamp.extended(probe.rows)
                        kept.version += 1
                    return fresh_copy(kept.items)
        sql, params = rule.read_all(session.session_id)
        rows = await execute(sql, params)
        items = decode(_texts(rows))
        with self._lock:
            self._kept[session] = _Kept(where, items, Stamp.of(rows))
            return fresh_copy(items)
