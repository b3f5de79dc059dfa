"""The timed part of ``histcore bench --store/--dsn``: per session, histcore's reads
and preparation against the SDK's, the engine passes against the SDK's helpers, and
(``--openai-agents``) the SDK's turn plain and under ``install()``; every result is
checked before it is timed. ``run_benchmark`` runs it all on the chosen sessions.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from histcore.cli.bench.engine import OPERATIONS, Workload, verify
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.reference import Reference, load_reference
from histcore.cli.bench.store_curve import Point, Storage, storage, time_curve, verdict
from histcore.cli.bench.store_plan import (
    BUSY_TIMEOUT,
    NEW_MESSAGE,
    PASSES,
    TURN_MESSAGE,
    BadInput,
    Mismatch,
    Plan,
    open_store,
    select_sessions,
    session_items,
    skipped_note,
    skipped_rows,
    write_copy,
)
from histcore.cli.bench.timing import Timing, measure_interleaved, timed_call
from histcore.engine import pure as _pure
from histcore.engine.backend import backend_module as _engine
from histcore.exceptions import SessionError
from histcore.sessions import SessionABC, SQLiteSession, prepare_input_with_session
from histcore.sessions._store_readers.model import Row, StoreError, StoreReader
from histcore.sessions._store_readers.sqlite import SQLiteReader

__all__ = ["Pair", "SessionResult", "StoreResult", "run_benchmark"]

_T = TypeVar("_T")

#: Times histcore's read is compared with the rows as stored while a writer changes them.
READ_ATTEMPTS = 3


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
    #: rows histcore's session skips (not valid JSON, or not an object): (id, why)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the session replayed as it grew (store_curve), and what it says
    curve: list[Point] = field(default_factory=list)
    verdict: str | None = None

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
    #: how the store was opened, when that was unusual (immutable)
    notes: list[str] = field(default_factory=list)
    storage: Storage | None = None


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
    """histcore's sessions of the store: SQLite read-only (through ``uri``, the one the
    store was opened with), or a read-only pool."""

    def __init__(self, plan: Plan, loop: _Loop, uri: str | None) -> None:
        self._plan = plan
        self._loop = loop
        self._uri = uri
        self._pool: Any = None
        self._opened: list[SessionABC] = []

    def session(self, session_id: str, cache: bool) -> SessionABC:
        tables = self._plan.tables
        made: SessionABC
        if self._plan.kind == "sqlite":
            uri = self._uri or Path(self._plan.location).absolute().as_uri() + "?mode=ro"
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
                await pool.open(wait=True, timeout=BUSY_TIMEOUT)
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
    side: _Histcore, loop: _Loop, session_id: str, full: SessionABC
) -> dict[str, Callable[[], object]]:
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
    # histcore's read was checked by _settled_rows: the store may have changed since.
    where = f"session {result.session_id!r}"
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
    full: SessionABC | None,
    sdk_session: Any,
    result: SessionResult,
    items: list[Any],
    repeat: int,
) -> None:
    calls: dict[str, Callable[[], object]] = {}
    if full is not None:
        calls.update(_histcore_calls(side, loop, result.session_id, full))
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
    from histcore.openai_agents.testing import SDKScriptedModel

    sid = result.session_id
    plain_model, fast_model = SDKScriptedModel(), SDKScriptedModel()
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
    from histcore.openai_agents.testing import SDKScriptedModel

    with tempfile.TemporaryDirectory(prefix="histcore-bench-turn-") as workdir:
        if not _check_turn(loop, copy, workdir, result):
            return
        samples: dict[bool, list[float]] = {False: [], True: []}
        for round_ in range(repeat):
            for installed, values in samples.items():
                model = SDKScriptedModel(record=False)
                message = f"{TURN_MESSAGE}, round {round_}"
                values.append(
                    _turn_once(loop, copy, workdir, result.session_id, installed, model, message)[1]
                )

    def timing(values: list[float]) -> Timing:
        return Timing(statistics.median(values), tuple(values), 1)

    result.turn = Pair(timing(samples[True]), timing(samples[False]))


# --- a run ------------------------------------------------------------------------------


def _read_rows(store: StoreReader, session_id: str) -> list[Row]:
    try:
        return store.read_rows(session_id)
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def _stored_form(rows: list[Row]) -> list[tuple[int, Any]]:
    return [(row.row_id, row.data) for row in rows]


def _read_data(store: StoreReader, session_id: str) -> list[tuple[int, Any]]:
    try:
        return store.read_data(session_id)
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def _settled_rows(
    store: StoreReader, loop: _Loop, full: SessionABC | None, session_id: str
) -> tuple[list[Row], str | None]:
    """The session's rows as stored, with histcore's session read checked against them.

    A live writer may change the session between the two reads (they cannot share a
    snapshot: the session has a connection of its own), so the rows are read again
    after histcore's read, and the comparison counts only when they did not change
    meanwhile; otherwise it is tried again, READ_ATTEMPTS times in all. Returns the
    rows, and a note when the session changed every time (not an error).
    """
    rows = _read_rows(store, session_id)
    if full is None:
        return rows, None
    sizes = [len(rows)]
    for _ in range(READ_ATTEMPTS):
        try:
            read = loop.run(full.get_items())
        except SessionError as exc:
            raise BadInput(f"session {session_id!r}: {exc}") from None
        # Undecoded, so quick: 10^5 rows in 0.95 s, where read_rows takes 7.3 s.
        if _read_data(store, session_id) == _stored_form(rows):
            items = session_items(rows)
            if read != items:
                raise Mismatch(
                    f"session {session_id!r}: histcore's session read differs from the rows "
                    f"as stored ({len(read)} items read, {len(items)} stored), and the "
                    "session did not change meanwhile"
                )
            return rows, None
        rows = _read_rows(store, session_id)
        sizes.append(len(rows))
    return rows, (
        f"the session changed while it was read, {READ_ATTEMPTS} times running (a live "
        f"writer; rows: {' -> '.join(map(str, sizes))}): histcore's read could not be "
        "compared with the rows as stored, and it is timed on the session as it then was"
    )


def _bench_session(
    store: StoreReader, session_id: str, plan: Plan, context: _Context, progress: TextIO
) -> SessionResult:
    full: SessionABC | None = None
    unreadable = None
    try:
        full = context.histcore.session(session_id, cache=False)
    except SessionError as exc:
        unreadable = f"histcore's session cannot read this store: {exc}"
    rows, changed = _settled_rows(store, context.loop, full, session_id)
    items = session_items(rows)
    result = SessionResult(session_id, len(items), len(rows), skipped=skipped_rows(rows))
    if unreadable is not None:
        result.notes.append(unreadable)
    if result.skipped:
        result.notes.append(skipped_note(result.skipped))
    if changed is not None:
        result.notes.append(changed)
    progress.write(f"session {session_id!r}: {len(items)} items ... ")
    progress.flush()
    copy = os.path.join(context.workdir, f"session-{len(context.copies)}.db")
    context.copies.append(copy)
    write_copy(copy, session_id, rows)
    # The SDK has no session reading histcore's PostgreSQL layout: SQLite stores only.
    reads_sdk = plan.sdk and plan.kind == "sqlite"
    sdk_session = context.sdk_session(session_id, copy) if reads_sdk else None
    _time_reads(context.histcore, context.loop, full, sdk_session, result, items, plan.repeat)
    _time_passes(result, items, context.reference, plan.repeat)
    if plan.turn:
        _time_turn(context.loop, copy, result, plan.repeat)
    if plan.sdk:
        # The SDK's SQLiteSession on private copies: a PostgreSQL session's rows too.
        result.curve = time_curve(session_id, rows, context.workdir, plan.repeat)
        result.verdict = verdict(result.curve)
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
    wal = _wal_bytes(plan)  # before the store is opened: its readers may make a -wal
    store = open_store(plan)
    try:
        chosen = select_sessions(store, plan.sessions)
        reference = load_reference() if plan.sdk else None
        environment = Environment.current(
            plan.build_profile, reference.version if reference else _sdk_version()
        )
        uri = store.uri if isinstance(store, SQLiteReader) else None
        notice = store.notice if isinstance(store, SQLiteReader) else None
        result = StoreResult(plan, store.name, environment, notes=[notice] if notice else [])
        with tempfile.TemporaryDirectory(prefix="histcore-bench-store-") as workdir:
            loop = _Loop()
            context = _Context(workdir, loop, _Histcore(plan, loop, uri), reference)
            try:
                for session_id in chosen:
                    result.sessions.append(
                        _bench_session(store, session_id, plan, context, progress)
                    )
            finally:
                context.close()
        try:
            result.storage = storage(store, plan.kind, plan.tables, wal)
        except Exception as exc:  # sizes are a report's extra: a note, not a failure
            result.notes.append(f"storage sizes could not be read: {type(exc).__name__}: {exc}")
    finally:
        store.close()
    return result


def _wal_bytes(plan: Plan) -> int | None:
    if plan.kind != "sqlite":
        return None
    try:
        return os.path.getsize(plan.location + "-wal")
    except OSError:
        return 0


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version("openai-agents")
    except PackageNotFoundError:
        return None
