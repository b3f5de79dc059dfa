"""What the doctor reads of histcore's history transactions (docs/design.md, "History
transactions"): per session its revision, the op ids it remembers, and the archive of a
``keep_replaced=True`` session (archived rows, noted writes), from the side tables
beside the messages (SQLite here, PostgreSQL in ``postgres_side.py``).

The archive is checked, never changed: an archived row removed by a revision above the
session's revision (``archived_after_revision``), and a noted write whose row ids are
not within the ids ever handed out (``write_outside_ids``), are problems. A repair or a
restore counts as one more revision, so a reader holding the old one cannot
``replace_suffix`` over it (``bump_sqlite``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from histcore.sessions import _sqlite_archive, _sqlite_revisions

__all__ = [
    "ARCHIVED_AFTER_REVISION",
    "SIDE_KINDS",
    "WRITE_OUTSIDE_IDS",
    "SideFacts",
    "bump_sqlite",
    "check_archive",
    "sqlite_side_facts",
]

ARCHIVED_AFTER_REVISION = "archived_after_revision"
WRITE_OUTSIDE_IDS = "write_outside_ids"
SIDE_KINDS = (ARCHIVED_AFTER_REVISION, WRITE_OUTSIDE_IDS)


@dataclass(frozen=True)
class SideFacts:
    """A session's history-transaction state (all 0 where the store keeps none)."""

    revision: int = 0
    op_ids: int = 0
    archived: int = 0
    writes: int = 0
    #: problem kind -> archived row ids, or the first ids of the noted writes
    problems: dict[str, list[int]] = field(default_factory=dict)

    @property
    def has_archive(self) -> bool:
        return bool(self.archived or self.writes)


def check_archive(
    revision: int,
    archived: Sequence[tuple[int, int]],
    writes: Sequence[tuple[int, int]],
    handed_out: int,
) -> dict[str, list[int]]:
    """The archive's problems: ``archived`` is ``(id, removed_revision)`` per row,
    ``writes`` ``(first_id, last_id)`` per noted write, ``handed_out`` the highest row
    id the messages table ever gave."""
    problems: dict[str, list[int]] = {}
    late = sorted(row_id for row_id, removed in archived if removed > revision)
    if late:
        problems[ARCHIVED_AFTER_REVISION] = late
    outside = sorted(first for first, last in writes if not 1 <= first <= last <= handed_out)
    if outside:
        problems[WRITE_OUTSIDE_IDS] = outside
    return problems


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def sqlite_side_facts(conn: sqlite3.Connection, messages: str, session_id: str) -> SideFacts:
    """The session's side facts in a SQLite store (each read one short statement)."""
    key = (messages, session_id)
    where = "WHERE messages_table = ? AND session_id = ?"
    revision = op_ids = 0
    if _has_table(conn, _sqlite_revisions.REVISIONS_TABLE):
        found = conn.execute(
            f"SELECT revision FROM {_sqlite_revisions.REVISIONS_TABLE} {where}", key
        ).fetchone()
        revision = 0 if found is None else int(found[0])
    if _has_table(conn, _sqlite_revisions.OP_IDS_TABLE):
        query = f"SELECT count(*) FROM {_sqlite_revisions.OP_IDS_TABLE} {where}"
        op_ids = int(conn.execute(query, key).fetchone()[0])
    archived: list[tuple[int, int]] = []
    writes: list[tuple[int, int]] = []
    if _has_table(conn, _sqlite_archive.ARCHIVE_TABLE):
        query = f"SELECT id, removed_revision FROM {_sqlite_archive.ARCHIVE_TABLE} {where}"
        archived = [(int(a), int(b)) for a, b in conn.execute(query, key)]
    if _has_table(conn, _sqlite_archive.WRITES_TABLE):
        query = f"SELECT first_id, last_id FROM {_sqlite_archive.WRITES_TABLE} {where}"
        writes = [(int(a), int(b)) for a, b in conn.execute(query, key)]
    if not (archived or writes):
        return SideFacts(revision, op_ids)
    handed_out = _handed_out(conn, messages, archived)
    return SideFacts(
        revision,
        op_ids,
        len(archived),
        len(writes),
        check_archive(revision, archived, writes, handed_out),
    )


def _handed_out(
    conn: sqlite3.Connection, messages: str, archived: Sequence[tuple[int, int]]
) -> int:
    """The highest row id the messages table ever gave: AUTOINCREMENT's counter, or
    (a table without it) the highest id found in it or in the archive."""
    newest = conn.execute(f"SELECT max(id) FROM {messages}").fetchone()[0]
    found = [int(newest or 0), *(row_id for row_id, _ in archived)]
    if _has_table(conn, "sqlite_sequence"):
        counter = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = ?", (messages,)
        ).fetchone()
        if counter is not None:
            found.append(int(counter[0]))
    return max(found)


def bump_sqlite(conn: sqlite3.Connection, messages: str, session_id: str) -> None:
    """Inside a write transaction that changed the session's rows: one more revision
    (the sessions' own rule, ``_sqlite_revisions.record``), where the store keeps
    revisions. A store without the table has no reader holding a revision above 0, and
    the sessions count the change by its newest row id."""
    if _has_table(conn, _sqlite_revisions.REVISIONS_TABLE):
        _sqlite_revisions.record(conn, messages, session_id, changed=True)
