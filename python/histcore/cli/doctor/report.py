"""A checked store as text (for people); as JSON (for programs) in ``report_json``."""

from __future__ import annotations

from collections.abc import Sequence

from histcore.cli.doctor.check import SessionReport, StoreReport
from histcore.cli.doctor.diagnose import AWAITING, UNIT_KINDS, Findings, Spot
from histcore.cli.doctor.repair import Repair
from histcore.cli.doctor.report_json import WITHOUT_STRUCTURE, render_json
from histcore.cli.doctor.side import (
    ARCHIVED_AFTER_REVISION,
    ARCHIVED_PARTIAL_UNIT,
    WRITE_OUTSIDE_IDS,
    SideFacts,
)
from histcore.sessions._store_readers.model import row_ids_text

__all__ = ["WITHOUT_STRUCTURE", "render_json", "render_text", "row_id_ranges"]

_LABELS = {
    "invalid_json": ("row that is not valid JSON", "rows that are not valid JSON"),
    "not_item": ("row that is JSON but not an item", "rows that are JSON but not items"),
    "non_string_call_id": (
        "item whose call_id is not a string",
        "items whose call_id is not a string",
    ),
    "output_before_call": (
        "tool output stored before its call",
        "tool outputs stored before their call",
    ),
    "output_without_call": ("tool output without a call", "tool outputs without a call"),
    "duplicate_calls": ("duplicate tool call", "duplicate tool calls"),
    "duplicate_outputs": ("duplicate tool output", "duplicate tool outputs"),
    "calls_without_output": ("call without an output", "calls without an output"),
    "duplicate_id": ("item with a duplicate id", "items with a duplicate id"),
    "reasoning_without_item": (
        "reasoning item without the item it produced",
        "reasoning items without the item they produced",
    ),
    "item_without_reasoning": (
        "item without its reasoning item",
        "items without their reasoning item",
    ),
    "reasoning_without_successor": (
        "reasoning item without the item stored after it",
        "reasoning items without the item stored after them",
    ),
    AWAITING: (
        "call awaiting its output (paused for approval: kept)",
        "calls awaiting their output (paused for approval: kept)",
    ),
}
# Detail lines of the model-input findings, by engine kind.
_UNIT_DETAIL = {
    "output_without_call": "output without a call",
    "call_without_output": "call without an output",
    "duplicate_id": "duplicate id",
    "reasoning_without_item": "reasoning without its item",
    "item_without_reasoning": "item without its reasoning",
    "reasoning_without_successor": "reasoning without the item stored after it",
    AWAITING: "awaiting its output",
}
#: The one-line explanation of ``WITHOUT_STRUCTURE`` rows.
_WITHOUT_STRUCTURE_WHY = (
    "AdvancedSQLiteSession does not read them and its next pop_item deletes them; "
    "never changed by the doctor (a writer may be between its two inserts): once none "
    "runs, re-add each item with add_items and delete its row, or delete it"
)
# The archive's problems (``side.py``): reported, never changed.
_SIDE_WHY = {
    ARCHIVED_AFTER_REVISION: "archived row ids {ids}: removed by a revision above the "
    "session's revision {revision}",
    WRITE_OUTSIDE_IDS: "noted writes from row ids {ids}: not within the ids the "
    "messages table ever handed out",
    ARCHIVED_PARTIAL_UNIT: "archived row ids {ids}: their unit is not whole in the "
    "transcript (a call, output or reasoning item it needs is neither live nor archived)",
}
_WITHOUT_SESSION = {
    "null": "a NULL session_id",
    "blob": "a BLOB session_id",
    "not_utf8": "a session_id that is not UTF-8",
}


def _describe(counts: dict[str, int]) -> str:
    parts = [
        f"{count} {_LABELS[name][0 if count == 1 else 1]}"
        for name, count in counts.items()
        if count
    ]
    return ", ".join(parts)


def render_text(report: StoreReport, quiet: bool = False) -> str:
    """A header line, each session's findings (and with --fix what was done), a summary.

    ``quiet``: problems only, no header and no clean session; nothing at all for a store
    with none."""
    lines = (
        []
        if quiet
        else [
            f"histcore doctor: {report.path}: {len(report.sessions)} session(s) checked",
            *[f"note: {note}" for note in report.notes],
        ]
    )
    for entry in report.sessions:
        findings = entry.findings
        if (
            quiet
            and findings.clean
            and entry.fix in (None, "clean")
            and not entry.without_structure
            and not entry.side.problems
        ):
            continue
        found = ", ".join(
            part
            for part in (
                _describe(findings.counts()),
                _without_structure(entry),
                _side_problems(entry.side),
            )
            if part
        )
        found = found or "clean"
        info = _describe(findings.info())
        lines.append(
            f"session {entry.session_id!r} ({entry.rows} rows): {found}"
            + (f"; {info}" if info else "")
        )
        lines += _detail_lines(findings)
        if entry.without_structure:
            lines.append(
                f"  {WITHOUT_STRUCTURE}: row ids {row_ids_text(entry.without_structure)} "
                f"({_WITHOUT_STRUCTURE_WHY})"
            )
        lines += _side_lines(entry.side)
        lines += _fix_lines(entry)
    lines += _without_session_lines(report.rows_without_session)
    if lines or not quiet:
        lines.append(_summary(report))
    return "\n".join(lines)


def _without_structure(entry: SessionReport) -> str:
    count = len(entry.without_structure)
    if not count:
        return ""
    return f"{count} row{'' if count == 1 else 's'} without a message_structure row"


def _side_problems(side: SideFacts) -> str:
    count = sum(len(found) for found in side.problems.values())
    return f"{count} archive problem{'' if count == 1 else 's'}" if count else ""


def _side_lines(side: SideFacts) -> list[str]:
    """One line for a session with an archive; one per kind of archive problem."""
    if not side.has_archive:
        return []
    lines = [
        f"  archive: {side.archived} archived row(s), {side.writes} noted write(s); "
        f"revision {side.revision}, {side.op_ids} op id(s) remembered"
    ]
    for kind, found in side.problems.items():
        why = _SIDE_WHY[kind].format(ids=row_ids_text(found), revision=side.revision)
        lines.append(f"  {kind}: {why} (never changed by the doctor)")
    return lines


def _spots(spots: list[Spot]) -> str:
    return _first([f"{spot.detail or '(no id)'} (row {spot.row_id})" for spot in spots])


def _first(names: list[str], limit: int = 8) -> str:
    """The first ``limit`` names, then how many there are (a line stays a line: a
    large store can hold hundreds of thousands; ``--json`` lists them all)."""
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _detail_lines(findings: Findings) -> list[str]:
    lines = []
    by_reason: dict[str, list[int]] = {}
    for row_id in findings.invalid_rows:
        by_reason.setdefault(findings.invalid_reasons.get(row_id, "not JSON"), []).append(row_id)
    for reason, row_ids in by_reason.items():
        lines.append(f"  not valid JSON ({reason}): row ids {row_ids_text(row_ids)}")
    if findings.not_items:
        lines.append(f"  JSON but not an item: row ids {row_ids_text(findings.not_items)}")
    if findings.bad_call_ids:
        lines.append(f"  call_id not a string: row ids {row_ids_text(findings.bad_call_ids)}")
    if findings.outputs_before_call:
        lines.append(f"  output before its call: {_first(findings.outputs_before_call)}")
    for label, found in (
        ("duplicate calls", findings.duplicate_calls),
        ("duplicate outputs", findings.duplicate_outputs),
    ):
        if found:
            lines.append(f"  {label}: " + _first([f"{k} (+{v})" for k, v in found.items()]))
    for kind in UNIT_KINDS:
        if findings.unit.get(kind):
            lines.append(f"  {_UNIT_DETAIL[kind]}: {_spots(findings.unit[kind])}")
    if findings.awaiting:
        lines.append(f"  {_UNIT_DETAIL[AWAITING]}: {_spots(findings.awaiting)}")
    return lines


def _steps(repair: Repair) -> str:
    return ", ".join(
        f"{count} {what}"
        for count, what in (
            (repair.deduped, "duplicate(s)"),
            (repair.dropped_units, "in broken units"),
            (repair.dropped_invalid, "invalid"),
        )
        if count
    )


def _fix_lines(entry: SessionReport) -> list[str]:
    lines = []
    repair = entry.repair
    if entry.fix == "fixed" and repair is not None:
        steps = _steps(repair)
        lines.append(
            f"  fixed: {len(repair.deletions)} row(s) removed"
            + (f" ({steps})" if steps else "")
            + f", {len(repair.updates)} row(s) given {_new_content(repair)}"
            + _synthesized(repair)
        )
    elif entry.fix == "planned" and repair is not None:
        if repair.deletions:
            lines.append(
                f"  --fix would remove {len(repair.deletions)} row(s) ({_steps(repair)}): "
                f"row ids {row_id_ranges(repair.deletions)}"
            )
        if repair.updates:
            rewritten = sorted(row_id for row_id, _ in repair.updates)
            lines.append(
                f"  --fix would give {len(rewritten)} row(s) {_new_content(repair)}: "
                f"row ids {row_id_ranges(rewritten)}"
            )
        if repair.synthesized:
            lines.append(
                f"  --fix would insert {len(repair.synthesized)} synthesized output(s), "
                f"for calls {_first([output.call_id for output in repair.synthesized])}, "
                f"each right after its call, appending {len(repair.appended)} row(s)"
            )
    elif entry.fix in ("skipped", "left"):
        lines.append("  not repaired, left untouched")
    if entry.reason:
        lines.append(f"  note: {entry.reason}")
    if entry.after is not None and not entry.after.clean:
        lines.append(f"  left: {_describe(entry.after.counts())}")
    return lines


def _new_content(repair: Repair) -> str:
    if repair.synthesized:
        return "their new content (their latest, or the row before them moved one place on)"
    return "their latest content"


def _synthesized(repair: Repair) -> str:
    if not repair.synthesized:
        return ""
    calls = _first([output.call_id for output in repair.synthesized])
    return (
        f", {len(repair.synthesized)} output(s) synthesized (marked as lost) for calls "
        f"{calls}, {len(repair.appended)} row(s) appended"
    )


def row_id_ranges(row_ids: Sequence[int]) -> str:
    """Every one of ``row_ids`` (ascending), runs of consecutive ids as ``first-last``."""
    parts: list[str] = []
    start = previous = None
    for row_id in row_ids:
        if previous is not None and row_id == previous + 1:
            previous = row_id
            continue
        if start is not None:
            parts.append(_run(start, previous))
        start = previous = row_id
    if start is not None:
        parts.append(_run(start, previous))
    return ", ".join(parts)


def _run(start: int, end: int | None) -> str:
    return str(start) if end is None or end == start else f"{start}-{end}"


def _without_session_lines(found: dict[str, list[int]]) -> list[str]:
    if not found:
        return []
    parts = [
        f"{len(row_ids)} with {_WITHOUT_SESSION.get(why, f'a {why} session_id')} "
        f"(row ids {row_ids_text(row_ids)})"
        for why, row_ids in found.items()
    ]
    return ["rows outside any session (no session reads them; never changed): " + "; ".join(parts)]


_SET_ASIDE = ("invalid_json", "not_item", "non_string_call_id")


def _summary(report: StoreReport) -> str:
    troubled = sum(
        1
        for entry in report.sessions
        if not entry.findings.clean or entry.without_structure or entry.side.problems
    )
    summary = f"{troubled} of {len(report.sessions)} session(s) with problems"
    stray = sum(len(row_ids) for row_ids in report.rows_without_session.values())
    if stray:
        summary += f", {stray} row(s) outside any session"
    unread = sum(len(entry.without_structure_left) for entry in report.sessions)
    if unread:
        summary += (
            f", {unread} row(s) without a message_structure row "
            f"({WITHOUT_STRUCTURE}: reported only, never changed)"
        )
    # Rows the rules cannot place (not JSON, not items, a call_id that is no string),
    # which only --drop-invalid-rows deletes, and the problems a plain --fix repairs.
    left = [entry.left for entry in report.sessions]
    invalid = sum(counts[key] for counts in left for key in _SET_ASIDE)
    other = any(count for counts in left for key, count in counts.items() if key not in _SET_ASIDE)
    if report.dry_run:
        planned = sum(1 for entry in report.sessions if entry.fix == "planned")
        return summary + f"; --dry-run: {planned} would be repaired, nothing was changed"
    if report.fix:
        fixed = sum(1 for entry in report.sessions if entry.fix == "fixed")
        summary += f"; {fixed} repaired"
        if report.backup:
            summary += f"; backup written to {report.backup}"
            if report.restore:
                summary += f" (to put it back: {report.restore})"
        if invalid and not report.drop_invalid_rows:
            summary += (
                f"; {invalid} row(s) that are not valid JSON or not items are left: "
                "--fix --drop-invalid-rows deletes them (the backup keeps them)"
            )
    elif other:
        summary += "; run with --fix to repair (a backup is written first)"
        if invalid:
            summary += (
                f"; {invalid} row(s) that are not valid JSON or not items stay unless "
                "--drop-invalid-rows is given too"
            )
    elif invalid:
        summary += (
            f"; {invalid} row(s) that are not valid JSON or not items: run with --fix "
            "--drop-invalid-rows to delete them (a backup is written first)"
        )
    return summary
