"""``histcore doctor``: check, and with ``--fix`` repair, SQLite session stores.

It reads the tables histcore and the OpenAI Agents SDK share (``agent_sessions`` and
``agent_messages(id, session_id, message_data TEXT, created_at)``) and reports, per
session:

* rows that are not valid JSON;
* tool outputs stored before their call;
* duplicate tool calls, and duplicate tool outputs, for one ``call_id``;
* calls without an output (left by a run that crashed, or one paused for approval).

``--fix`` first writes a backup next to the database (sqlite3's backup API), then
repairs every session it safely can in one transaction, by histcore's latest-value
dedupe rules restricted to tool calls and outputs: one row per call and per output, a
call keeping its first row and an output its last, each holding the latest content.
Rows keep their ids (the order) and the exact stored text. A session is not touched
when it has rows that are not JSON (their content is unknown) or when an output would
still precede its call (the rules cannot place it); the report says so. Calls without
an output are reported but kept: the SDK stores a call awaiting approval exactly so,
and leaves such calls out of model input itself.

Exit status: 0 nothing found (or, with ``--fix``, everything found was fixed), 1
problems found or left, 2 the store cannot be read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from histcore.cli.doctor.check import EXIT_ERROR, SessionReport, StoreReport, check_store
from histcore.cli.doctor.diagnose import Findings, diagnose
from histcore.cli.doctor.read import DoctorError, Row, row_ids_text

__all__ = [
    "HELP",
    "DoctorError",
    "Findings",
    "Row",
    "SessionReport",
    "StoreReport",
    "add_arguments",
    "check_store",
    "diagnose",
    "render_json",
    "render_text",
    "run",
]

HELP = "check SQLite session stores for broken tool-call history (and --fix it)"


# --- reporting -------------------------------------------------------------------------

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
    lines = [f"histcore doctor: {report.path}: {len(report.sessions)} session(s) checked"]
    for entry in report.sessions:
        findings = entry.findings
        lines.append(
            f"session {entry.session_id!r} ({entry.rows} rows): {_describe(findings.counts())}"
        )
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
        if entry.fix == "fixed" and entry.repair is not None:
            lines.append(
                f"  fixed: {len(entry.repair.deletions)} row(s) removed, "
                f"{len(entry.repair.updates)} row(s) given their latest content"
            )
        elif entry.fix == "skipped":
            lines.append(f"  not repaired, left untouched: {entry.reason}")
        if entry.fix is not None and findings.calls_without_output:
            lines.append(
                "  calls without an output are kept: a run paused for approval stores its "
                "pending calls so, and the SDK leaves unanswered calls out of model input"
            )
    troubled = sum(1 for entry in report.sessions if not entry.findings.clean)
    summary = f"{troubled} of {len(report.sessions)} session(s) with problems"
    if report.fix:
        fixed = sum(1 for entry in report.sessions if entry.fix == "fixed")
        summary += f"; {fixed} repaired"
        if report.backup:
            summary += f"; backup written to {report.backup}"
    elif troubled:
        summary += "; run with --fix to repair (a backup is written first)"
    lines.append(summary)
    return "\n".join(lines)


def render_json(report: StoreReport) -> dict[str, Any]:
    return {
        "path": report.path,
        "fix": report.fix,
        "backup": report.backup,
        "exit_code": report.exit_code,
        "sessions": [
            {
                "session_id": entry.session_id,
                "rows": entry.rows,
                "problems": entry.findings.counts(),
                "clean": entry.findings.clean,
                "details": {
                    "invalid_json_rows": entry.findings.invalid_rows,
                    "outputs_before_call": entry.findings.outputs_before_call,
                    "duplicate_calls": entry.findings.duplicate_calls,
                    "duplicate_outputs": entry.findings.duplicate_outputs,
                    "calls_without_output": entry.findings.calls_without_output,
                },
                "fix": entry.fix,
                "reason": entry.reason,
                "removed_rows": list(entry.repair.deletions) if entry.repair else [],
                "rewritten_rows": [row_id for row_id, _ in entry.repair.updates]
                if entry.repair
                else [],
                "left": entry.left if report.fix else entry.findings.counts(),
            }
            for entry in report.sessions
        ],
    }


# --- command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n", 1)[1] if __doc__ else HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("path", metavar="PATH", help="SQLite database of a session store")
    parser.add_argument("--session", metavar="ID", help="check only this session")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="repair what can be repaired safely, after writing PATH.bak-<time>",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        report = check_store(args.path, session=args.session, fix=args.fix)
    except DoctorError as exc:
        if args.json:
            stdout.write(json.dumps({"path": args.path, "error": str(exc), "exit_code": 2}) + "\n")
        stderr.write(f"histcore doctor: error: {exc}\n")
        return EXIT_ERROR
    if args.json:
        stdout.write(json.dumps(render_json(report), indent=2) + "\n")
    else:
        stdout.write(render_text(report) + "\n")
    return report.exit_code
