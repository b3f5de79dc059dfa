"""What ``histcore bench --store/--dsn`` runs on: its plan (the store, its tables, the
sessions and settings), its errors, the fixed inputs of the timed calls, and the user's
store itself: opened read-only with the readers the doctor reads with too
(``histcore.sessions._store_readers``), its sessions listed and chosen, a session's rows
copied into a private SQLite file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.sessions._sqlite_schema import create_tables
from histcore.sessions._store_readers.model import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    Row,
    StoreError,
    StoreReader,
    Tables,
    row_ids_text,
)
from histcore.sessions._store_readers.sqlite import SQLiteReader

__all__ = [
    "BUSY_TIMEOUT",
    "NEW_MESSAGE",
    "PASSES",
    "TURN_MESSAGE",
    "BadInput",
    "Mismatch",
    "Plan",
    "is_item",
    "open_store",
    "select_sessions",
    "session_items",
    "skipped_note",
    "skipped_rows",
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
    plot_path: str | None = None


# --- the store --------------------------------------------------------------------------


def open_store(plan: Plan) -> StoreReader:
    try:
        if plan.kind == "sqlite":
            return SQLiteReader(
                plan.location, writable=False, busy_timeout=BUSY_TIMEOUT, tables=plan.tables
            )
        from histcore.sessions._store_readers.postgres import PostgresReader

        return PostgresReader(
            plan.location, writable=False, busy_timeout=BUSY_TIMEOUT, tables=plan.tables
        )
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def select_sessions(store: StoreReader, wanted: tuple[str, ...] | None) -> list[str]:
    try:
        available = store.session_ids()
    except StoreError as exc:
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


def is_item(row: Row) -> bool:
    """Whether a session reads the row as an item: it holds a JSON object."""
    return row.valid and type(row.item) is dict


def session_items(rows: Sequence[Row]) -> list[Any]:
    """The items a session reads."""
    return [row.item for row in rows if is_item(row)]


_JSON_KINDS = {str: "a string", list: "an array", bool: "a boolean", type(None): "null"}


def skipped_rows(rows: Sequence[Row]) -> list[tuple[int, str]]:
    """The rows histcore's session skips: (row id, what is wrong with it)."""
    skipped = []
    for row in rows:
        if not row.valid:
            skipped.append((row.row_id, f"not valid JSON ({row.reason})"))
        elif type(row.item) is not dict:
            kind = _JSON_KINDS.get(type(row.item), "a number")
            skipped.append((row.row_id, f"JSON but not an item ({kind}, not an object)"))
    return skipped


def skipped_note(skipped: Sequence[tuple[int, str]]) -> str:
    """The note naming ``skipped_rows``, grouped by what is wrong with them."""
    by_problem: dict[str, list[int]] = {}
    for row_id, problem in skipped:
        by_problem.setdefault(problem, []).append(row_id)
    named = "; ".join(
        f"row{'s' if len(ids) > 1 else ''} {row_ids_text(ids)}: {problem}"
        for problem, ids in by_problem.items()
    )
    return (
        f"{len(skipped)} row(s) histcore's session skips, left out of the SDK's copy too "
        "so both read the same items (the SDK's SQLiteSession reads JSON that is not an "
        f"object as an item, and stops at text that is not UTF-8): {named}; "
        "histcore doctor reports them, and --fix --drop-invalid-rows deletes them"
    )


def write_copy(path: str, session_id: str, rows: Sequence[Row]) -> None:
    """A SQLite store in the SDK's tables holding the session's item rows as stored
    (the rows ``skipped_rows`` names are left out)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        create_tables(conn, SESSIONS_TABLE, MESSAGES_TABLE)
        conn.execute(f"INSERT INTO {SESSIONS_TABLE} (session_id) VALUES (?)", (session_id,))
        conn.executemany(
            f"INSERT INTO {MESSAGES_TABLE} (session_id, message_data) VALUES (?, ?)",
            [(session_id, row.data) for row in rows if is_item(row)],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
