"""Revisions and op ids of SQLite sessions, in two side tables next to the SDK's.

The SDK's tables stay exactly as they are; histcore keeps, per (messages table, session)::

    histcore_revisions(messages_table, session_id, revision, last_id, ops)
    histcore_op_ids(messages_table, session_id, op_id, seq)

Both are made by the first write that needs them, in its transaction: a file made before
them, or by the SDK, is migrated by its first histcore write (opened read-only, it reads
revision 0 until then). ``last_id`` is the newest row id histcore counted; row ids are
never reused, so a different newest id means another program appended, popped or
cleared, and the next histcore transaction counts that as one more revision
(``record``). ``ops`` counts the op ids applied, each keeping its number (``seq``): the
window is one range delete. Details: docs/design.md, "History transactions".
"""

from __future__ import annotations

import sqlite3

from histcore.sessions._sqlite_schema import made_if_missing, side_table, unless_missing

__all__ = ["OP_IDS_TABLE", "REVISIONS_TABLE", "applied", "record", "state"]

REVISIONS_TABLE = "histcore_revisions"
OP_IDS_TABLE = "histcore_op_ids"

_CREATE = (
    side_table(
        REVISIONS_TABLE,
        "revision INTEGER NOT NULL, last_id INTEGER, ops INTEGER NOT NULL DEFAULT 0",
        key="",
    ),
    side_table(OP_IDS_TABLE, "op_id TEXT NOT NULL, seq INTEGER NOT NULL", key=", op_id"),
    f"CREATE INDEX IF NOT EXISTS idx_{OP_IDS_TABLE}_seq "
    f"ON {OP_IDS_TABLE} (messages_table, session_id, seq)",
)


def _newest(conn: sqlite3.Connection, messages: str, session_id: str) -> int | None:
    row = conn.execute(
        f"SELECT MAX(id) FROM {messages} WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _stored(
    conn: sqlite3.Connection, messages: str, session_id: str
) -> tuple[int, int | None, int]:
    """The stored ``(revision, last_id, ops)``: ``(0, None, 0)`` for a session never
    counted."""
    row = unless_missing(
        lambda: conn.execute(
            f"SELECT revision, last_id, ops FROM {REVISIONS_TABLE} "
            "WHERE messages_table = ? AND session_id = ?",
            (messages, session_id),
        ).fetchone()
    )
    if row is None:
        return 0, None, 0
    return int(row[0]), None if row[1] is None else int(row[1]), int(row[2])


def state(conn: sqlite3.Connection, messages: str, session_id: str) -> tuple[int, bool]:
    """The stored revision, and whether it is current (no uncounted change by another
    program since). Read inside one transaction."""
    revision, last_id, _ = _stored(conn, messages, session_id)
    return revision, last_id == _newest(conn, messages, session_id)


def applied(conn: sqlite3.Connection, messages: str, session_id: str, op_id: str) -> bool:
    """Whether the session remembers ``op_id`` (inside the write transaction)."""
    row = unless_missing(
        lambda: conn.execute(
            f"SELECT 1 FROM {OP_IDS_TABLE} "
            "WHERE messages_table = ? AND session_id = ? AND op_id = ?",
            (messages, session_id, op_id),
        ).fetchone()
    )
    return row is not None


def record(
    conn: sqlite3.Connection,
    messages: str,
    session_id: str,
    *,
    changed: bool,
    op_id: str | None = None,
    window: int = 1,
) -> int:
    """Inside a write transaction: count this transaction's change (``changed``), or an
    uncounted one by another program, as one more revision, and remember ``op_id``
    among the latest ``window``; the session's revision afterwards."""
    return made_if_missing(
        conn, _CREATE, lambda: _record(conn, messages, session_id, changed, op_id, window)
    )


def _record(
    conn: sqlite3.Connection,
    messages: str,
    session_id: str,
    changed: bool,
    op_id: str | None,
    window: int,
) -> int:
    revision, last_id, ops = _stored(conn, messages, session_id)
    newest = _newest(conn, messages, session_id)
    if not changed and last_id == newest:
        return revision
    revision += 1
    ops += op_id is not None
    conn.execute(
        f"INSERT INTO {REVISIONS_TABLE} (messages_table, session_id, revision, last_id, ops) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (messages_table, session_id) DO UPDATE "
        "SET revision = excluded.revision, last_id = excluded.last_id, ops = excluded.ops",
        (messages, session_id, revision, newest, ops),
    )
    if op_id is not None:
        conn.execute(
            f"INSERT INTO {OP_IDS_TABLE} (messages_table, session_id, op_id, seq) "
            "VALUES (?, ?, ?, ?)",
            (messages, session_id, op_id, ops),
        )
        # All but the latest ``window`` op ids (one at most, in the steady state).
        conn.execute(
            f"DELETE FROM {OP_IDS_TABLE} WHERE messages_table = ? AND session_id = ? AND seq <= ?",
            (messages, session_id, ops - window),
        )
    return revision
