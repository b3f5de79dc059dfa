"""The whole store in one transaction: read and diagnose every session and, with
``--fix``, repair what can be repaired before committing; the outcome's exit status."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from histcore.cli.doctor.diagnose import Findings, diagnose
from histcore.cli.doctor.read import DoctorError, Row, connect, read_rows, session_ids
from histcore.cli.doctor.repair import Repair, apply_repair, plan_repair, write_backup

__all__ = [
    "EXIT_CLEAN",
    "EXIT_ERROR",
    "EXIT_PROBLEMS",
    "SessionReport",
    "StoreReport",
    "check_store",
]

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


@dataclass
class SessionReport:
    session_id: str
    rows: int
    findings: Findings
    #: with --fix: "fixed", "skipped" (with ``reason``) or "clean"; None without --fix
    fix: str | None = None
    reason: str | None = None
    repair: Repair | None = None

    @property
    def left(self) -> dict[str, int]:
        """Problems still in the store after this run."""
        counts = self.findings.counts()
        if self.fix == "fixed":
            return {"calls_without_output": counts["calls_without_output"]}
        return counts


@dataclass
class StoreReport:
    path: str
    sessions: list[SessionReport]
    fix: bool
    backup: str | None = None

    @property
    def exit_code(self) -> int:
        if self.fix:
            left = any(any(s.left.values()) for s in self.sessions)
        else:
            left = any(not s.findings.clean for s in self.sessions)
        return EXIT_PROBLEMS if left else EXIT_CLEAN


def check_store(path: str, session: str | None = None, fix: bool = False) -> StoreReport:
    """Check (and with ``fix`` repair) the sessions of the store at ``path``.

    Raises DoctorError when the store cannot be read or ``session`` is not in it.
    """
    connection = connect(path, writable=fix)
    try:
        # One transaction: a consistent view to check, and (with fix) the write lock
        # held from the check to the commit, so no other writer slips in between.
        connection.execute("BEGIN IMMEDIATE" if fix else "BEGIN")
        try:
            report = _check(connection, path, session, fix)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as exc:
        raise DoctorError(f"{path}: {exc}") from exc
    finally:
        connection.close()
    return report


def _check(
    connection: sqlite3.Connection, path: str, session: str | None, fix: bool
) -> StoreReport:
    rows_by_session = {
        session_id: read_rows(connection, session_id)
        for session_id in _selected(connection, path, session)
    }
    sessions = [
        SessionReport(session_id, len(rows), diagnose(rows))
        for session_id, rows in rows_by_session.items()
    ]
    report = StoreReport(path=path, sessions=sessions, fix=fix)
    if fix:
        _plan_fixes(sessions, rows_by_session)
        _apply_fixes(connection, report)
    return report


def _selected(connection: sqlite3.Connection, path: str, session: str | None) -> list[str]:
    ids = session_ids(connection)
    if session is None:
        return ids
    if session not in ids:
        raise DoctorError(f"{path}: no session {session!r} in this store")
    return [session]


def _plan_fixes(sessions: list[SessionReport], rows_by_session: dict[str, list[Row]]) -> None:
    for entry in sessions:
        if not any(entry.findings.repairable_counts().values()):
            entry.fix = "clean"
            continue
        plan = plan_repair(rows_by_session[entry.session_id])
        if isinstance(plan, str):
            entry.fix, entry.reason = "skipped", plan
        else:
            entry.fix, entry.repair = "fixed", plan


def _apply_fixes(connection: sqlite3.Connection, report: StoreReport) -> None:
    # No backup when nothing is to change; a repair that does not read back clean
    # raises, and check_store's rollback then undoes every session's repair.
    to_fix = [entry for entry in report.sessions if entry.repair is not None]
    if not to_fix:
        return
    report.backup = write_backup(report.path)
    for entry in to_fix:
        assert entry.repair is not None
        apply_repair(connection, entry.session_id, entry.repair)
        after = diagnose(read_rows(connection, entry.session_id))
        if any(after.repairable_counts().values()):
            raise DoctorError(
                f"{report.path}: session {entry.session_id!r} still has problems after its "
                "repair; nothing was changed"
            )
