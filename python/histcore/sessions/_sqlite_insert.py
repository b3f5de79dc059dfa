"""How ``SQLiteStore.append`` inserts a batch: multi-row INSERTs binding the UTF-8 JSON
directly as TEXT, and what it has written so far (``Written``), which decides what the
history cache keeps of it and whether its WAL checkpoint is left for later."""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from histcore.sessions._codec import compact
from histcore.sessions.sql_store import PENDING_TEXT_BYTES

__all__ = ["Written", "insert_rows"]

# Appends of at least this much JSON leave their WAL checkpoint for later.
_DEFERRED_CHECKPOINT_BYTES = 4 << 20


@lru_cache(maxsize=64)
def insert_sql(table: str, rows: int, cast: bool) -> str:
    # CAST(blob AS TEXT) stores the UTF-8 bytes as TEXT as they are: no str is built
    # per row only to be encoded back to UTF-8 by the driver. Placeholders are the
    # nameless `?` only: Python 3.12.0-3.12.3 warn on numbered ones (`?1`) bound from a
    # sequence, an error under `-W error`.
    row = "(?, CAST(? AS TEXT))" if cast else "(?, ?)"
    return f"INSERT INTO {table} (session_id, message_data) VALUES {', '.join([row] * rows)}"


def insert_params(session_id: str, values: list[bytes] | list[str]) -> list[object]:
    """``session_id, value`` for each value, in the order of ``insert_sql``'s rows."""
    params: list[object] = [session_id] * (2 * len(values))
    params[1::2] = values
    return params


class Written:
    """What one ``append`` has inserted so far: how many rows and bytes of JSON, and
    the texts the history cache keeps of them (right-sized copies, while they fit in
    ``PENDING_TEXT_BYTES``; None past that, and the next read fetches the rows)."""

    __slots__ = ("bytes", "deferred", "kept", "rows")

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0
        self.kept: list[bytes] | None = []
        #: the WAL checkpoint of this write was left for ``checkpoint()``
        self.deferred = False

    def add(self, texts: list[bytes], keep: bool) -> None:
        size = sum(map(len, texts))
        self.rows += len(texts)
        self.bytes += size
        if not keep or self.kept is None or self.bytes > PENDING_TEXT_BYTES:
            self.kept = None
        else:
            self.kept += compact(texts)

    def large(self) -> bool:
        return self.bytes >= _DEFERRED_CHECKPOINT_BYTES


def insert_rows(
    conn: sqlite3.Connection,
    table: str,
    session_id: str,
    texts: list[bytes],
    *,
    cast: bool,
    rows_per_insert: int,
) -> None:
    """Insert one row of ``session_id`` per JSON text into ``table``, ``rows_per_insert``
    rows a statement; ``cast``: bind the UTF-8 bytes as they are (the file stores TEXT
    as UTF-8), else as str."""
    values: list[bytes] | list[str] = texts if cast else [text.decode() for text in texts]
    per = rows_per_insert
    full = len(values) - len(values) % per
    if full:
        sql = insert_sql(table, per, cast)
        for start in range(0, full, per):
            conn.execute(sql, insert_params(session_id, values[start : start + per]))
    if full < len(values):
        rest = values[full:]
        conn.execute(insert_sql(table, len(rest), cast), insert_params(session_id, rest))
