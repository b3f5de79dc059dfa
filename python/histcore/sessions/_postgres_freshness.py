"""What changed since a read, on the OpenAI Agents SDK's ``SQLAlchemySession`` tables in
PostgreSQL: the one freshness rule for that layout (histcore's ``PostgresSession`` and
the drop-in's reader of the SDK's session both use it).

The SDK bumps nothing on a write, so a reader keeps a ``Stamp`` of the session's rows
with ``id <= last_id``: how many, and the exact sum of a 64-bit hash of each row's
``(id, xmin)`` (``ROW_HASH``; every UPDATE changes it). ``Freshness(messages).probe`` is
one statement, one snapshot: that stamp recomputed on the server, and the rows with
``id > last_id`` in the SDK's order ``(created_at, id)``. ``Probe.extends(stamp)``: the
held rows are intact and the new ones sort after them, so ``rows`` is exactly what to
append; otherwise read everything again (``read_all``). Statements are ``(sql, params)``
for psycopg (``style="format"``) or asyncpg (``"numeric_dollar"``); ``run_probe`` and
``run_whole`` run them through any ``async execute(sql, params) -> rows``. Details:
docs/design.md, "The PostgreSQL store" ("Freshness").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ROW_HASH", "Execute", "Freshness", "Probe", "Stamp", "psycopg_execute"]

#: Runs one statement and returns all its rows (tuples).
Execute = Callable[[str, Sequence[Any]], Awaitable[Sequence[Sequence[Any]]]]

# One row's fingerprint: its id and the transaction that wrote this version of it.
ROW_HASH = "hashint8extended(id::int8, xmin::text::int8)"


@dataclass(frozen=True)
class Stamp:
    """The session's rows with ``id <= last_id`` (all rows when read whole): ``rows`` of
    them, and ``digest``, the sum of their row hashes. ``last_id`` None: no row."""

    rows: int = 0
    digest: int = 0
    last_id: int | None = None

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> Stamp:
        """The stamp of rows read whole, each ``(id, ..., hash)`` (hash last)."""
        if not rows:
            return cls()
        return cls(len(rows), sum(int(row[-1]) for row in rows), max(int(row[0]) for row in rows))

    def extended(self, rows: Sequence[Sequence[Any]]) -> Stamp:
        """This stamp after appending ``rows`` (``(id, ..., hash)``, ids above last_id)."""
        if not rows:
            return self
        added = Stamp.of(rows)
        assert added.last_id is not None
        return Stamp(self.rows + added.rows, self.digest + added.digest, added.last_id)

    def without(self, row_hash: int) -> Stamp:
        """This stamp after one of its rows (of hash ``row_hash``) was deleted: it still
        covers ``id <= last_id``, as ids are never handed out again."""
        return Stamp(self.rows - 1, self.digest - row_hash, self.last_id)


@dataclass(frozen=True)
class Probe:
    """A probe's answer: the stamp of ``id <= last_id`` now, whether the new rows sort
    after every held one, and the new rows ``(id, message_data, hash)`` in order."""

    old: Stamp
    in_order: bool
    rows: list[tuple[int, Any, int]]

    def extends(self, stamp: Stamp) -> bool:
        """Whether a reader holding ``stamp`` may append ``rows`` and be current."""
        return self.in_order and self.old == stamp


class Freshness:
    """The statements of the rule for one messages table (a checked identifier)."""

    def __init__(self, messages: str, style: str = "format") -> None:
        if style not in ("format", "numeric_dollar"):
            raise ValueError(f"style must be 'format' or 'numeric_dollar', got {style!r}")
        self.messages = messages
        self._numeric = style == "numeric_dollar"

    def _sql(self, sql: str, params: tuple[Any, ...], order: tuple[int, ...]) -> tuple[str, Any]:
        """``sql`` with ``{0}``, ``{1}``... placeholders, for the style: psycopg's ``%s``
        takes the parameters in the order they appear (``order``), asyncpg's ``$n`` once."""
        if self._numeric:
            return sql.format(*(f"${n + 1}" for n in range(len(params)))), params
        return sql.format(*(["%s"] * len(params))), tuple(params[n] for n in order)

    def read_all(self, session_id: str) -> tuple[str, Any]:
        """Every row ``(id, message_data, hash)`` of the session, in the SDK's order;
        ``Stamp.of`` them is the stamp to keep."""
        return self._sql(
            f"SELECT id, message_data, {ROW_HASH} FROM {self.messages} "
            "WHERE session_id = {0} ORDER BY created_at, id",
            (session_id,),
            (0,),
        )

    def probe(self, session_id: str, stamp: Stamp) -> tuple[str, Any]:
        """One statement: the stamp of ``id <= stamp.last_id`` and the newer rows (see
        ``Probe``; ``parse_probe`` reads its rows). Needs ``stamp.last_id``."""
        if stamp.last_id is None:
            raise ValueError("a stamp without rows has nothing to probe: read_all")
        return self._sql(
            "WITH old AS (SELECT count(*) AS n, coalesce(sum(" + ROW_HASH + "), 0) AS digest, "
            f"max(created_at) AS newest FROM {self.messages} "
            "WHERE session_id = {0} AND id <= {1}), "
            f"new AS (SELECT id, message_data, created_at, {ROW_HASH} AS h FROM {self.messages} "
            "WHERE session_id = {0} AND id > {1}) "
            "SELECT old.n, old.digest, (SELECT min(created_at) FROM new) >= old.newest, "
            "new.id, new.message_data, new.h FROM old LEFT JOIN new ON true "
            "ORDER BY new.created_at, new.id",
            (session_id, stamp.last_id),
            (0, 1, 0, 1),
        )

    def parse_probe(self, stamp: Stamp, rows: Sequence[Sequence[Any]]) -> Probe:
        """The ``Probe`` of a probe statement's rows (for ``stamp``)."""
        count, digest, in_order = rows[0][0], rows[0][1], rows[0][2]
        new = [(int(row[3]), row[4], int(row[5])) for row in rows if row[3] is not None]
        old = Stamp(int(count), int(digest), stamp.last_id) if count else Stamp()
        # NULL when either side has no row: nothing to be out of order with.
        return Probe(old, in_order is not False, new)

    def whole(self, session_id: str) -> tuple[str, Any]:
        """The stamp of all the session's rows, as one row ``(rows, digest, last_id)``."""
        return self._sql(
            "SELECT count(*), coalesce(sum(" + ROW_HASH + "), 0), max(id) "
            f"FROM {self.messages} WHERE session_id = {{0}}",
            (session_id,),
            (0,),
        )

    @staticmethod
    def parse_whole(row: Sequence[Any]) -> Stamp:
        count, digest, last_id = row
        return Stamp(int(count), int(digest), None if last_id is None else int(last_id))

    async def run_probe(self, execute: Execute, session_id: str, stamp: Stamp) -> Probe:
        """``probe`` run through ``execute``."""
        sql, params = self.probe(session_id, stamp)
        return self.parse_probe(stamp, await execute(sql, params))

    async def run_whole(self, execute: Execute, session_id: str) -> Stamp:
        """``whole`` run through ``execute``."""
        sql, params = self.whole(session_id)
        return self.parse_whole((await execute(sql, params))[0])


def psycopg_execute(conn: Any, chunk: int = 4096) -> Execute:
    """An ``Execute`` on a psycopg ``AsyncConnection`` (fetched ``chunk`` rows at a time)."""

    async def execute(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = conn.cursor()
        await cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = []
        while batch := await cursor.fetchmany(chunk):
            rows += batch
        return rows

    return execute
