"""What histcore's SQL-backed stores share, whatever the database.

``check_table_name`` is the one rule for the table names a store puts into its SQL (the
session stores and the run-state stores alike). The rest serves the session stores
(``_sqlite_store`` and ``postgres``), which keep only their SQL and connections:
``HistoryCache`` (the decoded rows with ``floor < id <= last_id``, extended back by
``older_windows``/``add_older``; ``hand_out`` gives copies), ``SkipsCorruptRows``
(decoding fetched rows, logging the corrupt ones once) and ``NewestPop`` (a pop of the
newest row that decodes, removing only it).

Rule: row ids only grow within a session (AUTOINCREMENT in SQLite, an identity column
taken under the session row's lock in PostgreSQL), which is what makes "the rows above
``last_id``" exactly the rows a cache has not seen.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from histcore.engine.collector import collector_paused
from histcore.engine.items import deep_copy_items
from histcore.sessions._codec import CorruptRow, decode_id_rows, decode_row
from histcore.sessions.base import describe_session_id

if TYPE_CHECKING:
    from histcore.sessions._sqlite_freshness import Stamp

__all__ = [
    "AFTER_ALL",
    "BEFORE_ALL",
    "FETCH_CHUNK",
    "PENDING_TEXT_BYTES",
    "DecodedRows",
    "HistoryCache",
    "NewestPop",
    "SkipsCorruptRows",
    "check_table_name",
    "logger",
    "read_window",
]

logger = logging.getLogger("histcore.sessions")

#: Below every row id either database assigns.
BEFORE_ALL = -(2**63)
#: Above every row id either database assigns.
AFTER_ALL = 2**63 - 1
#: JSON text of appended rows a history cache keeps for the next read to decode (see
#: ``HistoryCache.add_appended``); past this the read fetches the rows from the table.
PENDING_TEXT_BYTES = 1 << 20
#: Rows fetched at a time while decoding, so the raw text of a huge history is never
#: held all at once next to its decoded items.
FETCH_CHUNK = 4096
# Smallest window when reading the latest rows with a limit: a few rows more cost
# nothing, a second round trip for one skipped corrupt row does.
_MIN_WINDOW = 16

# Table names go into SQL text, so only plain identifiers are accepted. At most 51
# characters: PostgreSQL silently cuts identifiers longer than 63 bytes, so a cap well
# below that keeps every name exactly the table it names; and one rule for every store
# means a name that works with SQLite works with PostgreSQL too.
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,50}\Z")


def check_table_name(name: object, argument: str) -> str:
    """``name`` if it is a plain SQL identifier of at most 51 characters; otherwise a
    ValueError naming ``argument``, the parameter it was passed as."""
    if not isinstance(name, str) or not _TABLE_NAME.match(name):
        raise ValueError(
            f"{argument} must be a plain SQL identifier (a letter or an underscore, then "
            f"letters, digits or underscores, 51 characters at most), got {name!r}"
        )
    return name


def read_window(need: int | None, held: int = 0) -> int | None:
    """How many of the newest rows below the cache to read when it holds ``held`` items
    and a read needs ``need`` (None: all of them, no window)."""
    return None if need is None else max(need - held, _MIN_WINDOW)


@dataclass
class DecodedRows:
    """Decoded result of one query: the good items and the span of all rows read."""

    ids: list[int] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    # Rows read, the corrupt (skipped) ones included, and their lowest and highest id.
    rows: int = 0
    low: int | None = None
    high: int | None = None

    def reverse(self) -> None:
        """Oldest first, after rows read newest first."""
        self.ids.reverse()
        self.items.reverse()

    def unread_below(self, window: int | None) -> int | None:
        """The new floor after reading the newest ``window`` rows up to some id: the
        rows below the oldest one read, or None when the window was not filled (every
        row down to the session's first was read)."""
        if window is None or self.rows < window or self.low is None:
            return None
        return self.low - 1


@dataclass
class HistoryCache:
    """Decoded rows of one session with ``floor < id <= last_id`` (``floor`` None: from
    the first row), oldest first; corrupt rows are counted in ``rows`` but not held."""

    ids: list[int] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    # Rows in (floor, last_id], the corrupt (skipped) ones included.
    rows: int = 0
    last_id: int = BEFORE_ALL
    floor: int | None = None
    # What the backend compares to know the cache still matches the table: SQLite's
    # PRAGMA data_version, PostgreSQL's session generation.
    stamp: int | None = None
    # SQLite: what the rows were read under (``_sqlite_freshness.Stamp``: the schema,
    # the rewrite generation, the file, the newest row with id <= last_id).
    freshness: Stamp | None = None
    # Rows appended through this store and not decoded yet: the session's rows in
    # (appended_after, last_id] (None: there are none). An append pays no decode, the
    # next read does it: from their JSON text, kept while it is small (pending_ids,
    # pending_texts, at most PENDING_TEXT_BYTES in all), else (texts_dropped) from the
    # rows, read back from the table.
    appended_after: int | None = None
    pending_ids: list[int] = field(default_factory=list)
    pending_texts: list[bytes] = field(default_factory=list)
    pending_bytes: int = 0
    texts_dropped: bool = False

    def hand_out(self, limit: int | None, kept: bool) -> list[Any]:
        """The latest ``limit`` items (all when None) as objects the caller owns.

        ``kept``: the cache is kept for later reads, so the caller gets copies, built
        with the collector paused; otherwise the items were decoded for this call only
        and nobody else holds them.
        """
        items = self.items if limit is None else self.items[-limit:]
        if not kept:
            return items
        # Decoded rows nest at most MAX_DEPTH deep (deeper ones are skipped as corrupt),
        # so the engine copies every one of them.
        copied: list[Any]
        with collector_paused():
            copied = deep_copy_items(items)
        return copied

    def add_newer(self, fetched: DecodedRows) -> None:
        """Append rows read above ``last_id``."""
        self.ids += fetched.ids
        self.items += fetched.items
        self.rows += fetched.rows
        if fetched.high is not None:
            self.last_id = max(self.last_id, fetched.high)

    def older_windows(self, need: int | None) -> Iterator[tuple[int, int | None]]:
        """The reads that extend the cache back until it holds ``need`` items (None:
        all) or starts at the session's first row, as ``(upto, window)``: the newest
        ``window`` rows (all when None) with ``id <= upto``. The caller passes each
        read to ``add_older`` before asking for the next; corrupt rows do not count
        towards ``need``, so a window with some of them is followed by another."""
        while self.floor is not None and (need is None or len(self.items) < need):
            yield self.floor, read_window(need, len(self.items))

    def add_older(self, fetched: DecodedRows, window: int | None) -> None:
        """Prepend the rows of one ``older_windows`` read."""
        self.ids[:0] = fetched.ids
        self.items[:0] = fetched.items
        self.rows += fetched.rows
        self.floor = fetched.unread_below(window)

    def add_appended(self, first: int, rows: int, texts: list[bytes] | None) -> None:
        """Note ``rows`` rows ``first, first + 1, ...`` just appended through this store,
        to be decoded by the next read (``SQLiteStore._decode_pending``), with
        their ``texts`` (right-sized: they are kept) or None when they were not kept.

        Texts are kept up to ``PENDING_TEXT_BYTES`` in all, enough for the turns of a
        conversation between two reads; past that every kept text is dropped, and the
        next read fetches the rows instead (so a session written to, and not read,
        holds no more than that of what it wrote).
        """
        if self.appended_after is None:
            self.appended_after = self.last_id
        size = 0 if texts is None else sum(map(len, texts))
        if texts is None or self.pending_bytes + size > PENDING_TEXT_BYTES:
            self.pending_ids = []
            self.pending_texts = []
            self.pending_bytes = 0
            self.texts_dropped = True
        elif not self.texts_dropped:
            self.pending_ids += range(first, first + rows)
            self.pending_texts += texts
            self.pending_bytes += size
        self.rows += rows
        self.last_id = first + rows - 1

    def appended_decoded(self, fetched: DecodedRows) -> None:
        """Take the decoded rows appended through this store; none is pending now."""
        self.ids += fetched.ids
        self.items += fetched.items
        self.appended_after = None
        self.pending_ids = []
        self.pending_texts = []
        self.pending_bytes = 0
        self.texts_dropped = False

    def forget_replaced(self, removed: list[int]) -> bool:
        """Drop the rows a ``replace_suffix`` through this store just deleted: a run of
        the oldest rows held (a pruned prefix) and a run of the newest (the suffix), of
        a cache that holds the whole session (``doomed_rows`` of its ids). False, and
        nothing dropped, when they are not (the cache no longer matches the table)."""
        newest = 0
        while (
            newest < len(removed)
            and newest < len(self.ids)
            and self.ids[-1 - newest] == removed[-1 - newest]
        ):
            newest += 1
        oldest = len(removed) - newest
        if self.ids[:oldest] != removed[:oldest]:
            return False
        del self.ids[:oldest], self.items[:oldest]
        if newest:
            del self.ids[-newest:], self.items[-newest:]
        self.rows -= len(removed)
        return True

    def forget_popped(self, removed: list[int]) -> bool:
        """Drop the rows a pop through this store just deleted; False when they were not
        the newest rows the cache holds, so it no longer matches the table."""
        gone = set(removed)
        while self.ids and self.ids[-1] in gone:
            self.ids.pop()
            self.items.pop()
        self.rows -= sum(1 for row_id in removed if self.floor is None or row_id > self.floor)
        return not removed or not self.ids or min(removed) > self.ids[-1]


class SkipsCorruptRows:
    """Mixin of a store that decodes rows, leaving out those that hold no item (not
    JSON text, not JSON, nested too deeply, or not an object: ``rows.decode_stored``).

    The class sets ``session_id``, ``messages_table`` and ``_skipped = {}`` (row id ->
    reason, cleared with the session); each skipped row is logged once, when first met.
    Not locked: a store used from several threads calls these under its own lock.
    """

    session_id: str
    messages_table: str
    _skipped: dict[int, str]

    def _skip(self, row_id: int, reason: str) -> None:
        if row_id not in self._skipped:
            self._skipped[row_id] = reason
            logger.warning(
                "session %s: skipped row %d of %s: %s",
                describe_session_id(self.session_id),
                row_id,
                self.messages_table,
                reason,
            )

    def _skipped_ids(self) -> tuple[int, ...]:
        """The ids of the skipped rows, ascending."""
        return tuple(sorted(self._skipped))

    def _decode_into(self, result: DecodedRows, rows: list[tuple[int, Any]]) -> None:
        """Decode ``(id, message_data)`` rows onto ``result``, in the order given."""
        if not rows:
            return
        result.rows += len(rows)
        ends = (rows[0][0], rows[-1][0])
        low, high = min(ends), max(ends)
        result.low = low if result.low is None else min(result.low, low)
        result.high = high if result.high is None else max(result.high, high)
        with collector_paused():
            ids, items, corrupt = decode_id_rows(rows)
        result.ids += ids
        result.items += items
        for row_id, reason in corrupt:
            self._skip(row_id, reason)

    def _decoded(self, rows: list[tuple[int, Any]]) -> DecodedRows:
        result = DecodedRows()
        self._decode_into(result, rows)
        return result


class NewestPop:
    """One pop: the newest row that holds an item, looked for newest first. Rows on the
    way that hold none (see ``rows.decode_stored``) are skipped, logged, and left where
    they are: a pop removes only the row it returns."""

    def __init__(self, store: SkipsCorruptRows) -> None:
        self._store = store
        #: the id of the row popped (one at most)
        self.removed: list[int] = []
        self.item: Any = None
        self.over = False
        #: the next row to look at is the newest with an id below this
        self.below = AFTER_ALL

    def take(self, row: tuple[int, Any] | None) -> bool:
        """The newest ``(id, message_data)`` row below ``below``, or None when there is
        none; True when it is the row to pop, which the caller then deletes."""
        if row is None:
            self.over = True
            return False
        row_id, data = row
        self.below = row_id
        try:
            self.item = decode_row(data)
        except CorruptRow as exc:
            self._store._skip(row_id, str(exc))
            return False
        self.removed.append(row_id)
        self.over = True
        return True
