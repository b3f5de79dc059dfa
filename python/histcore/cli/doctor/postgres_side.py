"""The side tables of a PostgreSQL store's history transactions (``side.py``):
``<sessions>_revisions``, ``_op_ids``, ``_archive`` and ``_writes``, in either layout.

A repair counts as one more revision by the layout's own rule: in histcore's, the
revision with the session's newest row id (as ``Statements.count_revision``); in the
SDK's, the revision with the stamp of the session's rows (``_postgres_freshness``), as
``SdkStatements.count_to``. A store without the revisions table is left without one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from histcore.cli.doctor.side import SideFacts, archive_side_facts
from histcore.sessions._postgres_freshness import ROW_HASH

__all__ = ["bump_postgres", "postgres_side_facts"]

#: Runs one statement, returns its rows.
Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def _exists(execute: Execute, table: str) -> bool:
    return execute("SELECT to_regclass(%s)", (table,))[0][0] is not None


def postgres_side_facts(
    execute: Execute, sessions: str, messages: str, session_id: str
) -> SideFacts:
    """The session's side facts (each a short statement)."""
    revisions, ops = f"{sessions}_revisions", f"{sessions}_op_ids"
    archive, writes = f"{sessions}_archive", f"{sessions}_writes"
    revision = op_ids = 0
    if _exists(execute, revisions):
        found = execute(f"SELECT revision FROM {revisions} WHERE session_id = %s", (session_id,))
        revision = int(found[0][0]) if found else 0
    if _exists(execute, ops):
        found = execute(f"SELECT count(*) FROM {ops} WHERE session_id = %s", (session_id,))
        op_ids = int(found[0][0])
    archived: list[tuple[int, Any, int]] = []
    noted: list[tuple[int, int]] = []
    if _exists(execute, archive):
        # One column of stored text in both layouts (``_postgres_statements._add_archive``).
        query = f"SELECT id, message_text, removed_revision FROM {archive} WHERE session_id = %s"
        archived = [(int(a), b, int(c)) for a, b, c in execute(query, (session_id,))]
    if _exists(execute, writes):
        query = f"SELECT first_id, last_id FROM {writes} WHERE session_id = %s"
        noted = [(int(a), int(b)) for a, b in execute(query, (session_id,))]
    return archive_side_facts(
        revision, op_ids, archived, noted, lambda: _handed_out(execute, messages)
    )


def _handed_out(execute: Execute, messages: str) -> int:
    """The highest row id the messages table holds or its id sequence gave (its last
    value may be NULL when never used)."""
    newest = execute(f"SELECT max(id) FROM {messages}", ())[0][0]
    found = [int(newest or 0)]
    sequence = execute("SELECT pg_get_serial_sequence(%s, 'id')", (messages,))[0][0]
    if sequence is not None:
        last = execute("SELECT pg_sequence_last_value(%s::regclass)", (sequence,))[0][0]
        if last is not None:
            found.append(int(last))
    return max(found)


def bump_postgres(
    execute: Execute, sessions: str, messages: str, session_id: str, sdk_layout: bool
) -> None:
    """Inside the repair's transaction, after its writes: one more revision."""
    revisions = f"{sessions}_revisions"
    if not _exists(execute, revisions):
        return
    if not sdk_layout:
        execute(
            f"INSERT INTO {revisions} AS r (session_id, revision, last_id) "
            f"VALUES (%s, 1, (SELECT max(id) FROM {messages} WHERE session_id = %s)) "
            "ON CONFLICT (session_id) DO UPDATE "
            "SET revision = r.revision + 1, last_id = EXCLUDED.last_id",
            (session_id, session_id),
        )
        return
    execute(
        f"INSERT INTO {revisions} AS r (session_id, revision, rows, digest, ops) "
        f"SELECT %s, 1, count(*), coalesce(sum({ROW_HASH}), 0), 0 FROM {messages} "
        "WHERE session_id = %s ON CONFLICT (session_id) DO UPDATE "
        "SET revision = r.revision + 1, rows = EXCLUDED.rows, digest = EXCLUDED.digest",
        (session_id, session_id),
    )
