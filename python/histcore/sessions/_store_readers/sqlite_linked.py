"""Tables of a SQLite store that point at its messages, found when the store opens.

The SDK's ``AdvancedSQLiteSession`` adds ``message_structure`` (one row per message and
branch: its order, user turn, type and tool name; ``message_id`` refers to the messages
table) and ``turn_usage`` (token usage per session, branch and user turn). A repair
changes them with the messages (``histcore.cli.doctor.linked``).

Rule: a store's sessions are read in id order, which is the SDK's branch order only
while the session has one branch following the ids; any other store is refused in one
line naming ``message_structure``, and so is, opened to be written, a store with another
table whose foreign key refers to the messages. A message row without a
``message_structure`` row is reported (``row_without_structure``), never changed. See
docs/doctor.md, "Stores of the SDK's ``AdvancedSQLiteSession``".
"""

from __future__ import annotations

import sqlite3

__all__ = ["STRUCTURE", "USAGE", "Linked"]

STRUCTURE = "message_structure"
USAGE = "turn_usage"


class Linked:
    """The tables linked to a store's messages; found when the store opens."""

    def __init__(self, conn: sqlite3.Connection, messages: str, sessions: str) -> None:
        self.structure = False
        self.usage = False
        #: tables whose foreign keys refer to the messages table, other than the SDK's
        self.unknown: list[str] = []
        names = [
            str(name)
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in names:
            quoted = table.replace('"', '""')
            for foreign in conn.execute(f'PRAGMA foreign_key_list("{quoted}")').fetchall():
                if str(foreign[2]).lower() != messages.lower():
                    continue
                if table == STRUCTURE and foreign[3] == "message_id":
                    self.structure = True
                elif table not in self.unknown:
                    self.unknown.append(table)
        self.usage = self.structure and USAGE in names
        self._messages = messages

    @property
    def tables(self) -> list[str]:
        """The linked tables a backup holds (their rows of the sessions it saves)."""
        return [STRUCTURE, *([USAGE] if self.usage else [])] if self.structure else []

    def refusal(self, conn: sqlite3.Connection, writable: bool) -> str | None:
        """Why the doctor cannot check (or with ``writable``, repair) this store."""
        if writable and self.unknown:
            return (
                f"table {self.unknown[0]} refers to the messages table, and the doctor "
                "cannot keep its rows consistent with a repair; nothing was changed"
            )
        if not self.structure:
            return None
        branched = conn.execute(
            f"SELECT session_id, COUNT(DISTINCT branch_id) FROM {STRUCTURE} "
            "GROUP BY session_id HAVING COUNT(DISTINCT branch_id) > 1 LIMIT 1"
        ).fetchone()
        if branched is not None:
            return (
                f"session {branched[0]!r} has {branched[1]} branches in {STRUCTURE} "
                "(branches share message rows): the doctor checks sessions of one branch "
                "only; nothing was changed"
            )
        unordered = conn.execute(
            f"SELECT session_id FROM (SELECT session_id, message_id, LAG(message_id) OVER "
            f"(PARTITION BY session_id ORDER BY sequence_number) AS previous FROM {STRUCTURE}) "
            "WHERE previous >= message_id LIMIT 1"
        ).fetchone()
        if unordered is not None:
            return (
                f"session {unordered[0]!r}: its {STRUCTURE} order is not the order of its "
                "message ids; nothing was changed"
            )
        return None

    def rows_without_structure(self, conn: sqlite3.Connection, session_id: str) -> list[int]:
        """The session's message rows with no ``message_structure`` row of the session:
        the SDK's reads join the two, and its ``pop_item`` deletes such rows (SDK issue
        #4729). One statement, so a writer's two inserts are seen both or neither."""
        if not self.structure:
            return []
        # NOT IN over an uncorrelated subquery: one temporary index of the session's
        # structure rows (message_id has no index of its own), as the SDK's cleanup reads it.
        found = conn.execute(
            f"SELECT id FROM {self._messages} WHERE session_id = ? AND id NOT IN "
            f"(SELECT message_id FROM {STRUCTURE} WHERE session_id = ? "
            "AND message_id IS NOT NULL) ORDER BY id",
            (session_id, session_id),
        ).fetchall()
        return [int(row_id) for (row_id,) in found]

    def still_one_branch(self, conn: sqlite3.Connection, session_id: str) -> bool:
        """Whether the session still has one branch at most (checked under the write lock)."""
        if not self.structure:
            return True
        found = conn.execute(
            f"SELECT COUNT(DISTINCT branch_id) FROM {STRUCTURE} WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        return found is None or int(found[0]) <= 1
