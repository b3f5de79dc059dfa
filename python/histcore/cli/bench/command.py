"""``histcore bench``: its arguments and what running it does."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Collection
from typing import TextIO

from histcore.cli.bench.engine import (
    DEFAULT_SIZES,
    HUGE_SIZE,
    OPERATIONS,
    QUADRATIC_REFERENCE_LIMIT,
    Backend,
    CorrectnessError,
    Settings,
    load_rust_engine,
    run_suite,
)
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.outputs import output_problem, plot_problem
from histcore.cli.bench.report import LINEARITY_LIMIT, render, to_json
from histcore.cli.bench.signals import ended_by_sigterm
from histcore.cli.bench.units import format_seconds, size_label

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

# The pathological shapes need a few items of structure; generated histories live in
# memory (about 1 KB per item, more while copying).
MIN_SIZE = 10
MAX_SIZE = 10_000_000

HELP = (
    "time histcore against the OpenAI Agents SDK: the engine on generated histories, "
    "SDK conversation turns (--openai-agents), or your own store (--store/--dsn)"
)

DESCRIPTION = f"""\
Time histcore's engine functions on generated, realistic conversation histories
(user and assistant messages, reasoning items, function calls with their outputs,
5% refreshed duplicates, texts of 50-2000 characters) and on two pathological shapes
(many pending `program` calls; a long reasoning run before an orphan call).

Each function runs on the Rust engine, the pure-Python twin and, when openai-agents
is installed, the SDK's equivalent helper. Every result is checked against the pure
twin before it is timed (a mismatch stops the run with exit code 1); each timed call
then gets freshly decoded items, so none sees what an earlier call cached in them. The SDK's
orphan pruning is quadratic on the pathological shapes, so it only runs there up
to {QUADRATIC_REFERENCE_LIMIT} items.

The table gives the median time, the SDK/histcore ratio and the time per item; then
the baselines (a bare loop reading type/id/call_id, orjson with sorted keys), a
linearity check (time per item across sizes >= 10^3 within {LINEARITY_LIMIT:g}x) and a
three-line summary: the SDK/histcore and pure/Rust ratios at the largest size, and
whether the time per item stayed flat. Progress goes to stderr (a line per size), the
report to stdout; --json writes every sample (and the machine, versions and commit
they were taken with), --plot draws time against size.

A debug build of the Rust engine is refused (exit code 2) unless --allow-debug is
given; its numbers are then labelled as meaningless."""

_FUNCTION_LINES = "\n".join(f"  {name}\n      {op.summary}" for name, op in OPERATIONS.items())

EPILOG = f"""\
functions:
{_FUNCTION_LINES}

exit codes: 0 done, 1 a result was wrong, 2 bad arguments, debug or missing build.

examples:
  histcore bench
  histcore bench --openai-agents --sizes 1000,10000
  histcore bench --openai-agents --stores sqlite,sqlalchemy-postgres --scratch-dsn DSN
  histcore bench --transactions --sizes 1000,10000
  histcore bench --huge --json bench.json --plot bench.svg
  histcore bench --store sessions.db --plot sessions.svg
  histcore bench --sizes 1e4 --functions dedupe_keys,content_keys --backend rust"""


def _size(text: str) -> int:
    """A history size: ``1000``, ``10_000``, ``1e5`` or ``10^5``."""
    cleaned = text.strip().replace("_", "")
    try:
        if "^" in cleaned:
            base, exponent = cleaned.split("^")
            value = int(int(base) ** int(exponent))
        elif "e" in cleaned.lower():
            number = float(cleaned)
            if not number.is_integer():
                raise ValueError
            value = int(number)
        else:
            value = int(cleaned)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: expected a positive whole number such as 1000, 1e5 or 10^5"
        ) from None
    if not MIN_SIZE <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: sizes must be between {MIN_SIZE} and {MAX_SIZE:,} items"
        )
    return value


def _sizes(text: str) -> tuple[int, ...]:
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected at least one size, e.g. 1000,10000")
    return tuple(_size(part) for part in parts)


def _chosen(text: str, known: Collection[str], what: str) -> tuple[str, ...]:
    """The comma-separated names of ``text``, once each, every one of them in ``known``."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"choose from {', '.join(known)}"
        )
    return names


def _functions(text: str) -> tuple[str, ...]:
    return _chosen(text, OPERATIONS, "function(s)")


def _repeat(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid repeat {text!r}: expected an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid repeat {text!r}: must be at least 1")
    return value


# The store kinds of ``sdk_stores.KINDS`` (named here: that module imports the SDK).
_STORE_KINDS = (
    "sqlite",
    "async-sqlite",
    "encrypted-sqlite",
    "sqlalchemy-postgres",
    "histcore-postgres",
)


def _stores(text: str) -> tuple[str, ...]:
    return _chosen(text, _STORE_KINDS, "store kind(s)")


def _plot_path(text: str) -> str:
    suffix = os.path.splitext(text)[1].lower()
    if suffix not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(
            f"invalid plot path {text!r}: the file name must end in .png or .svg"
        )
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    default_sizes = ",".join(map(str, DEFAULT_SIZES))
    parser.add_argument(
        "--sizes",
        type=_sizes,
        # None, not the engine's default: --openai-agents has defaults of its own, and
        # sizes given explicitly must win even when they equal the engine's.
        default=None,
        metavar="N[,N...]",
        help=f"history sizes in items (default {default_sizes})",
    )
    parser.add_argument(
        "--huge", action="store_true", help=f"also run {HUGE_SIZE:,} items (takes minutes)"
    )
    parser.add_argument(
        "--functions",
        type=_functions,
        default=tuple(OPERATIONS),
        metavar="NAME[,NAME...]",
        help="only these functions (default all; listed below)",
    )
    parser.add_argument(
        "--repeat",
        type=_repeat,
        default=5,
        metavar="N",
        help="samples per measurement, median reported (default 5; slow calls take fewer)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every sample as JSON to PATH")
    parser.add_argument(
        "--backend",
        choices=("rust", "python", "both"),
        default="both",
        help="histcore engine(s) to time (default both; the pure twin always runs once "
        "as the correctness oracle)",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="do not run the openai-agents helpers",
    )
    parser.add_argument(
        "--openai-agents",
        action="store_true",
        help="instead of the engine suite, time a turn of an openai-agents conversation on "
        "each store kind (--stores) with and without histcore.openai_agents.install() "
        "(sizes default to 10,000 and 100,000 items; --repeat rounds per mode, the modes' "
        "rounds in turn)",
    )
    parser.add_argument(
        "--transactions",
        action="store_true",
        help="instead of the engine suite, time a compaction's replace_suffix against "
        "clear + add, and the transcript read, on histcore's memory, SQLite and "
        "PostgreSQL (--scratch-dsn, or a throwaway cluster) sessions (sizes default to "
        "1,000 to 100,000 items)",
    )
    parser.add_argument(
        "--stores",
        type=_stores,
        default=None,
        metavar="KIND[,KIND...]",
        help="with --openai-agents: the store kinds to time a turn on (default all: "
        f"{', '.join(_STORE_KINDS)}); a kind whose packages or server are missing is "
        "skipped with the reason",
    )
    parser.add_argument(
        "--scratch-dsn",
        metavar="DSN",
        help="with --openai-agents: a PostgreSQL database the PostgreSQL store kinds may "
        "write to, in schemas of their own dropped afterwards (default: a throwaway "
        "cluster, when initdb and pg_ctl are on PATH)",
    )
    parser.add_argument(
        "--plot",
        type=_plot_path,
        metavar="PATH",
        help="also draw time against history size (log-log) to PATH, a .png or .svg file; "
        "with --store/--dsn, each session's ms per turn as it grew, plain and installed "
        "(needs matplotlib: pip install 'histcore[plot]')",
    )
    parser.add_argument(
        "--allow-debug",
        action="store_true",
        help="time a debug build of the Rust engine anyway (output labelled meaningless)",
    )
    from histcore.cli.bench.store import add_store_arguments

    add_store_arguments(parser)


def _fail(message: str, code: int = 2) -> int:
    print(f"histcore bench: error: {message}", file=sys.stderr)
    return code


class _StderrProgress:
    """One line per size on stderr, a dot per step as it is done:
    ``[2/3] 10^4 items (40 cases) ........................................ 4.1 s``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._open = False

    def start_size(self, index: int, total: int, size: int, steps: int) -> None:
        self._write(f"[{index}/{total}] {size_label(size)} items ({steps} cases) ")
        self._open = True

    def step_done(self) -> None:
        self._write(".")

    def finish_size(self, seconds: float) -> None:
        self._write(f" {format_seconds(seconds)}\n")
        self._open = False

    def close(self) -> None:
        """End a line left open by an error or an interrupt, so what follows starts a line."""
        if self._open:
            self._write("\n")
            self._open = False

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()


def _run_openai_agents(
    args: argparse.Namespace,
    sizes: tuple[int, ...],
    given: tuple[int, ...] | None,
    json_path: str | None,
    plot_path: str | None,
) -> int:
    try:
        from histcore.cli.bench import sdk_conversation
    except ImportError as exc:
        if str(exc.name).split(".")[0] not in ("agents", "openai"):
            raise
        return _fail(
            "--openai-agents needs the OpenAI Agents SDK, which is not installed: "
            "pip install 'histcore[openai-agents]'"
        )

    sdk_sizes = sizes if given is not None else sdk_conversation.DEFAULT_SIZES
    return sdk_conversation.run_cli(
        sizes=sdk_sizes,
        repeat=args.repeat,
        json_path=json_path,
        plot_path=plot_path,
        stores=args.stores or _STORE_KINDS,
        scratch_dsn=args.scratch_dsn,
    )


def _debug_refusal(build_profile: str) -> str:
    return (
        f"refusing to time a {build_profile} build of the Rust engine "
        f"(histcore._core.build_profile = {build_profile!r}): its numbers would be "
        "meaningless. Build a release wheel (pip install .), or pass --allow-debug "
        "to run anyway with the output labelled as debug."
    )


def _mixed_options(args: argparse.Namespace) -> str | None:
    """Why the options given do not go together; None when they do."""
    if args.openai_agents and args.transactions:
        return "--openai-agents and --transactions are separate runs"
    if args.transactions and args.stores is not None:
        return "--stores goes with --openai-agents"
    if not (args.openai_agents or args.transactions) and (
        args.stores is not None or args.scratch_dsn is not None
    ):
        return "--stores and --scratch-dsn go with --openai-agents or --transactions"
    return None


def _run_transactions(
    args: argparse.Namespace, given: tuple[int, ...] | None, json_path: str | None
) -> int:
    rust = load_rust_engine()  # None: the pure package, whose sessions are timed as they are
    build_profile = None if rust is None else str(getattr(rust, "build_profile", "unknown"))
    if build_profile not in (None, "release") and not args.allow_debug:
        return _fail(_debug_refusal(str(build_profile)))
    from histcore.cli.bench import transactions

    try:
        return transactions.run_cli(
            sizes=given or transactions.DEFAULT_SIZES,
            repeat=min(args.repeat, 5),
            scratch_dsn=args.scratch_dsn,
            json_path=json_path,
        )
    except ValueError as exc:
        return _fail(str(exc))


def run(args: argparse.Namespace) -> int:
    """``histcore bench``: SIGTERM ends it through its cleanup (``ended_by_sigterm``)."""
    with ended_by_sigterm():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from histcore.cli.bench.store import run_store, store_requested

    if store_requested(args):  # --store/--dsn: your own sessions, not generated ones
        return run_store(args)
    given: tuple[int, ...] | None = args.sizes
    sizes: tuple[int, ...] = (given or DEFAULT_SIZES) + ((HUGE_SIZE,) if args.huge else ())
    backends: tuple[Backend, ...] = (
        ("rust", "python") if args.backend == "both" else (args.backend,)
    )
    json_path: str | None = args.json
    plot_path: str | None = args.plot
    # Checked first, so a long run is not lost to a typo in an output path.
    problem = (None if json_path is None else output_problem("--json", json_path)) or (
        plot_problem(plot_path)
    )
    if problem is not None:
        return _fail(problem)
    mixed = _mixed_options(args)
    if mixed is not None:
        return _fail(mixed)
    if args.transactions:  # histcore's sessions, on whichever engine is active
        return _run_transactions(args, given, json_path)

    rust = None
    build_profile: str | None = None
    if "rust" in backends:
        rust = load_rust_engine()
        if rust is None:
            return _fail(
                "the Rust engine (histcore._core) is not built: build a release wheel "
                "(pip install .), or time only the pure twin with --backend python"
            )
        build_profile = str(getattr(rust, "build_profile", "unknown"))
        if build_profile != "release" and not args.allow_debug:
            return _fail(_debug_refusal(build_profile))

    if args.openai_agents:
        return _run_openai_agents(args, sizes, given, json_path, plot_path)

    settings = Settings(
        sizes=sizes,
        operations=args.functions,
        backends=backends,
        repeat=args.repeat,
        reference=not args.no_reference,
    )
    progress = _StderrProgress(sys.stderr)
    try:
        result = run_suite(settings, progress, rust=rust)
    except CorrectnessError as exc:
        progress.close()
        return _fail(str(exc), code=1)
    finally:  # an interrupt too
        progress.close()
    environment = Environment.current(build_profile, result.sdk_version)
    print(render(result, environment))
    if json_path is not None:
        try:
            with open(json_path, "w", encoding="utf-8") as out:
                json.dump(to_json(result, environment), out, indent=2)
                out.write("\n")
        except OSError as exc:
            return _fail(f"could not write --json {json_path!r}: {exc}", code=1)
        print(f"histcore bench: wrote {json_path}", file=sys.stderr)
    if plot_path is not None:
        from histcore.cli.bench import plot

        plot.draw(plot_path, engine=to_json(result, environment))
        print(f"histcore bench: wrote {plot_path}", file=sys.stderr)
    return 0
