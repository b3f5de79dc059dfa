"""Sessions and session-input preparation: histcore and the OpenAI Agents SDK side by side.

One pytest-benchmark group per operation and size, holding a ``histcore`` and an
``sdk`` row, plus floors no session can beat: for fresh reads ``baseline:select`` (a bare
``SELECT ... fetchall()``) and ``baseline:select+orjson`` (the same, each row then decoded
by ``orjson.loads``), for writes ``baseline:executemany`` (the already encoded rows
inserted by one ``executemany`` in one transaction, WAL mode). All work on the same SQLite
file (the SDK's tables) holding a generated history (``histcore.testing.generate_history``):

* ``add_items-N``: append N items to a new file;
* ``get_items[fresh]-N``: a new session object reads all N items;
* ``get_items[cached]-N``: a session that already read them reads them again (the
  SDK keeps nothing, so its row is a second plain read);
* ``prepare[first]-N`` / ``prepare[second]-N``: ``prepare_input_with_session`` with
  a new user message on a new session / on one that already read the history;
  ``prepare-callback[...]`` the same with the callback
  ``history + [history[0]] + new``.

Before timing, each benchmark checks its result: the items read equal the history,
and histcore's model input and persisted items equal the SDK's.
``test_memory_peak_vs_sdk`` compares the traced peak memory of one first read, one
first-turn prepare and one with the callback (not timed).

Sizes follow ``benches/conftest.py``: a smoke run (``--benchmark-disable``, the
project default) runs each once at 10^3 items, ``HISTCORE_BENCH_LARGE=1`` adds 10^4
and 10^5; ``--benchmark-enable`` times 10^3, 10^4 and 10^5, and
``HISTCORE_BENCH_HUGE=1`` adds 10^6 (one round each; a 10^6-item case holds several
copies of the history at once, several GB).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import os
import shutil
import sqlite3
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import orjson
import pytest

from histcore.items import repair_input
from histcore.sessions import SQLiteSession, prepare_input_with_session
from histcore.testing import generate_history

SMOKE_SIZES = (1_000,)
DEFAULT_SIZES = (1_000, 10_000, 100_000)
HUGE_SIZE = 1_000_000
SESSION_ID = "bench"
NEW_INPUT = "What changed since yesterday?"
IMPLEMENTATIONS = ("histcore", "sdk")
OPERATIONS = (
    "add_items",
    "get_items[fresh]",
    "get_items[cached]",
    "prepare[first]",
    "prepare[second]",
    "prepare-callback[first]",
    "prepare-callback[second]",
)
# Floors timed beside the sessions (see the module docstring).
BASELINES = {
    "get_items[fresh]": ("baseline:select", "baseline:select+orjson"),
    "add_items": ("baseline:executemany",),
}
# The peak-memory target: histcore within this factor of the SDK.
MEMORY_RATIO = 1.5
MEMORY_WORKLOADS = ("get_items", "prepare", "prepare-callback")


def repeat_history_zero(history: list[Any], new: list[Any]) -> list[Any]:
    """The benchmark callback: a history item repeated every turn."""
    return history + history[:1] + new


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _timing(config: pytest.Config) -> bool:
    return bool(
        config.getoption("benchmark_enable", False)
        or not config.getoption("benchmark_disable", False)
    )


def bench_sizes(config: pytest.Config) -> tuple[int, ...]:
    if not _timing(config) and not _flag("HISTCORE_BENCH_LARGE"):
        return SMOKE_SIZES
    return DEFAULT_SIZES + ((HUGE_SIZE,) if _flag("HISTCORE_BENCH_HUGE") else ())


def rounds_for(size: int) -> int:
    # Every round of a "fresh" case opens a new session; a fixed count keeps the slow
    # SDK rows at large sizes from running for minutes.
    return {1_000: 20, 10_000: 6, 100_000: 3}.get(size, 1)


@dataclass(frozen=True)
class Case:
    operation: str
    size: int
    implementation: str

    @property
    def group(self) -> str:
        return f"{self.operation}-{self.size}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    sizes = bench_sizes(metafunc.config)
    if "case" in metafunc.fixturenames:
        cases = [
            Case(operation, size, implementation)
            for size in sizes
            for operation in OPERATIONS
            for implementation in IMPLEMENTATIONS + BASELINES.get(operation, ())
        ]
        metafunc.parametrize(
            "case",
            [
                pytest.param(
                    case,
                    id=f"{case.group}-{case.implementation}",
                    marks=pytest.mark.benchmark(group=case.group),
                )
                for case in cases
            ],
        )
    if "memory_size" in metafunc.fixturenames:
        metafunc.parametrize("memory_size", [size for size in sizes if size <= 100_000])
        metafunc.parametrize("workload", MEMORY_WORKLOADS)


@functools.lru_cache(maxsize=1)
def _history(size: int) -> list[Any]:
    return generate_history(size, seed=7)


def _sdk() -> tuple[Any, Any]:
    """The SDK's SQLiteSession class and prepare_input_with_session, or a skip."""
    try:
        memory = importlib.import_module("agents.memory")
        persistence = importlib.import_module("agents.run_internal.session_persistence")
    except ImportError:
        pytest.skip("openai-agents is not installed")
    return memory.SQLiteSession, persistence.prepare_input_with_session


class Files:
    """Prebuilt databases (one per size) and scratch files for writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0

    @functools.lru_cache(maxsize=2)  # noqa: B019 - one instance per run
    def history(self, size: int) -> Path:
        path = self.root / f"history-{size}.db"
        with SQLiteSession(SESSION_ID, path) as session:
            asyncio.run(session.add_items(_history(size)))
        return path

    def scratch(self) -> Path:
        self.count += 1
        return self.root / f"scratch-{self.count}.db"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Files]:
    root = tmp_path_factory.mktemp("bench_sessions")
    yield Files(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


class Opened:
    """Sessions opened by one benchmark; closed before the next round and at the end."""

    def __init__(self) -> None:
        self.sessions: list[Any] = []

    def add(self, session: Any) -> Any:
        self.sessions.append(session)
        return session

    def close_all(self) -> None:
        for session in self.sessions:
            session.close()
        self.sessions.clear()


def _open(case: Case, path: Path, opened: Opened) -> Any:
    if case.implementation == "histcore":
        return opened.add(SQLiteSession(SESSION_ID, path))
    sdk_session, _ = _sdk()
    return opened.add(sdk_session(SESSION_ID, path))


def _prepare(case: Case) -> Callable[[Any], Awaitable[tuple[Any, Any]]]:
    callback = repeat_history_zero if case.operation.startswith("prepare-callback") else None
    if case.implementation == "histcore":
        return lambda session: prepare_input_with_session(NEW_INPUT, session, callback)
    _, sdk_prepare = _sdk()
    return lambda session: sdk_prepare(NEW_INPUT, session, callback)


def _expected_prepare(case: Case, files: Files, loop: asyncio.AbstractEventLoop) -> Any:
    """The SDK's result on the same file, with the units that break the model-input
    rules dropped (histcore repairs what the SDK sends as it is): what histcore's must
    equal."""
    sdk_case = Case(case.operation, case.size, "sdk")
    opened = Opened()
    try:
        session = _open(sdk_case, files.history(case.size), opened)
        model_input, persisted = loop.run_until_complete(_prepare(sdk_case)(session))
    finally:
        opened.close_all()
    return repair_input(model_input, history=_history(case.size)), persisted


def bare_select(path: Path) -> list[Any]:
    """The floor of any read: the rows' text fetched by a new plain connection."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id",
            (SESSION_ID,),
        ).fetchall()
    finally:
        conn.close()


def select_and_decode(path: Path) -> list[Any]:
    """The floor of a read that decodes with orjson: the rows as bytes, each decoded,
    with the cyclic collector paused (as histcore's reads pause it)."""
    conn = sqlite3.connect(path)
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows = conn.execute(
            "SELECT CAST(message_data AS BLOB) FROM agent_messages "
            "WHERE session_id = ? ORDER BY id",
            (SESSION_ID,),
        ).fetchall()
        loads = orjson.loads
        return [loads(data) for (data,) in rows]
    finally:
        if collecting:
            gc.enable()
        conn.close()


def bare_executemany(path: Path, texts: list[str]) -> None:
    """The floor of a write: encoded rows inserted in one transaction (WAL mode)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
            zip(repeat(SESSION_ID), texts),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def _baseline(benchmark: Any, case: Case, files: Files) -> None:
    rounds = rounds_for(case.size)
    if case.implementation == "baseline:executemany":
        texts = [orjson.dumps(item).decode() for item in _history(case.size)]

        def new_file() -> tuple[tuple[Any, ...], dict[str, Any]]:
            for old in files.root.glob("scratch-*"):
                old.unlink()
            path = files.scratch()
            with SQLiteSession(SESSION_ID, path) as empty:  # the SDK's tables, empty
                asyncio.run(empty.get_items())  # the store opens (and makes them) on first use
            return (path, texts), {}

        (path, _), _ = new_file()
        bare_executemany(path, texts)
        with SQLiteSession(SESSION_ID, path) as written:
            assert asyncio.run(written.get_items()) == _history(case.size)
        benchmark.pedantic(bare_executemany, setup=new_file, rounds=rounds, iterations=1)
        return
    path = files.history(case.size)
    read = bare_select if case.implementation == "baseline:select" else select_and_decode
    assert len(read(path)) == case.size
    benchmark.pedantic(read, args=(path,), rounds=rounds)


def test_sessions(
    benchmark: Any, case: Case, files: Files, loop: asyncio.AbstractEventLoop
) -> None:
    if case.implementation.startswith("baseline:"):
        _baseline(benchmark, case, files)
        return
    if case.implementation == "sdk":
        _sdk()  # skip early when the SDK is missing
    history = _history(case.size)
    rounds = rounds_for(case.size)
    opened = Opened()
    run = loop.run_until_complete
    try:
        if case.operation == "add_items":

            def new_file() -> tuple[tuple[Any, ...], dict[str, Any]]:
                opened.close_all()
                for old in files.root.glob("scratch-*"):
                    old.unlink()
                return (_open(case, files.scratch(), opened),), {}

            def add(session: Any) -> None:
                run(session.add_items(history))

            (session,), _ = new_file()
            add(session)
            assert run(session.get_items()) == history
            benchmark.pedantic(add, setup=new_file, rounds=rounds, iterations=1)
            return

        path = files.history(case.size)
        if case.operation.startswith("get_items"):

            def target(session: Any) -> Any:
                return run(session.get_items())

        else:
            prepare = _prepare(case)

            def target(session: Any) -> Any:
                return run(prepare(session))

            if case.implementation == "histcore":
                expected = _expected_prepare(case, files, loop)
                assert run(prepare(_open(case, path, opened))) == expected
                del expected  # large histories: keep one copy alive at a time
                opened.close_all()
        expected_items = history if case.operation.startswith("get_items") else None

        if case.operation.endswith("[fresh]") or case.operation.endswith("[first]"):

            def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
                opened.close_all()
                return (_open(case, path, opened),), {}

            (session,), _ = fresh()
            if expected_items is not None:
                assert target(session) == expected_items
            benchmark.pedantic(target, setup=fresh, rounds=rounds, iterations=1)
        else:
            session = _open(case, path, opened)
            first = target(session)  # the first read; the timed ones come after it
            if expected_items is not None:
                assert first == expected_items
            del first
            benchmark.pedantic(target, args=(session,), rounds=rounds, iterations=1)
    finally:
        opened.close_all()


def _peak(call: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


def test_memory_peak_vs_sdk(
    memory_size: int, workload: str, files: Files, loop: asyncio.AbstractEventLoop
) -> None:
    """One first-turn operation on a new session: histcore's peak within 1.5x the SDK's."""
    sdk_session, sdk_prepare = _sdk()
    path = files.history(memory_size)
    run = loop.run_until_complete
    callback = repeat_history_zero if workload == "prepare-callback" else None

    def ours() -> Any:
        with SQLiteSession(SESSION_ID, path) as session:
            if workload == "get_items":
                return run(session.get_items())
            return run(prepare_input_with_session(NEW_INPUT, session, callback))

    def theirs() -> Any:
        session = sdk_session(SESSION_ID, path)
        try:
            if workload == "get_items":
                return run(session.get_items())
            return run(sdk_prepare(NEW_INPUT, session, callback))
        finally:
            session.close()

    ours_peak, sdk_peak = _peak(ours), _peak(theirs)
    print(
        f"\npeak traced memory, {workload}, {memory_size} items: "
        f"histcore {ours_peak / 2**20:.1f} MiB, sdk {sdk_peak / 2**20:.1f} MiB "
        f"({ours_peak / sdk_peak:.2f}x)"
    )
    assert ours_peak <= MEMORY_RATIO * sdk_peak
