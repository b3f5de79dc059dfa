"""``histcore bench --store PATH`` / ``--dsn DSN``: time your own stored sessions.

Instead of generated histories, the sessions of a session store: a SQLite file (the
OpenAI Agents SDK's tables, as its SQLiteSession, AsyncSQLiteSession and
AdvancedSQLiteSession write them, or histcore's SQLiteSession, which uses the same
ones) or a PostgreSQL database (histcore's PostgresSession tables, or the SDK's
SQLAlchemySession ones). The store is read with the doctor's readers
(``histcore.cli.doctor``), and nothing in it is written: a SQLite file is opened
read-only (a ``file:...?mode=ro`` URI; SQLite may leave the empty ``-wal``/``-shm``
side files of a WAL-mode file, as any reader does), and on PostgreSQL every connection
is in read-only transactions.

Per session (one output line each: id, items, then):

* read: histcore's session reading the whole session fresh (``cache_history=False``:
  every call reads and decodes every row) against the SDK's ``SQLiteSession.get_items``
  (which always does). The SDK's SQLiteSession switches a file to WAL mode and creates
  its tables when it opens one, so it reads a private copy of the session's rows (in
  the SDK's tables, in a temporary directory), never the store. On PostgreSQL histcore
  reads the store (PostgresSession on a read-only pool) and the SDK column is empty;
* re-read: histcore's default session (history cache on) reading the session again
  with nothing new, what every later turn of a live session pays;
* prepare: ``prepare_input_with_session`` with one new user message and no callback,
  histcore's against the SDK's, each over its own session (read included); nothing
  is persisted;
* passes: the engine passes a turn runs on the history (``PASSES``), histcore's active
  engine against the SDK's helpers, summed in the table (each one in ``--json``);
* with ``--openai-agents`` (opt-in: it runs the SDK's Runner twice per sample), one
  SDK turn (``Runner.run``, a scripted model that calls a tool, then answers) on a copy
  of the session, plain and under ``histcore.openai_agents.install()``.

Every result is checked first: histcore's read against the rows as stored, the SDK's
read and prepare against histcore's, each pass against the pure twin (and the SDK's),
and the plain and installed turns must send the same model input, answer the same and
leave the same session. A difference stops the run with exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from histcore import BACKEND
from histcore.cli.bench.engine import OPERATIONS, Workload, verify
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.reference import Reference, load_reference
from histcore.cli.bench.report import header
from histcore.cli.bench.timing import Timing, measure_interleaved, timed_call
from histcore.cli.bench.units import format_seconds
from histcore.cli.doctor.read import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    DoctorError,
    Row,
    SQLiteStore,
    Store,
    Tables,
)
from histcore.engine import pure as _pure
from histcore.engine.backend import engine as _engine
from histcore.exceptions import SessionError
from histcore.sessions import SessionABC, SQLiteSession, prepare_input_with_session
from histcore.sessions._sqlite_schema import create_tables

__all__ = ["FORMAT", "PASSES", "add_store_arguments", "run_store", "store_requested"]

FORMAT = "histcore-bench-store/1"
#: The engine passes timed on each session (from ``engine.OPERATIONS``).
PASSES = (
    "dedupe_keys",
    "deduplicate_input_items_preferring_latest",
    "drop_orphan_function_calls",
    "content_keys",
)
#: The new input of the prepared turn, and of the SDK turn.
NEW_MESSAGE = "One more question."
TURN_MESSAGE = "Paris and Rome"
# Seconds to wait for another process's lock on the store.
_BUSY_TIMEOUT = 5.0
_SHOWN_IDS = 5
_T = TypeVar("_T")


class BadInput(Exception):
    """Arguments or a store that cannot be benchmarked (exit code 2)."""


class Mismatch(Exception):
    """Two implementations disagreed on a session (exit code 1)."""


# --- arguments ------------------------------------------------------------------------


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "your own sessions",
        "time the sessions of a store instead of generated histories; the store is only "
        "read (--openai-agents adds an SDK turn on a copy of each session)",
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


@dataclass(frozen=True)
class Plan:
    kind: str  # "sqlite" or "postgresql"
    location: str  # the path, or the DSN
    tables: Tables
    sessions: tuple[str, ...] | None
    repeat: int
    sdk: bool
    turn: bool
    json_path: str | None
    build_profile: str | None


def _not_applicable(args: argparse.Namespace) -> list[str]:
    """Options of the generated-history benchmark given with --store/--dsn."""
    given = [
        ("--sizes", getattr(args, "sizes", None) is not None),
        ("--huge", bool(getattr(args, "huge", False))),
        ("--functions", tuple(getattr(args, "functions", ())) not in ((), tuple(OPERATIONS))),
        ("--backend", getattr(args, "backend", "both") != "both"),
        ("--targets", bool(getattr(args, "targets", False))),
        ("--plot", bool(getattr(args, "plot", None))),
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
    except DoctorError as exc:
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


# --- the store --------------------------------------------------------------------------


def _open_store(plan: Plan) -> Store:
    try:
        if plan.kind == "sqlite":
            return SQLiteStore(
                plan.location, writable=False, busy_timeout=_BUSY_TIMEOUT, tables=plan.tables
            )
        from histcore.cli.doctor.postgres import PostgresStore

        return PostgresStore(
            plan.location, writable=False, busy_timeout=_BUSY_TIMEOUT, tables=plan.tables
        )
    except DoctorError as exc:
        raise BadInput(str(exc)) from None


def _select(store: Store, wanted: tuple[str, ...] | None) -> list[str]:
    try:
        available = store.session_ids()
    except DoctorError as exc:
        raise BadInput(str(exc)) from None
    if not available:
        raise BadInput(f"{store.name}: the store holds no sessions")
    if wanted is None:
        return available
    known = set(available)
    chosen: list[str] = []
    for value in wanted:
        # A value is an id when the store has it; otherwise a comma list of ids.
        parts = [value] if value in known else [p.strip() for p in value.split(",")]
        chosen += [part for part in parts if part]
    unknown = list(dict.fromkeys(value for value in chosen if value not in known))
    if unknown or not chosen:
        shown = ", ".join(map(repr, available[:_SHOWN_IDS]))
        more = f", ... ({len(available)} in all)" if len(available) > _SHOWN_IDS else ""
        missing = ", ".join(map(repr, unknown)) or "(none given)"
        raise BadInput(f"{store.name}: no session {missing}; its sessions: {shown}{more}")
    return list(dict.fromkeys(chosen))


def _session_items(rows: Sequence[Row]) -> list[Any]:
    """The items a session reads: rows holding a JSON object."""
    return [row.item for row in rows if row.valid and type(row.item) is dict]


def write_copy(path: str, session_id: str, rows: Sequence[Row]) -> None:
    """A SQLite store in the SDK's tables holding the session's rows as stored."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        create_tables(conn, SESSIONS_TABLE, MESSAGES_TABLE)
        conn.execute(f"INSERT INTO {SESSIONS_TABLE} (session_id) VALUES (?)", (session_id,))
        conn.executemany(
            f"INSERT INTO {MESSAGES_TABLE} (session_id, message_data) VALUES (?, ?)",
            [(session_id, row.data) for row in rows if row.data is not None],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """histcore's timing and its counterpart's (the SDK's, or the plain turn's)."""

    histcore: Timing | None
    other: Timing | None

    @property
    def speedup(self) -> float | None:
        if self.histcore is None or self.other is None or self.histcore.median <= 0:
            return None
        return self.other.median / self.histcore.median


@dataclass
class SessionResult:
    session_id: str
    items: int
    rows: int
    read: Pair = Pair(None, None)
    reread: Timing | None = None
    prepare: Pair = Pair(None, None)
    passes: dict[str, Pair] = field(default_factory=dict)
    turn: Pair | None = None
    #: Model input items of the prepared turn: histcore's and the SDK's.
    prepare_inputs: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)

    def passes_total(self) -> Pair:
        def total(timings: list[Timing | None]) -> Timing | None:
            if not timings or any(timing is None for timing in timings):
                return None
            medians = [timing.median for timing in timings if timing is not None]
            return Timing(sum(medians), (sum(medians),), 1)

        pairs = list(self.passes.values())
        return Pair(total([p.histcore for p in pairs]), total([p.other for p in pairs]))


@dataclass
class StoreResult:
    plan: Plan
    name: str
    environment: Environment
    sessions: list[SessionResult] = field(default_factory=list)


# --- timing -----------------------------------------------------------------------------


class _Loop:
    """One event loop for the run (a PostgreSQL pool belongs to the loop it opened in)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, awaitable: Awaitable[_T]) -> _T:
        async def wrapped() -> _T:
            return await awaitable

        return self.loop.run_until_complete(wrapped())

    def close(self) -> None:
        self.loop.close()


def _timed(
    calls: dict[str, Callable[[], object]], repeat: int
) -> tuple[dict[str, object], dict[str, Timing]]:
    """Each call once (its result kept for the checks), then sampled in rounds."""
    results: dict[str, object] = {}
    firsts: dict[str, float] = {}
    for key, call in calls.items():
        results[key], firsts[key] = timed_call(call)
    return results, measure_interleaved(calls, firsts, repeat) if calls else {}


class _Histcore:
    """histcore's sessions of the store: SQLite read-only, or a read-only pool."""

    def __init__(self, plan: Plan, loop: _Loop) -> None:
        self._plan = plan
        self._loop = loop
        self._pool: Any = None
        self._opened: list[SessionABC] = []

    def session(self, session_id: str, cache: bool) -> SessionABC:
        tables = self._plan.tables
        made: SessionABC
        if self._plan.kind == "sqlite":
            uri = Path(self._plan.location).absolute().as_uri() + "?mode=ro"
            made = SQLiteSession(
                session_id,
                uri,
                sessions_table=tables.sessions,
                messages_table=tables.messages,
                cache_history=cache,
            )
        else:
            from histcore.sessions.postgres import PostgresSession

            made = PostgresSession(
                session_id,
                pool=self._read_only_pool(),
                sessions_table=tables.sessions,
                messages_table=tables.messages,
                cache_history=cache,
            )
        self._opened.append(made)
        return made

    def _read_only_pool(self) -> Any:
        if self._pool is None:
            from psycopg_pool import AsyncConnectionPool

            async def read_only(conn: Any) -> None:
                await conn.execute("SET default_transaction_read_only = on")

            async def opened() -> Any:
                pool: Any = AsyncConnectionPool(
                    self._plan.location,
                    kwargs={"autocommit": True},
                    configure=read_only,
                    min_size=1,
                    max_size=2,
                    open=False,
                )
                await pool.open(wait=True, timeout=_BUSY_TIMEOUT)
                return pool

            self._pool = self._loop.run(opened())
        return self._pool

    def close(self) -> None:
        for session in self._opened:
            close = getattr(session, "close", None)
            if close is not None:
                close()
        self._opened.clear()
        if self._pool is not None:
            self._loop.run(self._pool.close())
            self._pool = None


def _histcore_calls(
    side: _Histcore, loop: _Loop, session_id: str
) -> dict[str, Callable[[], object]]:
    full = side.session(session_id, cache=False)
    cached = side.session(session_id, cache=True)
    loop.run(cached.get_items())  # fills the cache: the timed reads are re-reads
    return {
        "read.histcore": lambda: loop.run(full.get_items()),
        "reread.histcore": lambda: loop.run(cached.get_items()),
        "prepare.histcore": lambda: loop.run(prepare_input_with_session(NEW_MESSAGE, full)),
    }


def _sdk_calls(loop: _Loop, sdk_session: Any) -> dict[str, Callable[[], object]]:
    from agents.run_internal.session_persistence import (
        prepare_input_with_session as sdk_prepare,
    )

    return {
        "read.sdk": lambda: loop.run(sdk_session.get_items()),
        "prepare.sdk": lambda: loop.run(sdk_prepare(NEW_MESSAGE, sdk_session, None)),
    }


def _check_reads(result: SessionResult, items: list[Any], results: dict[str, object]) -> None:
    where = f"session {result.session_id!r}"
    if "read.histcore" in results and results["read.histcore"] != items:
        raise Mismatch(f"{where}: histcore's session read differs from the rows as stored")
    if "read.sdk" in results and results["read.sdk"] != items:
        raise Mismatch(f"{where}: the SDK's SQLiteSession read differs from the rows as stored")
    if "prepare.sdk" in results and "prepare.histcore" in results:
        # Not an error: the libraries' preparation rules differ (docs/design.md).
        ours, theirs = (_model_input(results[key]) for key in ("prepare.histcore", "prepare.sdk"))
        result.prepare_inputs = (len(ours), len(theirs))
        if json.dumps(ours, sort_keys=True) != json.dumps(theirs, sort_keys=True):
            result.notes.append(
                f"histcore's prepared model input ({len(ours)} items) differs from the "
                f"SDK's ({len(theirs)} items): their preparation rules differ "
                "(docs/design.md, 'Session input preparation')"
            )


def _model_input(prepared: object) -> list[Any]:
    model_input = prepared[0] if isinstance(prepared, tuple) else []
    return list(model_input) if isinstance(model_input, list) else [model_input]


def _time_reads(
    side: _Histcore,
    loop: _Loop,
    sdk_session: Any,
    result: SessionResult,
    items: list[Any],
    repeat: int,
) -> None:
    calls: dict[str, Callable[[], object]] = {}
    try:
        calls.update(_histcore_calls(side, loop, result.session_id))
    except SessionError as exc:
        result.notes.append(f"histcore's session cannot read this store: {exc}")
    if sdk_session is not None:
        calls.update(_sdk_calls(loop, sdk_session))
    try:
        results, timings = _timed(calls, repeat)
    except SessionError as exc:
        raise BadInput(f"session {result.session_id!r}: {exc}") from None
    _check_reads(result, items, results)
    del results
    result.read = Pair(timings.get("read.histcore"), timings.get("read.sdk"))
    result.reread = timings.get("reread.histcore")
    result.prepare = Pair(timings.get("prepare.histcore"), timings.get("prepare.sdk"))


def _time_passes(
    result: SessionResult, items: list[Any], reference: Reference | None, repeat: int
) -> None:
    workload = Workload("history", len(items), items)
    for name in PASSES:
        operation = OPERATIONS[name]
        expected = operation.engine(_pure, workload)
        calls: dict[str, Callable[[], object]] = {
            "histcore": lambda op=operation: op.engine(_engine, workload)  # type: ignore[misc]
        }
        sdk_call = operation.reference
        if reference is not None and sdk_call is not None:
            calls["sdk"] = lambda call=sdk_call: call(reference, workload)  # type: ignore[misc]
        results, timings = _timed(calls, repeat)
        for implementation, got in results.items():
            if implementation == "sdk" and not operation.reference_comparable:
                continue
            problem = verify(operation.result_kind, got, expected, items)
            if problem is not None:
                raise Mismatch(
                    f"session {result.session_id!r}: {name} ({implementation}) disagrees with "
                    f"the pure twin: {problem}"
                )
        del results, expected
        result.passes[name] = Pair(timings["histcore"], timings.get("sdk"))


# --- the SDK turn -----------------------------------------------------------------------


@contextmanager
def _accelerated(on: bool) -> Iterator[None]:
    from histcore import openai_agents as accelerator

    accelerator.uninstall()
    if on:
        accelerator.install()
    try:
        yield
    finally:
        accelerator.uninstall()


def _fresh_copy(source: str, workdir: str, name: str) -> str:
    path = os.path.join(workdir, name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    shutil.copyfile(source, path)
    return path


def _turn_once(
    loop: _Loop, copy: str, workdir: str, session_id: str, installed: bool, model: Any, message: str
) -> tuple[str, float, str]:
    """One turn on a fresh copy: (final output, seconds, the copy's path)."""
    from histcore.cli.bench import sdk_conversation

    path = _fresh_copy(copy, workdir, "installed.db" if installed else "plain.db")
    with _accelerated(installed):
        gc.collect()
        start = time.perf_counter()
        answer = loop.run(sdk_conversation.run_turn(path, message, model, session_id))
        elapsed = time.perf_counter() - start
    return answer, elapsed, path


async def _sdk_items(path: str, session_id: str) -> list[Any]:
    from agents import SQLiteSession as SdkSession

    session = SdkSession(session_id, path)
    try:
        return list(await session.get_items())
    finally:
        session.close()


def _check_turn(loop: _Loop, copy: str, workdir: str, result: SessionResult) -> bool:
    """Run a plain and an installed turn; False (and a note) when the plain one fails."""
    from histcore.openai_agents.testing import ScriptedModel

    sid = result.session_id
    plain_model, fast_model = ScriptedModel(), ScriptedModel()
    try:
        plain, _, plain_path = _turn_once(
            loop, copy, workdir, sid, False, plain_model, TURN_MESSAGE
        )
    except Exception as exc:  # the SDK's own turn failing on this history is a finding
        result.notes.append(f"the SDK turn failed without histcore: {type(exc).__name__}: {exc}")
        return False
    fast, _, fast_path = _turn_once(loop, copy, workdir, sid, True, fast_model, TURN_MESSAGE)
    if plain != fast:
        raise Mismatch(f"session {sid!r}: the turn's final output differs with install()")
    if plain_model.inputs != fast_model.inputs:
        raise Mismatch(f"session {sid!r}: the model received other input with install()")
    stored = [loop.run(_sdk_items(path, sid)) for path in (plain_path, fast_path)]
    if json.dumps(stored[0], sort_keys=True) != json.dumps(stored[1], sort_keys=True):
        raise Mismatch(f"session {sid!r}: the session holds other items after an installed turn")
    return True


def _time_turn(loop: _Loop, copy: str, result: SessionResult, repeat: int) -> None:
    from histcore.openai_agents.testing import ScriptedModel

    with tempfile.TemporaryDirectory(prefix="histcore-bench-turn-") as workdir:
        if not _check_turn(loop, copy, workdir, result):
            return
        samples: dict[bool, list[float]] = {False: [], True: []}
        for round_ in range(repeat):
            for installed, values in samples.items():
                model = ScriptedModel(record=False)
                message = f"{TURN_MESSAGE}, round {round_}"
                values.append(
                    _turn_once(loop, copy, workdir, result.session_id, installed, model, message)[1]
                )

    def timing(values: list[float]) -> Timing:
        return Timing(statistics.median(values), tuple(values), 1)

    result.turn = Pair(timing(samples[True]), timing(samples[False]))


# --- a run ------------------------------------------------------------------------------


def _bench_session(
    store: Store, session_id: str, plan: Plan, context: _Context, progress: TextIO
) -> SessionResult:
    try:
        rows = store.read_rows(session_id)
    except DoctorError as exc:
        raise BadInput(str(exc)) from None
    items = _session_items(rows)
    result = SessionResult(session_id, len(items), len(rows))
    progress.write(f"session {session_id!r}: {len(items)} items ... ")
    progress.flush()
    copy = os.path.join(context.workdir, f"session-{len(context.copies)}.db")
    context.copies.append(copy)
    write_copy(copy, session_id, rows)
    # The SDK has no session reading histcore's PostgreSQL layout: SQLite stores only.
    reads_sdk = plan.sdk and plan.kind == "sqlite"
    sdk_session = context.sdk_session(session_id, copy) if reads_sdk else None
    _time_reads(context.histcore, context.loop, sdk_session, result, items, plan.repeat)
    _time_passes(result, items, context.reference, plan.repeat)
    if plan.turn:
        _time_turn(context.loop, copy, result, plan.repeat)
    progress.write("done\n")
    return result


@dataclass
class _Context:
    workdir: str
    loop: _Loop
    histcore: _Histcore
    reference: Reference | None
    copies: list[str] = field(default_factory=list)
    sdk_sessions: list[Any] = field(default_factory=list)

    def sdk_session(self, session_id: str, path: str) -> Any:
        from agents import SQLiteSession as SdkSession

        made = SdkSession(session_id, path)
        self.sdk_sessions.append(made)
        return made

    def close(self) -> None:
        for session in self.sdk_sessions:
            session.close()
        self.histcore.close()
        self.loop.close()


def run_benchmark(plan: Plan, progress: TextIO) -> StoreResult:
    """Check, then time every chosen session. Raises BadInput or Mismatch."""
    store = _open_store(plan)
    try:
        chosen = _select(store, plan.sessions)
        reference = load_reference() if plan.sdk else None
        environment = Environment.current(
            plan.build_profile, reference.version if reference else _sdk_version()
        )
        result = StoreResult(plan, store.name, environment)
        with tempfile.TemporaryDirectory(prefix="histcore-bench-store-") as workdir:
            loop = _Loop()
            context = _Context(workdir, loop, _Histcore(plan, loop), reference)
            try:
                for session_id in chosen:
                    result.sessions.append(
                        _bench_session(store, session_id, plan, context, progress)
                    )
            finally:
                context.close()
    finally:
        store.close()
    return result


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version("openai-agents")
    except PackageNotFoundError:
        return None


# --- report -----------------------------------------------------------------------------


def _seconds(timing: Timing | None) -> str:
    return "-" if timing is None else format_seconds(timing.median)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def _columns(result: StoreResult) -> list[tuple[str, str, int, Callable[[SessionResult], str]]]:
    """(group, name, width, cell) of every column after the session id and size."""
    columns: list[tuple[str, str, int, Callable[[SessionResult], str]]] = [
        ("read (fresh, full)", "histcore", 9, lambda s: _seconds(s.read.histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.read.other)),
        ("", "speedup", 7, lambda s: _ratio(s.read.speedup)),
        ("re-read", "cached", 9, lambda s: _seconds(s.reread)),
        ("prepare_input", "histcore", 9, lambda s: _seconds(s.prepare.histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.prepare.other)),
        ("", "speedup", 7, lambda s: _ratio(s.prepare.speedup)),
        ("engine passes", "histcore", 9, lambda s: _seconds(s.passes_total().histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.passes_total().other)),
        ("", "speedup", 7, lambda s: _ratio(s.passes_total().speedup)),
    ]
    if result.plan.turn:
        columns += [
            ("SDK turn", "plain", 9, lambda s: _seconds(s.turn.other if s.turn else None)),
            ("", "installed", 9, lambda s: _seconds(s.turn.histcore if s.turn else None)),
            ("", "speedup", 7, lambda s: _ratio(s.turn.speedup if s.turn else None)),
        ]
    return columns


def _short(session_id: str, width: int) -> str:
    return session_id if len(session_id) <= width else session_id[: width - 3] + "..."


def _table(result: StoreResult) -> list[str]:
    width = min(max([7, *(len(s.session_id) for s in result.sessions)]), 32)
    columns = _columns(result)
    groups = f"{'':<{width}}  {'':>7}"
    names = f"{'session':<{width}}  {'items':>7}"
    for group, name, size, _ in columns:
        groups += f"  {group:<{size}}" if group else f"  {'':<{size}}"
        names += f"  {name:>{size}}"
    lines = [groups.rstrip(), names]
    for session in result.sessions:
        line = f"{_short(session.session_id, width):<{width}}  {session.items:>7}"
        line += "".join(f"  {cell(session):>{size}}" for _, _, size, cell in columns)
        lines.append(line)
    return lines


def _legend(result: StoreResult) -> list[str]:
    plan = result.plan
    sdk_read = (
        "the SDK's SQLiteSession.get_items on a private copy of the session's rows"
        if plan.kind == "sqlite"
        else "none (the SDK's SQLite session cannot read a PostgreSQL store)"
    )
    lines = [
        "read: every call reads and decodes all the session's rows (histcore: "
        f"cache_history=False); SDK: {sdk_read}",
        "re-read: histcore's default session reading again, nothing new (its history cache)",
        f"prepare_input: prepare_input_with_session({NEW_MESSAGE!r}), no callback, read "
        "included, nothing persisted",
        f"engine passes: {', '.join(PASSES)} (summed; each in --json)",
    ]
    if plan.turn:
        lines.append(
            f"SDK turn: Runner.run({TURN_MESSAGE!r}), scripted model, on a copy of the session; "
            "plain against install(), results checked identical"
        )
    if not plan.sdk:
        lines.append("SDK columns empty: openai-agents is not installed (or --no-reference)")
    return lines


def render(result: StoreResult) -> str:
    plan = result.plan
    kind = "SQLite" if plan.kind == "sqlite" else "PostgreSQL"
    lines = header(result.environment, "benchmark of stored sessions")
    lines += [
        f"store: {result.name} ({kind}, read-only; tables {plan.tables.sessions}, "
        f"{plan.tables.messages}); {len(result.sessions)} session(s)",
        f"engine: {result.environment.backend}; medians of up to {plan.repeat} samples",
        "",
        *_table(result),
        "",
        *_legend(result),
    ]
    for session in result.sessions:
        lines += [f"note: session {session.session_id!r}: {note}" for note in session.notes]
    return "\n".join(lines)


def _pair_json(pair: Pair, other: str = "sdk") -> dict[str, Any]:
    return {
        "histcore": None if pair.histcore is None else pair.histcore.to_json(),
        other: None if pair.other is None else pair.other.to_json(),
        "speedup": pair.speedup,
    }


def _session_json(session: SessionResult) -> dict[str, Any]:
    turn = None
    if session.turn is not None:
        turn = {
            "plain": session.turn.other.to_json() if session.turn.other else None,
            "installed": session.turn.histcore.to_json() if session.turn.histcore else None,
            "speedup": session.turn.speedup,
        }
    return {
        "session_id": session.session_id,
        "items": session.items,
        "rows": session.rows,
        "read": {**_pair_json(session.read), "fresh_full_read": True},
        "reread_cached": {"histcore": None if session.reread is None else session.reread.to_json()},
        "prepare_input": {
            **_pair_json(session.prepare),
            "model_input_items": (
                None
                if session.prepare_inputs is None
                else dict(zip(("histcore", "sdk"), session.prepare_inputs, strict=True))
            ),
        },
        "passes": {name: _pair_json(pair) for name, pair in session.passes.items()},
        "passes_total": _pair_json(session.passes_total()),
        "turn": turn,
        "notes": list(session.notes),
    }


def to_json(result: StoreResult) -> dict[str, Any]:
    plan = result.plan
    return {
        "format": FORMAT,
        "environment": result.environment.to_json(),
        "store": {
            "kind": plan.kind,
            "name": result.name,
            "sessions_table": plan.tables.sessions,
            "messages_table": plan.tables.messages,
        },
        "settings": {
            "repeat": plan.repeat,
            "sdk": plan.sdk,
            "openai_agents_turn": plan.turn,
            "passes": list(PASSES),
            "new_message": NEW_MESSAGE,
            "turn_message": TURN_MESSAGE if plan.turn else None,
        },
        "sessions": [_session_json(session) for session in result.sessions],
    }


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
    return 0
