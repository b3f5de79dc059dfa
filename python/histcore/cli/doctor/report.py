"""A checked store as text (for people) and as JSON (for programs)."""

from __future__ import annotations

from typing import Any

from histcore.cli.doctor.check import SessionReport, StoreReport
from histcore.cli.doctor.diagnose import Findings
from histcore.cli.doctor.read import row_ids_text

__all__ = ["render_json", "render_text"]

_LABELS = {
    "invalid_json": ("row that is not valid JSON", "rows that are not valid JSON"),
    "output_before_call": (
        "tool output stored before its call",
        "tool outputs stored before their call",
    ),
    "duplicate_calls": ("duplicate tool call", "duplicate tool calls"),
    "duplicate_outputs": ("duplicate tool output", "duplicate tool outputs"),
    "calls_without_output": ("call without an output", "calls without an output"),
}


def _describe(counts: dict[str, int]) -> str:
    parts = [
        f"{count} {_LABELS[name][0 if count == 1 else 1]}"
        for name, count in counts.items()
        if count
    ]
    return ", ".join(parts) if parts else "clean"


def render_text(report: StoreReport) -> str:
    """A header line, each session's findings (and with --fix what was done), a summary."""
    lines = [f"histcore doctor: {report.path}: {len(report.sessions)} session(s) checked"]
    for entry in report.sessions:
        lines.append(
            f"session {entry.session_id!r} ({entry.rows} rows): "
            f"{_describe(entry.findings.counts())}"
        )
        lines += _detail_lines(entry.findings)
        lines += _fix_lines(entry)
    lines.append(_summary(report))
    return "\n".join(lines)


def _detail_lines(findings: Findings) -> list[str]:
    lines = []
    if findings.invalid_rows:
        lines.append(f"  not valid JSON: row ids {row_ids_text(findings.invalid_rows)}")
    if findings.outputs_before_call:
        lines.append(f"  output before its call: {', '.join(findings.outputs_before_call)}")
    for label, found in (
        ("duplicate calls", findings.duplicate_calls),
        ("duplicate outputs", findings.duplicate_outputs),
    ):
        if found:
            lines.append(f"  {label}: " + ", ".join(f"{k} (+{v})" for k, v in found.items()))
    if findings.calls_without_output:
        lines.append(
            "  without an output: "
            + ", ".join(c or "(no call_id)" for c in findings.calls_without_output)
        )
    return lines


def _fix_lines(entry: SessionReport) -> list[str]:
    lines = []
    if entry.fix == "fixed" and entry.repair is not None:
        lines.append(
            f"  fixed: {len(entry.repair.deletions)} row(s) removed, "
            f"{len(entry.repair.updates)} row(s) given their latest content"
        )
    elif entry.fix == "skipped":
        lines.append(f"  not repaired, left untouched: {entry.reason}")
    if entry.fix is not None and entry.findings.calls_without_output:
        lines.append(
            "  calls without an output are kept: a run paused for approval stores its "
            "pending calls so, and the SDK leaves unanswered calls out of model input"
        )
    return lines


def _summary(report: StoreReport) -> str:
    troubled = sum(1 for entry in report.sessions if not entry.findings.clean)
    summary = f"{troubled} of {len(report.sessions)} session(s) with problems"
    if report.fix:
        fixed = sum(1 for entry in report.sessions if entry.fix == "fixed")
        summary += f"; {fixed} repaired"
        if report.backup:
            summary += f"; backup written to {report.backup}"
    elif troubled:
        summary += "; run with --fix to repair (a backup is written first)"
    return summary


def render_json(report: StoreReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (its keys are what scripts rely on)."""
    return {
        "path": report.path,
        "fix": report.fix,
        "backup": report.backup,
        "exit_code": report.exit_code,
        "sessions": [_session_json(entry, report.fix) for entry in report.sessions],
    }


def _session_json(entry: SessionReport, fix: bool) -> dict[str, Any]:
    findings = entry.findings
    return {
        "session_id": entry.session_id,
        "rows": entry.rows,
        "problems": findings.counts(),
        "clean": findings.clean,
        "details": {
            "invalid_json_rows": findings.invalid_rows,
            "outputs_before_call": findings.outputs_before_call,
            "duplicate_calls": findings.duplicate_calls,
            "duplicate_outputs": findings.duplicate_outputs,
            "calls_without_output": findings.calls_without_output,
        },
        "fix": entry.fix,
        "reason": entry.reason,
        "removed_rows": list(entry.repair.deletions) if entry.repair else [],
        "rewritten_rows": [row_id for row_id, _ in entry.repair.updates] if entry.repair else [],
        "left": entry.left if fix else findings.counts(),
    }
