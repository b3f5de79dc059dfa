"""``histcore doctor --restore BACKUP PATH``: put back the sessions a backup holds.

A backup (``PATH.bak-<time>``, written by ``--fix`` and by a restore) is a SQLite store
of its own, holding the rows of some sessions as they were. A restore replaces every
row of each of those sessions in PATH (its messages, and an AdvancedSQLiteSession's
``message_structure`` and ``turn_usage`` rows) by the backup's, with their ids and
stored values, in one write transaction. It first writes a backup of the rows it
replaces (undone the same way), and before committing reads each session back and
compares it with the backup, every column of every row. Rows of those sessions that
the backup does not hold (written since it was made) are replaced too, and named.
The side tables of history transactions are not in a backup: each restored session's
revision counts one more change, and its op ids and archive stay as they are.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
from dataclasses import dataclass
from typing import Any

from histcore.cli.doctor.read import DoctorError, RepairStopped, Tables
from histcore.cli.doctor.side import bump_sqlite
from histcore.cli.doctor.sqlite import SQLiteStore
from histcore.sessions._sqlite_schema import note_rewrite
from histcore.sessions._store_readers.model import row_ids_text

__all__ = [
    "RestoreReport",
    "Restored",
    "render_json",
    "render_text",
    "restore_command",
    "restore_store",
]

# The backup's name on the store's connection while it is restored.
_ALIAS = "doctor_restore"


@dataclass(frozen=True)
class Restored:
    session_id: str
    #: rows the backup holds of the session (what it now holds)
    rows: int
    #: rows the session held before the restore
    replaced: int
    #: ids of the replaced rows that the backup does not hold
    not_in_backup: tuple[int, ...]


@dataclass(frozen=True)
class RestoreReport:
    path: str
    source: str
    sessions: list[Restored]
    #: the backup of the rows the restore replaced
    backup: str
    #: the command that undoes the restore
    undo: str


def restore_command(backup: str, path: str, tables: Tables) -> str:
    """The command that restores ``backup`` into the store at ``path``."""
    words = ["histcore", "doctor", "--restore", backup, path]
    if tables.sessions != Tables().sessions:
        words += ["--sessions-table", tables.sessions]
    if tables.messages != Tables().messages:
        words += ["--messages-table", tables.messages]
    return " ".join(shlex.quote(word) for word in words)


def restore_store(
    backup: str, path: str, *, busy_timeout: float, tables: Tables | None = None
) -> RestoreReport:
    """Put back the sessions ``backup`` holds into the store at ``path``.

    DoctorError (nothing changed) when either is no session store, their tables differ,
    a row id of the backup now belongs to another session, or a session does not read
    back as the backup holds it; StoreLocked when another process holds the lock.
    """
    tables = tables if tables is not None else Tables()
    if os.path.exists(backup) and os.path.exists(path) and os.path.samefile(backup, path):
        raise DoctorError(f"{path}: the backup to restore is the store itself")
    session_ids = _backup_sessions(backup, busy_timeout, tables)
    store = SQLiteStore(path, writable=True, busy_timeout=busy_timeout, tables=tables)
    try:
        with store.attached(backup, _ALIAS) as conn:
            columns = _columns(conn, store, backup)
            saved = store.write_backup(session_ids)
            try:
                with store.transaction():
                    restored = [
                        _put_back(conn, store, columns, session_id) for session_id in session_ids
                    ]
            except DoctorError as exc:
                raise RepairStopped.after(exc, (), saved) from exc
    finally:
        store.close()
    undo = restore_command(saved, path, tables)
    return RestoreReport(path, backup, restored, saved, undo)


def _backup_sessions(backup: str, busy_timeout: float, tables: Tables) -> list[str]:
    try:
        source = SQLiteStore(backup, writable=False, busy_timeout=busy_timeout, tables=tables)
    except DoctorError as exc:
        raise DoctorError(f"the backup: {exc}") from None
    try:
        session_ids = source.session_ids()
    finally:
        source.close()
    if not session_ids:
        raise DoctorError(f"{backup}: the backup holds no sessions")
    return session_ids


def _columns(conn: sqlite3.Connection, store: SQLiteStore, backup: str) -> dict[str, str]:
    """The tables to restore, each with its column list; DoctorError unless the backup
    has each of them with the same columns (and no linked table the store lacks)."""
    tables = store.tables
    wanted = [tables.messages, *store.linked_tables]
    in_backup = {
        str(name)
        for (name,) in conn.execute(f"SELECT name FROM {_ALIAS}.sqlite_master WHERE type = 'table'")
    }
    extra = sorted(in_backup & ({"message_structure", "turn_usage"} - set(wanted)))
    if extra:
        raise DoctorError(
            f"{backup}: the backup holds {', '.join(extra)} rows, and {store.name} has no "
            "such table; nothing was changed"
        )
    if tables.sessions in in_backup and tables.sessions in _names(conn, "main"):
        wanted.insert(0, tables.sessions)
    found: dict[str, str] = {}
    for table in wanted:
        ours = _table_columns(conn, "main", table)
        theirs = _table_columns(conn, _ALIAS, table)
        if sorted(ours) != sorted(theirs):
            missing = "no such table" if not theirs else f"columns {', '.join(theirs)}"
            raise DoctorError(
                f"{backup}: the backup's {table} ({missing}) is not the store's "
                f"({', '.join(ours)}); nothing was changed"
            )
        found[table] = ", ".join(f'"{name}"' for name in ours)
    return found


def _names(conn: sqlite3.Connection, schema: str) -> set[str]:
    query = f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'"
    return {str(name) for (name,) in conn.execute(query)}


def _table_columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [str(row[1]) for row in conn.execute(f"PRAGMA {schema}.table_info({table})")]


def _put_back(
    conn: sqlite3.Connection, store: SQLiteStore, columns: dict[str, str], session_id: str
) -> Restored:
    """Inside the transaction: the session's rows replaced by the backup's, and read back."""
    messages, sessions = store.tables.messages, store.tables.sessions
    held = _ids(conn, "main", messages, session_id)
    kept = _ids(conn, _ALIAS, messages, session_id)
    taken = conn.execute(
        f"SELECT id, session_id FROM main.{messages} WHERE session_id IS NOT ? "
        f"AND id IN (SELECT id FROM {_ALIAS}.{messages} WHERE session_id = ?) ORDER BY id",
        (session_id, session_id),
    ).fetchall()
    if taken:
        raise DoctorError(
            f"{store.name}: row ids {row_ids_text([int(row[0]) for row in taken])} of session "
            f"{session_id!r} in the backup now belong to session {taken[0][1]!r}; nothing "
            "was changed"
        )
    rows = [table for table in columns if table != sessions]
    # Linked rows first out, last in (they refer to the messages).
    for table in reversed(rows):
        conn.execute(f"DELETE FROM main.{table} WHERE session_id = ?", (session_id,))
    for table in rows:
        conn.execute(
            f"INSERT INTO main.{table} ({columns[table]}) SELECT {columns[table]} "
            f"FROM {_ALIAS}.{table} WHERE session_id = ? ORDER BY rowid",
            (session_id,),
        )
    if sessions in columns:
        conn.execute(
            f"INSERT OR IGNORE INTO main.{sessions} ({columns[sessions]}) "
            f"SELECT {columns[sessions]} FROM {_ALIAS}.{sessions} WHERE session_id = ?",
            (session_id,),
        )
    # Rows come back under ids a session may have cached with other data; the session's
    # revision moves on (never back: the backup holds no revision).
    note_rewrite(conn, messages, session_id)
    bump_sqlite(conn, messages, session_id)
    for table in rows:
        if not _reads_back(conn, table, columns[table], session_id):
            raise DoctorError(
                f"{store.name}: session {session_id!r} did not read back as the backup holds "
                f"it ({table}); nothing was changed"
            )
    return Restored(session_id, len(kept), len(held), tuple(sorted(set(held) - set(kept))))


def _ids(conn: sqlite3.Connection, schema: str, messages: str, session_id: str) -> list[int]:
    query = f"SELECT id FROM {schema}.{messages} WHERE session_id = ? ORDER BY id"
    return [int(row_id) for (row_id,) in conn.execute(query, (session_id,))]


def _reads_back(conn: sqlite3.Connection, table: str, columns: str, session_id: str) -> bool:
    """Whether the session's rows of ``table`` are the backup's: every column of every
    row, values and storage classes (EXCEPT compares both), and as many rows."""
    ours = f"SELECT {columns} FROM main.{table} WHERE session_id = ?"
    theirs = f"SELECT {columns} FROM {_ALIAS}.{table} WHERE session_id = ?"
    (difference,) = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM ({ours} EXCEPT {theirs})) + "
        f"(SELECT COUNT(*) FROM ({theirs} EXCEPT {ours})) + "
        f"abs((SELECT COUNT(*) FROM ({ours})) - (SELECT COUNT(*) FROM ({theirs})))",
        (session_id,) * 6,
    ).fetchone()
    return int(difference) == 0


# --- the report ---------------------------------------------------------------------------


def render_text(report: RestoreReport) -> str:
    restored = ", ".join(
        f"{entry.session_id!r} ({entry.rows} rows, replacing {entry.replaced})"
        for entry in report.sessions
    )
    lines = [
        f"histcore doctor: {report.path}: restored {len(report.sessions)} session(s) from "
        f"{report.source}, each read back identical to the backup: {restored}"
    ]
    lines += [
        f"  session {entry.session_id!r}: {len(entry.not_in_backup)} row(s) the backup does "
        f"not hold (written since it was made?) were replaced too: row ids "
        f"{row_ids_text(entry.not_in_backup)}"
        for entry in report.sessions
        if entry.not_in_backup
    ]
    lines.append(f"the rows replaced are in {report.backup}; to undo this restore: {report.undo}")
    return "\n".join(lines)


def render_json(report: RestoreReport) -> dict[str, Any]:
    return {
        "path": report.path,
        "restored_from": report.source,
        "backup": report.backup,
        "undo": report.undo,
        "exit_code": 0,
        "sessions": [_session_json(entry) for entry in report.sessions],
    }


def _session_json(entry: Restored) -> dict[str, Any]:
    return {
        "session_id": entry.session_id,
        "rows": entry.rows,
        "replaced_rows": entry.replaced,
        "not_in_backup": list(entry.not_in_backup),
    }
