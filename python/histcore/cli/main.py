"""The ``histcore`` command line: one argparse subcommand per job.

A subcommand is a name, a one-line help, a function adding its arguments to its
parser and a function running it that returns the exit code. Adding one is a new
entry in ``SUBCOMMANDS``; the implementations live in their own modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from histcore import __version__
from histcore.cli.bench import command as bench
from histcore.cli.doctor import command as doctor

__all__ = ["SUBCOMMANDS", "Subcommand", "build_parser", "main"]


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: list[Subcommand] = [
    Subcommand("bench", bench.HELP, bench.add_arguments, bench.run),
    Subcommand("doctor", doctor.HELP, doctor.add_arguments, doctor.run),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="histcore",
        description="histcore: the conversation-history core of an agent runtime.",
    )
    parser.add_argument("--version", action="version", version=f"histcore {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.required = True
    for subcommand in SUBCOMMANDS:
        sub = commands.add_parser(subcommand.name, help=subcommand.help)
        subcommand.add_arguments(sub)
        sub.set_defaults(run=subcommand.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (``argv`` defaults to ``sys.argv[1:]``); return the exit code."""
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except KeyboardInterrupt:  # Ctrl-C in a long bench or check: a line, not a traceback
        print(f"histcore {args.command}: interrupted", file=sys.stderr)
        return 130
