"""The SQLite session store's file setup: WAL mode and the SDK's tables.

The tables and index are created with the OpenAI Agents SDK's own statements (see
``_sqlite_reads``), so a file written by either library opens in the other. Every
function takes the store's open connection (``text_factory = bytes``: SQLite's answers
arrive as bytes, hence ``text``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from histcore.exceptions import SessionError

__all__ = [
    "REWRITES_TABLE",
    "check_columns",
    "check_read_only_tables",
    "create_tables",
    "enable_wal",
    "ids_never_reused",
    "insert_batch_size",
    "made_if_missing",
    "missing_table",
    "note_rewrite",
    "rewrite_generation",
    "side_table",
    "tables_present",
    "text",
    "unless_missing",
]

_T = TypeVar("_T")

# Upper bound of rows per multi-row INSERT (the variable limit may lower it).
_MAX_ROWS_PER_INSERT = 4096


def text(value: object) -> str:
    """A value SQLite returned (bytes under ``text_factory = bytes``) as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def enable_wal(conn: sqlite3.Connection, busy_timeout: float) -> bool:
    """Switch the file to WAL mode; False when SQLite keeps another mode."""
    # Switching a fresh file to WAL takes a lock the busy handler does not wait for, so
    # several processes opening one new file retry here.
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            return text(mode).lower() == "wal"
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or (
                time.monotonic() >= deadline
            ):
                raise
            time.sleep(0.01)


def _index(messages: str) -> str:
    return f"idx_{messages}_session_id"


def tables_present(conn: sqlite3.Connection, sessions: str, messages: str) -> bool:
    """Whether both tables and the index exist (checked with a read, so that opening a
    file that has them never waits for another connection's write)."""
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE name IN (?, ?, ?)",
        (sessions, messages, _index(messages)),
    ).fetchall()
    return len(names) == 3


def check_columns(conn: sqlite3.Connection, messages: str) -> None:
    """SessionError unless ``messages`` has the columns the store reads and writes."""
    columns = {text(row[1]) for row in conn.execute(f"PRAGMA table_info({messages})")}
    missing = {"id", "session_id", "message_data"} - columns
    if missing:
        raise SessionError(
            f"table {messages} exists but lacks column(s) "
            f"{', '.join(sorted(missing))}: it is not a session messages table"
        )


def check_read_only_tables(
    conn: sqlite3.Connection, path: str, sessions: str, messages: str
) -> None:
    """The tables of a file opened read-only, which cannot be created."""
    found = {
        text(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
            (sessions, messages),
        )
    }
    missing = sorted({sessions, messages} - found)
    if missing:
        raise SessionError(
            f"the database {path!r} is read-only and has no table "
            f"{' or '.join(missing)}: there is no session to read and none can be made"
        )
    check_columns(conn, messages)


def create_tables(conn: sqlite3.Connection, sessions: str, messages: str) -> None:
    """Create what is missing of the tables and the index; the caller holds a write
    transaction. An existing messages table must have the columns (checked before the
    index is built on them)."""
    conn.execute(
        f"""
            CREATE TABLE IF NOT EXISTS {sessions} (
                session_id TEXT PRIMARY KEY,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            )
        """
    )
    conn.execute(
        f"""
            CREATE TABLE IF NOT EXISTS {messages} (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL,
                message_data TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                FOREIGN KEY (session_id) REFERENCES {sessions} (session_id)
                    ON DELETE CASCADE
            )
        """
    )
    check_columns(conn, messages)
    conn.execute(
        f"""
            CREATE INDEX IF NOT EXISTS {_index(messages)}
            ON {messages} (session_id, id)
        """
    )


def ids_never_reused(conn: sqlite3.Connection, messages: str) -> bool:
    """Whether ``messages`` is AUTOINCREMENT, which incremental reads rely on: without
    it SQLite may hand a popped row's id to the next insert, and an old id would then
    hold new content."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (messages,)
    ).fetchone()
    return row is not None and "AUTOINCREMENT" in text(row[0]).upper()


def insert_batch_size(conn: sqlite3.Connection) -> int:
    """Rows per multi-row INSERT: two variables a row, within SQLite's variable limit."""
    # Connection.getlimit is Python 3.11+; SQLite's compiled-in default before was 999.
    getlimit = getattr(conn, "getlimit", None)
    category = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
    variables = 999 if getlimit is None or category is None else int(getlimit(category))
    return max(1, min(_MAX_ROWS_PER_INSERT, variables // 2))


# --- histcore's side tables ---------------------------------------------------------------
#
# Rows of (messages table, session) next to the SDK's tables, made by the first write that
# needs them: revisions and op ids (``_sqlite_revisions``), the archive
# (``_sqlite_archive``), rewrites in place (below).


def side_table(name: str, columns: str, key: str | None = None) -> str:
    """The CREATE statement of side table ``name``: ``messages_table``, ``session_id``,
    then ``columns``; with ``key``, a primary key of those two and then ``key``'s."""
    primary = "" if key is None else f", PRIMARY KEY (messages_table, session_id{key})"
    return (
        f"CREATE TABLE IF NOT EXISTS {name} (messages_table TEXT NOT NULL, "
        f"session_id TEXT NOT NULL, {columns}{primary})"
    )


def missing_table(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a statement for a table the file does not have."""
    return "no such table" in str(exc)


def unless_missing(read: Callable[[], _T]) -> _T | None:
    """``read()``, or None when it failed for a table the file lacks (a side table no
    write has made yet)."""
    try:
        return read()
    except sqlite3.OperationalError as exc:
        if not missing_table(exc):
            raise
        return None


def made_if_missing(conn: sqlite3.Connection, create: Sequence[str], run: Callable[[], _T]) -> _T:
    """``run()``, run again after the statements ``create`` when it failed for a table
    the file lacks (a file made before it existed), inside the caller's write
    transaction (a failed statement leaves the transaction as it was)."""
    try:
        return run()
    except sqlite3.OperationalError as exc:
        if not missing_table(exc):
            raise
    for statement in create:
        conn.execute(statement)
    return run()


# --- rewrites in place ------------------------------------------------------------------
#
# A session's history cache notices rows appended or removed by other connections (see
# ``_sqlite_reads``), not a row whose message_data another program rewrote in place,
# which neither library does. ``histcore doctor --fix`` does, and then notes it here, in
# the same transaction: a cache read under another generation is rebuilt. The table is
# made by the first such note; a store without it has had no rewrite.

#: (messages_table, session_id) -> how many times rows of the session were rewritten.
REWRITES_TABLE = "histcore_rewrites"


def note_rewrite(conn: sqlite3.Connection, messages: str, session_id: str) -> None:
    """Inside a write transaction that rewrote rows of ``session_id`` in place: change
    its rewrite generation, so cached copies of the history are read again."""
    conn.execute(side_table(REWRITES_TABLE, "generation INTEGER NOT NULL", key=""))
    conn.execute(
        f"INSERT INTO {REWRITES_TABLE} (messages_table, session_id, generation) "
        "VALUES (?, ?, 1) ON CONFLICT (messages_table, session_id) "
        "DO UPDATE SET generation = generation + 1",
        (messages, session_id),
    )


def rewrite_generation(conn: sqlite3.Connection, messages: str, session_id: str) -> int:
    """The session's rewrite generation (0: never rewritten, or no such table)."""
    row = unless_missing(
        lambda: conn.execute(
            f"SELECT generation FROM {REWRITES_TABLE} WHERE messages_table = ? AND session_id = ?",
            (messages, session_id),
        ).fetchone()
    )
    return 0 if row is None else int(row[0])
