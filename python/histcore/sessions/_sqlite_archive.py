"""The archive of a ``keep_replaced=True`` SQLite session, in two side tables::

    histcore_archive(messages_table, session_id, id, message_data, removed_revision)
    histcore_writes(messages_table, session_id, first_id, last_id, revision)

A row that ``replace_suffix``, ``pop_item`` or ``clear_session`` removes is copied to
``histcore_archive`` (its id and text as they were) in the transaction that deletes
it, with the revision that transaction commits; every write notes the range of row
ids it stored and its revision. Both tables are made by the first write that needs
them, like ``_sqlite_revisions``'s; the SDK's tables are untouched, so its own
``SQLiteSession`` still reads and writes the file (its changes are not archived).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from histcore.sessions._sqlite_schema import made_if_missing, side_table, unless_missing

__all__ = ["ARCHIVE_TABLE", "WRITES_TABLE", "archive", "note_write", "read"]

ARCHIVE_TABLE = "histcore_archive"
WRITES_TABLE = "histcore_writes"

_CREATE = (
    side_table(
        ARCHIVE_TABLE,
        "id INTEGER NOT NULL, message_data TEXT, removed_revision INTEGER NOT NULL",
    ),
    f"CREATE INDEX IF NOT EXISTS idx_{ARCHIVE_TABLE}_session "
    f"ON {ARCHIVE_TABLE} (messages_table, session_id, id)",
    side_table(
        WRITES_TABLE,
        "first_id INTEGER NOT NULL, last_id INTEGER NOT NULL, revision INTEGER NOT NULL",
        key=", first_id",
    ),
)


def _run(conn: sqlite3.Connection, sql: str, params: Any, many: bool = False) -> None:
    """Run ``sql``, making the tables first in a file that lacks them."""
    execute = conn.executemany if many else conn.execute
    made_if_missing(conn, _CREATE, lambda: execute(sql, params))


def archive(
    conn: sqlite3.Connection,
    messages: str,
    session_id: str,
    revision: int,
    ids: list[int] | None = None,
) -> None:
    """Inside a write transaction, before the rows go: copy the session's rows
    ``ids`` (all of them when None) to the archive, removed by ``revision``."""
    sql = (
        f"INSERT INTO {ARCHIVE_TABLE} (messages_table, session_id, id, message_data, "
        f"removed_revision) SELECT ?, session_id, id, message_data, ? FROM {messages} "
        "WHERE session_id = ?"
    )
    if ids is None:
        _run(conn, sql, (messages, revision, session_id))
    elif ids:
        _run(
            conn,
            sql + " AND id = ?",
            [(messages, revision, session_id, row) for row in ids],
            many=True,
        )


def note_write(
    conn: sqlite3.Connection,
    messages: str,
    session_id: str,
    first_id: int,
    last_id: int,
    revision: int,
) -> None:
    """Inside a write transaction: rows ``first_id..last_id`` were stored by ``revision``."""
    _run(
        conn,
        f"INSERT OR REPLACE INTO {WRITES_TABLE} "
        "(messages_table, session_id, first_id, last_id, revision) VALUES (?, ?, ?, ?, ?)",
        (messages, session_id, first_id, last_id, revision),
    )


def read(
    conn: sqlite3.Connection, messages: str, session_id: str
) -> tuple[list[tuple[int, Any, int]], list[tuple[int, int, int]]]:
    """Inside a read transaction: the archived ``(id, message_data, removed_revision)``
    and the noted writes ``(first_id, last_id, revision)`` of the session, by id."""

    def both() -> tuple[list[tuple[int, Any, int]], list[tuple[int, int, int]]]:
        archived = conn.execute(
            f"SELECT id, message_data, removed_revision FROM {ARCHIVE_TABLE} "
            "WHERE messages_table = ? AND session_id = ? ORDER BY id",
            (messages, session_id),
        ).fetchall()
        writes = conn.execute(
            f"SELECT first_id, last_id, revision FROM {WRITES_TABLE} "
            "WHERE messages_table = ? AND session_id = ? ORDER BY first_id",
            (messages, session_id),
        ).fetchall()
        return (
            [(int(row[0]), row[1], int(row[2])) for row in archived],
            [(int(a), int(b), int(c)) for a, b, c in writes],
        )

    return unless_missing(both) or ([], [])
