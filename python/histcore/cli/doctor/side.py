"""What the doctor reads of histcore's history transactions (docs/design.md, "History
transactions"): per session its revision, the op ids it remembers, and the archive of a
``keep_replaced=True`` session (archived rows, noted writes), from the side tables
beside the messages (SQLite here, PostgreSQL in ``postgres_side.py``).

The archive is checked, never changed: an archived row removed by a revision above the
session's revision (``archived_after_revision``), a noted write whose row ids are not
within the ids ever handed out (``write_outside_ids``), and an archived row whose unit
is not whole in the transcript (``archived_partial_unit``, ``archive_units.py``, which
needs the live rows too) are problems. A repair or a restore counts as one more
revision, so a reader holding the old one cannot ``replace_suffix`` over it
(``bump_sqlite``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from histcore.cli.doctor.read import ITEM, row_facts
from histcore.sessions import _sqlite_archive, _sqlite_revisions

__all__ = [
    "ARCHIVED_AFTER_REVISION",
    "ARCHIVED_PARTIAL_UNIT",
    "SIDE_KINDS",
    "WRITE_OUTSIDE_IDS",
    "ArchivedItem",
    "SideFacts",
    "archive_side_facts",
    "bump_sqlite",
    "check_archive",
    "sqlite_side_facts",
]

ARCHIVED_AFTER_REVISION = "archived_after_revision"
WRITE_OUTSIDE_IDS = "write_outside_ids"
ARCHIVED_PARTIAL_UNIT = "archived_partial_unit"
SIDE_KINDS = (ARCHIVED_AFTER_REVISION, WRITE_OUTSIDE_IDS, ARCHIVED_PARTIAL_UNIT)
#: An archived row that holds an item: its id, the item's ``facts.stand_in`` and the
#: revision that removed it.
ArchivedItem = tuple[int, dict[str, Any], int]
# Archived rows are never repaired, so their data is never compared: no digest.
_NO_DIGEST = b""


@dataclass(frozen=True)
class SideFacts:
    """A session's history-transaction state (all 0 where the store keeps none)."""

    revision: int = 0
    op_ids: int = 0
    archived: int = 0
    writes: int = 0
    #: problem kind -> archived row ids, or the first ids of the noted writes
    problems: dict[str, list[int]] = field(default_factory=dict)
    #: the archived items, until ``archive_units.transcript_units`` has checked them
    #: with the live rows (and let them go)
    archived_items: tuple[ArchivedItem, ...] = field(default=(), repr=False, compare=False)

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


def archive_side_facts(
    revision: int,
    op_ids: int,
    archived: Iterable[tuple[int, Any, int]],
    writes: Sequence[tuple[int, int]],
    handed_out: Callable[[], int],
) -> SideFacts:
    """A session's side facts from what a store read: ``archived`` gives ``(id, stored
    data, removed_revision)`` per row (data None: not text), ``writes`` ``(first_id,
    last_id)`` per noted write; ``handed_out()`` reads the highest row id the messages
    table holds or its counter gave (read only for a session with an archive)."""
    removed: list[tuple[int, int]] = []
    items: list[ArchivedItem] = []
    for row_id, data, by in archived:
        removed.append((row_id, by))
        # Read as the live rows are (``read.row_facts``); the data goes once read.
        facts = row_facts(row_id, _NO_DIGEST, data)
        if facts.kind == ITEM and facts.item is not None:
            items.append((row_id, facts.item, by))
    if not (removed or writes):
        return SideFacts(revision, op_ids)
    highest = max([handed_out(), *(row_id for row_id, _ in removed)])
    return SideFacts(
        revision,
        op_ids,
        len(removed),
        len(writes),
        check_archive(revision, removed, writes, highest),
        tuple(items),
    )


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
    writes: list[tuple[int, int]] = []
    if _has_table(conn, _sqlite_archive.WRITES_TABLE):
        query = f"SELECT first_id, last_id FROM {_sqlite_archive.WRITES_TABLE} {where}"
        writes = [(int(a), int(b)) for a, b in conn.execute(query, key)]
    archived: Iterator[tuple[int, Any, int]] = iter(())
    if _has_table(conn, _sqlite_archive.ARCHIVE_TABLE):
        # As the live rows are read: bytes whatever the storage class (a TEXT value
        # that is not UTF-8 would fail to read as str), NULL and numbers not text; row
        # by row, each decoded as it comes.
        query = (
            "SELECT id, CAST(message_data AS BLOB), typeof(message_data), removed_revision "
            f"FROM {_sqlite_archive.ARCHIVE_TABLE} {where}"
        )
        archived = (
            (int(row_id), bytes(raw) if kind in ("text", "blob") else None, int(by))
            for row_id, raw, kind, by in conn.execute(query, key)
        )
    return archive_side_facts(
        revision, op_ids, archived, writes, lambda: _handed_out(conn, messages)
    )


def _handed_out(conn: sqlite3.Connection, messages: str) -> int:
    """The highest row id the messages table holds or AUTOINCREMENT's counter gave
    (``archive_side_facts`` adds the archived ids: a table without the counter)."""
    newest = conn.execute(f"SELECT max(id) FROM {messages}").fetchone()[0]
    found = [int(newest or 0)]
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
