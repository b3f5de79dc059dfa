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
from typing import TextIO

from histcore.cli.doctor.check import EXIT_ERROR, check_store
from histcore.cli.doctor.read import DoctorError
from histcore.cli.doctor.report import render_json, render_text

__all__ = ["HELP", "add_arguments", "run"]

HELP = "check SQLite session stores for broken tool-call history (and --fix it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # --help shows this module's docstring past its title line, as written.
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
    """Check (or fix) ``args.path``, print the report to ``out``; return the exit status."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        report = check_store(args.path, session=args.session, fix=args.fix)
    except DoctorError as exc:
        if args.json:
            error = {"path": args.path, "error": str(exc), "exit_code": EXIT_ERROR}
            stdout.write(json.dumps(error) + "\n")
        stderr.write(f"histcore doctor: error: {exc}\n")
        return EXIT_ERROR
    if args.json:
        stdout.write(json.dumps(render_json(report), indent=2) + "\n")
    else:
        stdout.write(render_text(report) + "\n")
    return report.exit_code
