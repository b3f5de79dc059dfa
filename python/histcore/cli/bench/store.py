"""``histcore bench --store PATH`` / ``--dsn DSN``: time your own stored sessions.

Instead of generated histories, the sessions of a session store: a SQLite file (the
SDK's tables or histcore's, which are the same) or a PostgreSQL database (histcore's
PostgresSession tables or the SDK's SQLAlchemySession ones), read as the doctor reads
them (``histcore.sessions._store_readers``). Per session it times read, re-read,
prepare, the engine passes and, with ``--openai-agents``, one SDK turn plain and
installed; then each session's growth curve and a verdict (``--plot`` draws them).

Rules: nothing in the store is written (read-only connections; the SDK reads a private
copy), and every result is checked before it is timed: a difference stops the run with
exit code 1. This module reads the command line; ``store_plan``, ``store_timing`` and
``store_report`` do the rest. What each column measures and what is checked:
docs/design.md, "Benchmarking stored sessions".
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import TextIO

from histcore import BACKEND
from histcore.cli.bench.engine import OPERATIONS
from histcore.cli.bench.outputs import plot_problem
from histcore.cli.bench.store_plan import BadInput, Mismatch, Plan
from histcore.cli.bench.store_report import render, to_json
from histcore.cli.bench.store_timing import run_benchmark
from histcore.sessions._store_readers.model import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    StoreError,
    Tables,
)

__all__ = ["add_store_arguments", "run_store", "store_requested"]


# --- arguments ------------------------------------------------------------------------


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "your own sessions",
        "time the sessions of a store instead of generated histories; the store is only "
        "read (--openai-agents adds an SDK turn on a copy of each session). Then each "
        "session is replayed as it grew (up to 20 sizes, a private copy each): ms per "
        "turn of the SDK's read and prepare_input_with_session, plain and under install() "
        "(~ marks a difference within the samples' spread), a verdict line per session, "
        "and the store's bytes per table, per row and its WAL file; --plot PATH draws the "
        "curves, --json keeps every sample",
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--store", metavar="PATH", help="a SQLite session store (the SDK's tables or histcore's)"
    )
    where.add_argument(
        "--dsn", metavar="DSN", help="a PostgreSQL session store (the postgres extra)"
    )
    group.add_argument(
        "--session",
        action="append",
        metavar="ID[,ID...]",
        help="only these sessions (repeatable, or a comma list; default every session)",
    )
    group.add_argument("--sessions-table", metavar="NAME", help=f"default {SESSIONS_TABLE}")
    group.add_argument("--messages-table", metavar="NAME", help=f"default {MESSAGES_TABLE}")


def store_requested(args: argparse.Namespace) -> bool:
    """Whether any of the options above was given (``run_store`` then runs)."""
    names = ("store", "dsn", "session", "sessions_table", "messages_table")
    return any(getattr(args, name, None) is not None for name in names)


def _not_applicable(args: argparse.Namespace) -> list[str]:
    """Options of the generated-history benchmark given with --store/--dsn."""
    given = [
        ("--sizes", getattr(args, "sizes", None) is not None),
        ("--huge", bool(getattr(args, "huge", False))),
        ("--functions", tuple(getattr(args, "functions", ())) not in ((), tuple(OPERATIONS))),
        ("--backend", getattr(args, "backend", "both") != "both"),
    ]
    return [flag for flag, present in given if present]


def _plan(args: argparse.Namespace) -> Plan:
    if args.store is None and args.dsn is None:
        raise BadInput(
            "--session, --sessions-table and --messages-table need --store PATH or --dsn DSN"
        )
    wrong = _not_applicable(args)
    if wrong:
        raise BadInput(
            f"{', '.join(wrong)} cannot be used with --store/--dsn: the histories timed "
            "are your sessions, at their own sizes (histcore's active engine runs them)"
        )
    _check_json_path(args.json)
    plot_path = getattr(args, "plot", None)
    if plot_path is not None:
        problem = plot_problem(plot_path)
        if problem is not None:
            raise BadInput(problem)
        if args.no_reference or not _sdk_importable():
            raise BadInput(
                "--plot with --store/--dsn draws the sessions' growth curves, which time the "
                "OpenAI Agents SDK's session: it needs openai-agents, and no --no-reference"
            )
    sdk = not args.no_reference and _sdk_importable()
    if args.openai_agents and not _sdk_importable():
        raise BadInput(
            "--openai-agents needs the OpenAI Agents SDK, which is not installed: "
            "pip install 'histcore[openai-agents]'"
        )
    if args.openai_agents and args.no_reference:
        raise BadInput("--openai-agents times the SDK's turn: it cannot go with --no-reference")
    try:
        tables = Tables(
            args.sessions_table or SESSIONS_TABLE, args.messages_table or MESSAGES_TABLE
        )
    except StoreError as exc:
        raise BadInput(str(exc)) from None
    return Plan(
        kind="sqlite" if args.store is not None else "postgresql",
        location=args.store if args.store is not None else args.dsn,
        tables=tables,
        sessions=_requested(args.session),
        repeat=args.repeat,
        sdk=sdk,
        turn=bool(args.openai_agents),
        json_path=args.json,
        plot_path=plot_path,
        build_profile=_build_profile(bool(args.allow_debug)),
    )


def _requested(values: list[str] | None) -> tuple[str, ...] | None:
    """--session values as given (their commas are split once the ids are known)."""
    return None if values is None else tuple(dict.fromkeys(values))


def _check_json_path(path: str | None) -> None:
    if path is None:
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise BadInput(f"--json: directory {os.path.dirname(path)!r} does not exist")
    if os.path.isdir(path):
        raise BadInput(f"--json: {path!r} is a directory")


def _sdk_importable() -> bool:
    try:
        importlib.import_module("agents")
    except ImportError:
        return False
    return True


def _build_profile(allow_debug: bool) -> str | None:
    if BACKEND != "rust":
        return None
    profile = str(getattr(importlib.import_module("histcore._core"), "build_profile", "unknown"))
    if profile != "release" and not allow_debug:
        raise BadInput(
            f"refusing to time a {profile} build of the Rust engine: its numbers would be "
            "meaningless. Build a release wheel (pip install .), or pass --allow-debug."
        )
    return profile


def run_store(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """What ``histcore bench --store/--dsn`` runs: 0 done, 1 a result differed, 2 bad input."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        plan = _plan(args)
        result = run_benchmark(plan, stderr)
    except BadInput as exc:
        stderr.write(f"histcore bench: error: {exc}\n")
        return 2
    except Mismatch as exc:
        stderr.write(f"histcore bench: error: {exc}\n")
        return 1
    stdout.write(render(result) + "\n")
    if plan.json_path is not None:
        try:
            with open(plan.json_path, "w", encoding="utf-8") as handle:
                json.dump(to_json(result), handle, indent=2)
                handle.write("\n")
        except OSError as exc:
            stderr.write(
                f"histcore bench: error: could not write --json {plan.json_path!r}: {exc}\n"
            )
            return 1
        stderr.write(f"histcore bench: wrote {plan.json_path}\n")
    if plan.plot_path is not None:
        from histcore.cli.bench import plot

        try:
            plot.draw_store(plan.plot_path, to_json(result))
        except (OSError, ValueError) as exc:
            stderr.write(
                f"histcore bench: error: could not draw --plot {plan.plot_path!r}: {exc}\n"
            )
            return 1
        stderr.write(f"histcore bench: wrote {plan.plot_path}\n")
    return 0
