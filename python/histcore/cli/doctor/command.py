"""``histcore doctor``: check session stores, repair them (``--fix``), and put a fix's
backup back (``--restore``). This module reads the command line and prints the
report; ``check`` runs the check and the fix, ``restore`` the restore. What the doctor
checks and changes, and how it treats live and read-only stores, is in docs/doctor.md:
``--help`` shows examples and points there.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, TextIO

from histcore.cli.doctor.check import (
    BUSY_TIMEOUT,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_LOCKED,
    Progress,
    check_store,
)
from histcore.cli.doctor.read import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    DoctorError,
    RepairStopped,
    StoreLocked,
    Tables,
)
from histcore.cli.doctor.repair import DANGLING
from histcore.cli.doctor.report import render_json, render_text
from histcore.cli.doctor.restore import render_json as restore_json
from histcore.cli.doctor.restore import render_text as restore_text
from histcore.cli.doctor.restore import restore_command, restore_store

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

HELP = "check session stores for history the model API rejects (and --fix it)"

DESCRIPTION = """\
examples:
  histcore doctor app.db         check a SQLite session store; nothing is written
  histcore doctor app.db --fix   repair it, after writing a backup (app.db.bak-<time>);
                                 it prints the command that puts the backup back

Checks the sessions of a store of the tables histcore and the OpenAI Agents SDK share
(a SQLite file, or PostgreSQL with --dsn) for history the model API rejects: rows that
are not items, tool calls and outputs duplicated or without their pair, reasoning
items apart from the item they produced. --restore BACKUP PATH puts back the sessions
a backup holds. --dangling synthesize: --fix keeps a call whose output is missing, with
an output marked as lost (for calls that acted: sent, paid, wrote), instead of
dropping its unit (drop, the default: for calls that only read).

In full (the rules, --fix, --restore, live and read-only stores): doctor.md in histcore's docs.

Exit status: 0 nothing found (or, with --fix, everything found was fixed), 1 problems
found or left, 2 the store cannot be read or the arguments are wrong,
3 the store is locked by another process.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("path", nargs="?", metavar="PATH", help="SQLite database of a session store")
    where.add_argument(
        "--dsn", help="PostgreSQL connection string of a session store (the postgres extra)"
    )
    parser.add_argument("--session", metavar="ID", help="check only this session")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="repair what can be repaired safely, after writing a backup",
    )
    parser.add_argument(
        "--restore",
        metavar="BACKUP",
        help="put back into PATH the sessions BACKUP (a backup --fix wrote) holds, "
        "after backing up the rows it replaces",
    )
    parser.add_argument(
        "--drop-invalid-rows",
        action="store_true",
        help="with --fix: also delete rows that are not valid JSON or not items "
        "(the backup keeps them)",
    )
    parser.add_argument(
        "--dangling",
        choices=DANGLING,
        default=None,
        help="with --fix: drop the unit of a call whose output is missing (default), or "
        "synthesize an output marked as lost",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    parser.add_argument(
        "--busy-timeout",
        type=_seconds,
        default=BUSY_TIMEOUT,
        metavar="SECONDS",
        help=f"wait this long for another process's lock (default {BUSY_TIMEOUT:g})",
    )
    parser.add_argument("--sessions-table", default=SESSIONS_TABLE, metavar="NAME")
    parser.add_argument("--messages-table", default=MESSAGES_TABLE, metavar="NAME")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="show what --fix would do (the row ids it would delete), change nothing",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print problems only (nothing for a clean store), and no progress",
    )


def _seconds(text: str) -> float:
    """A --busy-timeout: a finite number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text} is not a number of seconds the doctor can wait (0 or more)"
        )
    return value


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Check (or fix, or restore) the store, print the report to ``out``; the exit status."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    where = args.path if args.path is not None else _described(args.dsn)
    try:
        tables = Tables(args.sessions_table, args.messages_table)
        if args.restore is not None:
            return _restore(args, tables, stdout)
        if args.drop_invalid_rows and not (args.fix or args.dry_run):
            raise DoctorError("--drop-invalid-rows needs --fix (or --dry-run)")
        if args.dangling is not None and not (args.fix or args.dry_run):
            raise DoctorError("--dangling needs --fix (or --dry-run)")
        report = check_store(
            args.path,
            session=args.session,
            fix=args.fix,
            dsn=args.dsn,
            drop_invalid_rows=args.drop_invalid_rows,
            busy_timeout=args.busy_timeout,
            tables=tables,
            dry_run=args.dry_run,
            progress=None if args.quiet else Progress(stderr),
            dangling=args.dangling or "drop",
        )
    except DoctorError as exc:
        return _failed(args, where, exc, stdout, stderr)
    if args.json:
        stdout.write(json.dumps(render_json(report), indent=2) + "\n")
    else:
        text = render_text(report, quiet=args.quiet)
        stdout.write(text + "\n" if text else "")
    return report.exit_code


def _restore(args: argparse.Namespace, tables: Tables, stdout: TextIO) -> int:
    given = [
        flag
        for flag, present in (
            ("--dsn", args.dsn is not None),
            ("--session", args.session is not None),
            ("--fix", args.fix),
            ("--dry-run", args.dry_run),
            ("--drop-invalid-rows", args.drop_invalid_rows),
            ("--dangling", args.dangling is not None),
        )
        if present
    ]
    if given:
        raise DoctorError(
            f"--restore BACKUP PATH puts back a SQLite store's backup whole: it cannot go "
            f"with {', '.join(given)}"
        )
    report = restore_store(args.restore, args.path, busy_timeout=args.busy_timeout, tables=tables)
    if args.json:
        stdout.write(json.dumps(restore_json(report), indent=2) + "\n")
    else:
        stdout.write(restore_text(report) + "\n")
    return EXIT_CLEAN


def _failed(
    args: argparse.Namespace, where: str | None, exc: DoctorError, stdout: TextIO, stderr: TextIO
) -> int:
    code = EXIT_LOCKED if isinstance(exc, StoreLocked) else EXIT_ERROR
    if args.json:
        stdout.write(json.dumps(_error_json(where, exc, code)) + "\n")
    stderr.write(f"histcore doctor: error: {exc}\n")
    if not isinstance(exc, RepairStopped):
        return code
    if exc.repaired:
        stderr.write(
            f"histcore doctor: sessions repaired before the error: "
            f"{', '.join(map(repr, exc.repaired))} (the backup {exc.backup} holds them "
            "as they were)\n"
        )
    if exc.repaired and exc.backup and args.path is not None and args.dsn is None:
        tables = Tables(args.sessions_table, args.messages_table)
        stderr.write(
            f"histcore doctor: to put back what {exc.backup} holds: "
            f"{restore_command(exc.backup, args.path, tables)}\n"
        )
    return code


def _described(dsn: str) -> str:
    """The DSN for messages: never its password."""
    try:
        from histcore.sessions.postgres import describe_dsn
    except ImportError:
        return "<dsn>"
    return describe_dsn(dsn)


def _error_json(where: str | None, exc: DoctorError, code: int) -> dict[str, Any]:
    error: dict[str, Any] = {"path": where, "error": str(exc), "exit_code": code}
    if isinstance(exc, StoreLocked):
        error["locked"] = True
    if isinstance(exc, RepairStopped) and (exc.repaired or exc.backup):
        error["repaired"], error["backup"] = exc.repaired, exc.backup
    return error
