"""Check a store session by session and, with ``--fix``, repair each session in a write
transaction of its own; the outcome's exit status.

Every session is read with one statement (a consistent view of it, and no lock held
between sessions). A fix first plans every repair, writes the backup, then repairs the
sessions in short write transactions (a session's repair is never split; a
transaction takes in further sessions for BATCH_SECONDS): each repair re-reads its
session under the write lock and goes ahead only when the session still holds the rows
it was planned on (and so the rows the backup holds). A live writer therefore waits
for one short transaction at most, and a session it wrote to meanwhile is left for the
next run.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from histcore.cli.doctor.archive_units import transcript_units
from histcore.cli.doctor.diagnose import Findings, analyse
from histcore.cli.doctor.read import (
    DoctorError,
    RepairStopped,
    RowChanges,
    RowFacts,
    Store,
    StoredForm,
    StoreLocked,
    Tables,
)
from histcore.cli.doctor.repair import Repair, plan_repair, repaired_rows
from histcore.cli.doctor.restore import restore_command
from histcore.cli.doctor.side import SideFacts
from histcore.cli.doctor.sqlite import SQLiteStore

__all__ = [
    "BATCH_SECONDS",
    "BUSY_TIMEOUT",
    "EXIT_CLEAN",
    "EXIT_ERROR",
    "EXIT_LOCKED",
    "EXIT_PROBLEMS",
    "PROGRESS_ROWS",
    "Progress",
    "SessionReport",
    "StoreLocked",
    "StoreReport",
    "check_store",
    "open_store",
]

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR, EXIT_LOCKED = 0, 1, 2, 3
#: Seconds the doctor waits for another process's lock by default.
BUSY_TIMEOUT = 0.5
#: A repair transaction takes in further sessions for this many seconds (a session's
#: repair is never split); SQLite stores then stay unlocked as long.
BATCH_SECONDS = 0.05
#: Stores with more rows than this report their progress (on stderr).
PROGRESS_ROWS = 100_000


@dataclass
class SessionReport:
    session_id: str
    rows: int
    findings: Findings
    #: with --fix: "fixed", "clean", "left" (problems, nothing the fix may change) or
    #: "skipped" (the session changed while the doctor ran); with --dry-run "planned"
    #: instead of "fixed"; None without either
    fix: str | None = None
    reason: str | None = None
    repair: Repair | None = None
    #: with --fix, the findings of the session as it reads afterwards
    after: Findings | None = None
    #: rows with no ``message_structure`` row (an ``AdvancedSQLiteSession`` store): the
    #: SDK does not read them; reported, never changed (a writer may be between its
    #: two inserts)
    without_structure: list[int] = field(default_factory=list)
    #: its revision, op ids and archive (``side.py``); with --fix, as it reads after
    side: SideFacts = field(default_factory=SideFacts)

    @property
    def without_structure_left(self) -> list[int]:
        """``without_structure`` still in the store (a repair may have deleted some)."""
        if self.fix != "fixed" or self.repair is None:
            return self.without_structure
        deleted = set(self.repair.deletions)
        return [row_id for row_id in self.without_structure if row_id not in deleted]

    @property
    def left(self) -> dict[str, int]:
        """Problems still in the store after this run."""
        return (self.after if self.after is not None else self.findings).counts()


@dataclass
class StoreReport:
    path: str
    sessions: list[SessionReport]
    fix: bool
    backup: str | None = None
    #: rows no session reads, by why (their session_id is "null", a "blob", ...)
    rows_without_session: dict[str, list[int]] = field(default_factory=dict)
    #: --dry-run: every repair planned (``SessionReport.repair``), none applied
    dry_run: bool = False
    drop_invalid_rows: bool = False
    #: how the store was opened, when that was unusual (a SQLite file read immutable)
    notes: list[str] = field(default_factory=list)
    #: the command that puts back what the fix changed (SQLite: ``--restore``)
    restore: str | None = None
    #: what becomes of a call whose output is missing (``--dangling``)
    dangling: str = "drop"

    @property
    def exit_code(self) -> int:
        left = any(
            any(entry.left.values()) or entry.without_structure_left or entry.side.problems
            for entry in self.sessions
        )
        return EXIT_PROBLEMS if left or self.rows_without_session else EXIT_CLEAN


@dataclass
class _Planned:
    entry: SessionReport
    #: the session as planned on, and as it reads after the repair: ids and digests
    #: only (every session is planned before the first is repaired)
    expected: StoredForm
    repair: Repair
    #: the rows it keeps as they read after the repair; the appended rows' digests
    predicted: StoredForm
    appended: tuple[bytes, ...]


def open_store(
    path: str | None,
    dsn: str | None = None,
    *,
    writable: bool = False,
    busy_timeout: float = BUSY_TIMEOUT,
    tables: Tables | None = None,
) -> Store:
    """The store at ``path`` (SQLite) or ``dsn`` (PostgreSQL); DoctorError if none."""
    tables = tables if tables is not None else Tables()
    if dsn is not None:
        from histcore.cli.doctor.postgres import PostgresStore

        return PostgresStore(dsn, writable=writable, busy_timeout=busy_timeout, tables=tables)
    if path is None:
        raise DoctorError("give the PATH of a SQLite store or the --dsn of a PostgreSQL one")
    return SQLiteStore(path, writable=writable, busy_timeout=busy_timeout, tables=tables)


class Progress:
    """Progress lines for a large store (over PROGRESS_ROWS rows): one when the check
    starts, then at most one every ``interval`` seconds, and one at the end."""

    def __init__(self, stream: TextIO, interval: float = 1.0) -> None:
        self._stream = stream
        self._interval = interval
        self._total = 0
        self._sessions = 0
        self._done = 0
        self._checked = 0
        self._started = self._shown = time.monotonic()

    def start(self, total_rows: int, sessions: int) -> None:
        self._total, self._sessions = total_rows, sessions
        self._started = self._shown = time.monotonic()
        if self._on:
            self._line(f"checking {total_rows} rows in {sessions} session(s)")

    @property
    def _on(self) -> bool:
        return self._total > PROGRESS_ROWS

    def checked(self, rows: int) -> None:
        self._done += rows
        self._checked += 1
        now = time.monotonic()
        if self._on and now - self._shown >= self._interval:
            self._shown = now
            self._line(
                f"checked {self._done} of {self._total} rows "
                f"({self._checked} of {self._sessions} session(s))"
            )

    def repairing(self, sessions: int) -> None:
        if self._on:
            self._line(f"repairing {sessions} session(s)")

    def finished(self) -> None:
        if self._on:
            seconds = time.monotonic() - self._started
            self._line(f"done: {self._done} rows in {self._checked} session(s), {seconds:.1f}s")

    def _line(self, text: str) -> None:
        self._stream.write(f"histcore doctor: {text}\n")
        self._stream.flush()


def check_store(
    path: str | None,
    session: str | None = None,
    fix: bool = False,
    *,
    dsn: str | None = None,
    drop_invalid_rows: bool = False,
    busy_timeout: float = BUSY_TIMEOUT,
    tables: Tables | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    dangling: str = "drop",
) -> StoreReport:
    """Check (and with ``fix`` repair) the sessions of the store at ``path`` or ``dsn``;
    with ``dry_run``, plan every repair and apply none (nothing is written).
    ``dangling``: what the repair does with a call whose output is missing
    (``repair_input``'s option: ``"drop"`` its unit, or ``"synthesize"`` an output).

    Raises DoctorError when the store cannot be read or ``session`` is not in it, and
    StoreLocked when another process holds it longer than ``busy_timeout`` seconds.
    """
    writable = fix and not dry_run
    store = open_store(path, dsn, writable=writable, busy_timeout=busy_timeout, tables=tables)
    report = StoreReport(
        path=store.name,
        sessions=[],
        fix=writable,
        dry_run=dry_run,
        drop_invalid_rows=drop_invalid_rows,
        dangling=dangling,
    )
    notice = getattr(store, "notice", None)
    if notice:
        report.notes.append(notice)
    try:
        _refuse_synthesize(store, dangling)
        _check(store, report, session, progress)
    finally:
        store.close()
    if report.backup is not None and path is not None and dsn is None:
        report.restore = restore_command(report.backup, path, tables or Tables())
    return report


def _refuse_synthesize(store: Store, dangling: str) -> None:
    linked = getattr(store, "linked_tables", [])
    if dangling == "synthesize" and linked:
        raise DoctorError(
            f"{store.name}: --dangling synthesize cannot repair a store with "
            f"{' and '.join(linked)} (the SDK's AdvancedSQLiteSession): a synthesized "
            "output would need a turn and branch place the doctor cannot give it; "
            "use --dangling drop"
        )


def _check(
    store: Store, report: StoreReport, session: str | None, progress: Progress | None
) -> None:
    selected = _selected(store, session)
    if session is None:
        report.rows_without_session = store.rows_without_session()
    if progress is not None:
        progress.start(store.row_count(), len(selected))
    planned: list[_Planned] = []
    for session_id in selected:
        plan = _check_session(store, session_id, report)
        if plan is not None:
            planned.append(plan)
        if progress is not None:
            progress.checked(report.sessions[-1].rows)
    if report.dry_run:
        for plan in planned:
            plan.entry.fix, plan.entry.after = "planned", None
    elif planned:
        if progress is not None:
            progress.repairing(len(planned))
        _apply(store, report, planned)
        for plan in planned:
            if plan.entry.fix == "fixed":
                # The live rows again only where the archive is checked with them.
                live = store.read_facts(plan.entry.session_id) if plan.entry.side.archived else None
                plan.entry.side = _side_facts(store, plan.entry.session_id, live)
    if progress is not None:
        progress.finished()


def _check_session(store: Store, session_id: str, report: StoreReport) -> _Planned | None:
    """Check one session into ``report``; with --fix or --dry-run, its repair."""
    rows = store.read_facts(session_id)
    analysis = analyse(rows)
    entry = SessionReport(session_id, len(rows), analysis.findings)
    entry.without_structure = store.rows_without_structure(session_id)
    entry.side = _side_facts(store, session_id, rows)
    report.sessions.append(entry)
    if not (report.fix or report.dry_run):
        return None
    repair = plan_repair(analysis, report.drop_invalid_rows, report.dangling)
    # The analysis is as large as the session: not kept while the repair's is made.
    del analysis
    return _plan(entry, rows, repair, report)


def _side_facts(store: Store, session_id: str, live: list[RowFacts] | None) -> SideFacts:
    """The session's side facts, its archive checked with its ``live`` rows (read before
    them; None: read after them, here, when it has an archive)."""
    side: SideFacts = store.side_facts(session_id)
    if side.archived_items:
        side = transcript_units(side, store.read_facts(session_id) if live is None else live)
    return side


def _selected(store: Store, session: str | None) -> list[str]:
    ids = store.session_ids()
    if session is None:
        return ids
    if session not in ids:
        raise DoctorError(f"{store.name}: no session {session!r} in this store")
    return [session]


def _plan(
    entry: SessionReport, rows: list[RowFacts], repair: Repair, report: StoreReport
) -> _Planned | None:
    """Decide what --fix does with one session; the repair to apply, if any."""
    drop_invalid = report.drop_invalid_rows
    findings = entry.findings
    if findings.set_aside and not drop_invalid:
        entry.reason = (
            f"{len(findings.set_aside)} row(s) that are not valid JSON or not items are "
            "left as they are (--drop-invalid-rows deletes them; the backup keeps them)"
        )
    if not repair.changes:
        entry.fix = "clean" if findings.clean else "left"
        if entry.fix == "left" and entry.reason is None:
            entry.reason = "no repair applies (user messages are never dropped)"
        return None
    predicted = repaired_rows(rows, repair)
    after = analyse(predicted)
    if plan_repair(after, drop_invalid, report.dangling).changes:
        entry.fix, entry.reason = "skipped", "its repair would not settle; left untouched"
        return None
    entry.fix, entry.repair, entry.after = "fixed", repair, after.findings
    kept = len(predicted) - len(repair.appended)
    appended = tuple(row.digest for row in predicted[kept:])
    return _Planned(entry, StoredForm(rows), repair, StoredForm(predicted[:kept]), appended)


def _apply(store: Store, report: StoreReport, planned: Sequence[_Planned]) -> None:
    # The backup holds every session to repair as it was planned on: a repair goes
    # ahead only when its session still reads so.
    report.backup = store.write_backup([plan.entry.session_id for plan in planned])
    repaired: list[str] = []
    queue = deque(planned)
    while queue:
        batch: list[_Planned] = []
        try:
            with store.transaction():
                started = time.monotonic()
                while queue and (not batch or time.monotonic() - started < BATCH_SECONDS):
                    plan = queue.popleft()
                    batch.append(plan)
                    _repair(store, plan)
        except DoctorError as exc:
            raise RepairStopped.after(exc, repaired, report.backup) from exc
        repaired += [plan.entry.session_id for plan in batch if plan.entry.fix == "fixed"]


def _repair(store: Store, plan: _Planned) -> None:
    entry = plan.entry
    repair = plan.repair
    changes = RowChanges(
        plan.expected,
        repair.updates,
        repair.deletions,
        plan.predicted,
        repair.appended,
        plan.appended,
    )
    if not store.repair(entry.session_id, changes):
        entry.fix, entry.repair, entry.after = "skipped", None, None
        entry.reason = (
            "its rows changed while the doctor ran (a live writer): left untouched, "
            "run the doctor again"
        )
