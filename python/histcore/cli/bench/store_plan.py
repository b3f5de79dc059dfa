"""What ``histcore bench --store/--dsn`` runs on: its plan (the store, its tables, the
sessions and settings), its errors, the fixed inputs of the timed calls, and the user's
store itself: opened read-only with the doctor's readers (``histcore.cli.doctor``), its
sessions listed and chosen, a session's rows copied into a private SQLite file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.cli.doctor.read import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    DoctorError,
    Row,
    Store,
    Tables,
)
from histcore.cli.doctor.sqlite import SQLiteStore
from histcore.sessions._sqlite_schema import create_tables

__all__ = [
    "BUSY_TIMEOUT",
    "NEW_MESSAGE",
    "PASSES",
    "TURN_MESSAGE",
    "BadInput",
    "Mismatch",
    "Plan",
    "open_store",
    "select_sessions",
    "session_items",
    "write_copy",
]

#: The engine passes timed on each session (from ``engine.OPERATIONS``).
PASSES = (
    "dedupe_keys",
    "deduplicate_input_items_preferring_latest",
    "drop_orphan_function_calls",
    "content_keys",
)
#: The new input of the prepared turn, and of the SDK turn.
NEW_MESSAGE = "One more question."
TURN_MESSAGE = "Paris and Rome"
#: Seconds to wait for another process's lock on the store.
BUSY_TIMEOUT = 5.0
_SHOWN_IDS = 5


class BadInput(Exception):
    """Arguments or a store that cannot be benchmarked (exit code 2)."""


class Mismatch(Exception):
    """Two implementations disagreed on a session (exit code 1)."""


@dataclass(frozen=True)
class Plan:
    kind: str  # "sqlite" or "postgresql"
    location: str  # the path, or the DSN
    tables: Tables
    sessions: tuple[str, ...] | None
    repeat: int
    sdk: bool
    turn: bool
    json_path: str | None
    build_profile: str | None


# --- the store --------------------------------------------------------------------------


def open_store(plan: Plan) -> Store:
    try:
        if plan.kind == "sqlite":
            return SQLiteStore(
                plan.location, writable=False, busy_timeout=BUSY_TIMEOUT, tables=plan.tables
            )
        from histcore.cli.doctor.postgres import PostgresStore

        return PostgresStore(
            plan.location, writable=False, busy_timeout=BUSY_TIMEOUT, tables=plan.tables
        )
    except DoctorError as exc:
        raise BadInput(str(exc)) from None


def select_sessions(store: Store, wanted: tuple[str, ...] | None) -> list[str]:
    try:
        available = store.session_ids()
    except DoctorError as exc:
        raise BadInput(str(exc)) from None
    if not available:
        raise BadInput(f"{store.name}: the store holds no sessions")
    if wanted is None:
        return available
    known = set(available)
    chosen: list[str] = []
    for value in wanted:
        # A value is an id when the store has it; otherwise a comma list of ids.
        parts = [value] if value in known else [p.strip() for p in value.split(",")]
        chosen += [part for part in parts if part]
    unknown = list(dict.fromkeys(value for value in chosen if value not in known))
    if unknown or not chosen:
        shown = ", ".join(map(repr, available[:_SHOWN_IDS]))
        more = f", ... ({len(available)} in all)" if len(available) > _SHOWN_IDS else ""
        missing = ", ".join(map(repr, unknown)) or "(none given)"
        raise BadInput(f"{store.name}: no session {missing}; its sessions: {shown}{more}")
    return list(dict.fromkeys(chosen))


def session_items(rows: Sequence[Row]) -> list[Any]:
    """The items a session reads: rows holding a JSON object."""
    return [row.item for row in rows if row.valid and type(row.item) is dict]


def write_copy(path: str, session_id: str, rows: Sequence[Row]) -> None:
    """A SQLite store in the SDK's tables holding the session's rows as stored."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        create_tables(conn, SESSIONS_TABLE, MESSAGES_TABLE)
        conn.execute(f"INSERT INTO {SESSIONS_TABLE} (session_id) VALUES (?)", (session_id,))
        conn.executemany(
            f"INSERT INTO {MESSAGES_TABLE} (session_id, message_data) VALUES (?, ?)",
            [(session_id, row.data) for row in rows if row.data is not None],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
