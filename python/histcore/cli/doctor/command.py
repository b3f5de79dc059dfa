"""histcore doctor: check, and with --fix repair, session stores.

It reads the tables histcore and the OpenAI Agents SDK share: a SQLite file (PATH:
agent_sessions and agent_messages(id, session_id, message_data TEXT, created_at),
as SQLiteSession, AsyncSQLiteSession and AdvancedSQLiteSession write them; the last
one's message_structure and turn_usage rows are kept consistent with a repair) or a
PostgreSQL database (--dsn: histcore's PostgresSession layout, or the SDK's
SQLAlchemySession one). A row is read as histcore's sessions read it: a row they skip
is not valid JSON here, a row they read is an item. Per session it reports:

* rows that are not valid JSON (not UTF-8, UTF-16 or UTF-32 text, not JSON, nested
  deeper than 256 levels, NULL), rows that are JSON but not an item (42, null, [1, 2],
  "x"), and items whose call_id is not a string: the rules cannot place them;
* tool outputs stored before their call, and without any call;
* duplicate tool calls, and duplicate tool outputs, for one call_id;
* calls without an output; duplicate item ids; reasoning items without the item they
  produced, and items without their reasoning item (the model-input rules the
  Responses API enforces, checked by histcore.items.input_problems on the session as
  the dedupe below leaves it);
* as information only, calls at the end awaiting their output: a run paused for
  approval stores its pending calls so, and resumes from them.

Rows whose session_id is NULL, a BLOB or not UTF-8 are read by no session: they are
reported, never changed.

--fix first writes a backup of every session it changes (SQLite: PATH.bak-<time>, a
SQLite file with the store's tables holding those sessions' rows exactly, a session
store of its own; PostgreSQL: a table <messages>_bak_<time>). Then, per session, it
dedupes tool calls and outputs by histcore's latest-value rules (a call keeps its
first row and an output its last, each holding the latest content), and drops, whole,
every unit that still breaks a model-input rule: a reasoning run with the item it
produced, a tool call with its outputs. User messages and calls awaiting approval are
kept. Rows keep their ids and their exact stored text. Rows the rules cannot place
are left as they are, and the rest of their session is repaired; --drop-invalid-rows
deletes them too (the backup keeps them). --dry-run shows what --fix would do (the
row ids it would delete and rewrite) and changes nothing.

The doctor works on a live store. It reads in short statements and holds no lock
between them; it repairs in short write transactions (a session's repair is never
split; a transaction takes in further sessions for 50 ms, and the doctor then stays
off the lock as long), so a live writer waits milliseconds, not for the whole fix. A
repair goes ahead only when its session still holds the rows it was planned on (and
the backup holds); a session written to meanwhile is left untouched and reported, for
the next run. Sessions open meanwhile read the repair: a row rewritten in place is
noted (PostgreSQL: the session's generation; SQLite: a histcore_rewrites table). A
lock held by another process longer than --busy-timeout seconds stops the doctor with
exit status 3. Stores of over 100000 rows report their progress on stderr.

Exit status: 0 nothing found (or, with --fix, everything found was fixed; calls
awaiting approval count as nothing), 1 problems found or left, 2 the store cannot be
read or the arguments are wrong, 3 the store is locked by another process.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, TextIO

from histcore.cli.doctor.check import (
    BUSY_TIMEOUT,
    EXIT_ERROR,
    EXIT_LOCKED,
    Progress,
    check_store,
)
from histcore.cli.doctor.read import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    DoctorError,
    StoreLocked,
    Tables,
)
from histcore.cli.doctor.report import render_json, render_text

__all__ = ["HELP", "add_arguments", "run"]

HELP = "check session stores for history the model API rejects (and --fix it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # --help shows this module's docstring past its title line, as written.
    parser.description = __doc__.split("\n\n", 1)[1] if __doc__ else HELP
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
        "--drop-invalid-rows",
        action="store_true",
        help="with --fix: also delete rows that are not valid JSON or not items "
        "(the backup keeps them)",
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
    """Check (or fix) the store, print the report to ``out``; return the exit status."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    where = args.path if args.path is not None else _described(args.dsn)
    try:
        if args.drop_invalid_rows and not (args.fix or args.dry_run):
            raise DoctorError("--drop-invalid-rows needs --fix (or --dry-run)")
        report = check_store(
            args.path,
            session=args.session,
            fix=args.fix,
            dsn=args.dsn,
            drop_invalid_rows=args.drop_invalid_rows,
            busy_timeout=args.busy_timeout,
            tables=Tables(args.sessions_table, args.messages_table),
            dry_run=args.dry_run,
            progress=None if args.quiet else Progress(stderr),
        )
    except DoctorError as exc:
        code = EXIT_LOCKED if isinstance(exc, StoreLocked) else EXIT_ERROR
        if args.json:
            stdout.write(json.dumps(_error_json(where, exc, code)) + "\n")
        stderr.write(f"histcore doctor: error: {exc}\n")
        if exc.repaired:
            stderr.write(
                f"histcore doctor: sessions repaired before the error: "
                f"{', '.join(map(repr, exc.repaired))} (the backup {exc.backup} holds them "
                "as they were)\n"
            )
        return code
    if args.json:
        stdout.write(json.dumps(render_json(report), indent=2) + "\n")
    else:
        text = render_text(report, quiet=args.quiet)
        stdout.write(text + "\n" if text else "")
    return report.exit_code


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
    if exc.repaired or exc.backup:
        error["repaired"], error["backup"] = exc.repaired, exc.backup
    return error
