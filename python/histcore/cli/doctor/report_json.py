"""A checked store as JSON (for programs): its keys are what scripts rely on."""

from __future__ import annotations

from typing import Any

from histcore.cli.doctor.check import SessionReport, StoreReport
from histcore.cli.doctor.diagnose import AWAITING, UNIT_KINDS, Findings

__all__ = ["WITHOUT_STRUCTURE", "render_json"]

#: The rule for message rows an ``AdvancedSQLiteSession`` store holds no
#: ``message_structure`` row of (SDK issue #4729).
WITHOUT_STRUCTURE = "row_without_structure"


def render_json(report: StoreReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (its keys are what scripts rely on)."""
    return {
        "path": report.path,
        "fix": report.fix,
        "dry_run": report.dry_run,
        "dangling": report.dangling,
        "backup": report.backup,
        "restore_command": report.restore,
        "exit_code": report.exit_code,
        "rows_without_session": report.rows_without_session,
        "notes": list(report.notes),
        "sessions": [_session_json(entry) for entry in report.sessions],
    }


def _details(findings: Findings) -> dict[str, Any]:
    details: dict[str, Any] = {
        "invalid_json_rows": findings.invalid_rows,
        "invalid_json_reasons": {str(k): v for k, v in findings.invalid_reasons.items()},
        "not_item_rows": findings.not_items,
        "non_string_call_id_rows": findings.bad_call_ids,
        "outputs_before_call": findings.outputs_before_call,
        "duplicate_calls": findings.duplicate_calls,
        "duplicate_outputs": findings.duplicate_outputs,
    }
    for kind, key in UNIT_KINDS.items():
        details[key] = [spot.detail for spot in findings.unit.get(kind, [])]
    details[AWAITING] = [spot.detail for spot in findings.awaiting]
    rows = {
        key: [spot.row_id for spot in findings.unit.get(kind, [])]
        for kind, key in UNIT_KINDS.items()
    }
    rows[AWAITING] = [spot.row_id for spot in findings.awaiting]
    details["rows"] = rows
    return details


def _session_json(entry: SessionReport) -> dict[str, Any]:
    findings = entry.findings
    repair = entry.repair
    return {
        "session_id": entry.session_id,
        "rows": entry.rows,
        "problems": findings.counts(),
        "info": findings.info(),
        "clean": findings.clean and not entry.without_structure and not entry.side.problems,
        "details": _details(findings),
        # row ids found before any --fix; those still there after it: ..._left (SDK #4729)
        WITHOUT_STRUCTURE: entry.without_structure,
        "fix": entry.fix,
        "reason": entry.reason,
        "removed_rows": list(repair.deletions) if repair else [],
        "rewritten_rows": [row_id for row_id, _ in repair.updates] if repair else [],
        # calls given a synthesized output (--dangling synthesize), and rows appended
        "synthesized": [output.call_id for output in repair.synthesized] if repair else [],
        "appended_rows": len(repair.appended) if repair else 0,
        "left": entry.left,
        f"{WITHOUT_STRUCTURE}_left": entry.without_structure_left,
        # history transactions (with --fix, as the session reads after it)
        "revision": entry.side.revision,
        "op_ids": entry.side.op_ids,
        "archived_rows": entry.side.archived,
        "noted_writes": entry.side.writes,
        "archive_problems": entry.side.problems,
    }
