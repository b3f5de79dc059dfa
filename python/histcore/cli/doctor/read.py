"""Opening a session store and reading its rows, exactly as stored."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MESSAGES_TABLE",
    "SESSIONS_TABLE",
    "DoctorError",
    "Row",
    "connect",
    "read_rows",
    "row_ids_text",
    "session_ids",
]

SESSIONS_TABLE = "agent_sessions"
MESSAGES_TABLE = "agent_messages"


class DoctorError(Exception):
    """The store cannot be checked (missing, not SQLite, not a session store, ...)."""


@dataclass(frozen=True)
class Row:
    row_id: int
    data: Any  # message_data exactly as stored (written back unchanged)
    item: Any  # the decoded item, when ``valid``
    valid: bool


def _decode(data: Any) -> tuple[Any, bool]:
    # As the SDK's SQLiteSession reads a row: json.loads, skipping what fails.
    try:
        return json.loads(data), True
    except (ValueError, TypeError):
        return None, False


def read_rows(connection: sqlite3.Connection, session_id: str) -> list[Row]:
    """One session's rows in id order (the conversation's order)."""
    cursor = connection.execute(
        f"SELECT id, message_data FROM {MESSAGES_TABLE} WHERE session_id = ? ORDER BY id ASC",
        (session_id,),
    )
    rows = []
    for row_id, data in cursor.fetchall():
        item, valid = _decode(data)
        rows.append(Row(int(row_id), data, item, valid))
    return rows


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {
        name
        for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }


def session_ids(connection: sqlite3.Connection) -> list[str]:
    """Every session with rows, or registered in ``agent_sessions`` without any."""
    query = f"SELECT DISTINCT session_id FROM {MESSAGES_TABLE}"
    if SESSIONS_TABLE in _tables(connection):
        query += f" UNION SELECT session_id FROM {SESSIONS_TABLE}"
    return sorted(str(sid) for (sid,) in connection.execute(query))


def connect(path: str, writable: bool) -> sqlite3.Connection:
    """A connection to an existing session store; raises DoctorError for anything else.

    The URI modes never create a file, and read-only stays read-only. No implicit
    transactions (isolation_level=None): the caller opens and ends its own.
    """
    if not os.path.isfile(path):
        raise DoctorError(f"{path}: no such file")
    uri = Path(path).absolute().as_uri() + ("?mode=rw" if writable else "?mode=ro")
    try:
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
    except sqlite3.DatabaseError as exc:
        raise DoctorError(f"{path}: not a readable SQLite database ({exc})") from exc
    try:
        tables = _tables(connection)
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise DoctorError(f"{path}: not a readable SQLite database ({exc})") from exc
    if MESSAGES_TABLE not in tables:
        connection.close()
        raise DoctorError(f"{path}: not a session store (it has no {MESSAGES_TABLE} table)")
    return connection


def row_ids_text(row_ids: Sequence[int], limit: int = 8) -> str:
    """Row ids for a message: the first ``limit``, then how many there are in all."""
    shown = ", ".join(map(str, row_ids[:limit]))
    return shown + (f", ... ({len(row_ids)} in all)" if len(row_ids) > limit else "")
