"""A repair's part in the tables of a SQLite store that point at its messages.

The SDK's ``AdvancedSQLiteSession`` adds ``message_structure`` and ``turn_usage``
(found when the store opens: ``histcore.sessions._store_readers.sqlite_linked``). A
repair changes them with the messages, in the same transaction: a deleted message loses
its ``message_structure`` rows and a turn left without any loses its ``turn_usage`` row
(as the SDK's ``pop_item`` does); a message that takes a later row's content takes its
``message_type`` and ``tool_name`` too. See docs/doctor.md, "Stores of the SDK's
``AdvancedSQLiteSession``".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from histcore.sessions._store_readers.sqlite_linked import STRUCTURE, USAGE, Linked

__all__ = ["repair_linked"]


def repair_linked(
    linked: Linked,
    conn: sqlite3.Connection,
    session_id: str,
    updates: Sequence[tuple[int, int]],
    deletions: Sequence[int],
) -> None:
    """The linked rows' part of a repair, before the messages themselves change."""
    if not linked.structure:
        return
    # Plain ``?`` placeholders only: Python 3.12.0-3.12.3 warn on numbered ones
    # bound from a sequence.
    source = (
        f"(SELECT {{column}} FROM {STRUCTURE} WHERE session_id = ? AND message_id = ? "
        "ORDER BY id LIMIT 1)"
    )
    conn.executemany(
        f"UPDATE {STRUCTURE} SET message_type = {source.format(column='message_type')}, "
        f"tool_name = {source.format(column='tool_name')} "
        f"WHERE session_id = ? AND message_id = ? AND EXISTS (SELECT 1 FROM {STRUCTURE} "
        "WHERE session_id = ? AND message_id = ?)",
        [
            (*(session_id, source_id) * 2, session_id, row_id, session_id, source_id)
            for row_id, source_id in updates
        ],
    )
    turns: set[tuple[Any, Any]] = set()
    for row_id in deletions:
        found = conn.execute(
            f"DELETE FROM {STRUCTURE} WHERE session_id = ? AND message_id = ? "
            "RETURNING branch_id, user_turn_number",
            (session_id, row_id),
        ).fetchall()
        turns.update((branch, turn) for branch, turn in found if turn is not None)
    if not linked.usage:
        return
    for branch, turn in sorted(turns, key=repr):
        conn.execute(
            f"DELETE FROM {USAGE} WHERE session_id = ? AND branch_id = ? "
            f"AND user_turn_number = ? AND NOT EXISTS (SELECT 1 FROM {STRUCTURE} "
            "WHERE session_id = ? AND branch_id = ? AND user_turn_number = ?)",
            (session_id, branch, turn) * 2,
        )
