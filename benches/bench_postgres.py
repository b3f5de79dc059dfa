"""The PostgreSQL session beside the SQLite session on a long history.

Groups (one table per operation and size, both backends in it):

* ``get_items``: the whole history, by a session that has read it before (``warm``,
  the per-turn cost: only newer rows are fetched) and by one that keeps no cache
  (``cold``: every row fetched and decoded);
* ``add_items``: one 10-item turn appended to the long history, and the whole history
  written into an empty session in one batch;
* ``prepare_input_with_session``: a turn's model input from the long history, without
  and with a (pass-through) ``session_input_callback``;
* ``append_8_writers``: 8 writers, each with its own session object and connection,
  appending 10-item batches to one shared session; ``extra_info`` has items/s.

``pytest benches`` runs each once on 10^3 items as a smoke test; with
``--benchmark-enable`` (or ``HISTCORE_BENCH_LARGE=1``) the history has 10^5 items.
PostgreSQL is the server of ``HISTCORE_PG_DSN``, or a throwaway cluster started by
``scripts/pg-cluster.sh`` (see ``tests/support/pg.py``); without it the PostgreSQL cases are
skipped, or fail when ``CI`` is set. Every case checks its result before it is timed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tests.support.pg import require_pg, unique

from histcore.sessions import SessionABC, SQLiteSession, prepare_input_with_session
from histcore.testing import generate_history

_T = TypeVar("_T")
BACKENDS = ("sqlite", "postgres")
SMOKE_SIZE = 1_000
LARGE_SIZE = 100_000
TURN = 10
WRITERS = 8
BATCHES_PER_WRITER = 25


def _size(config: pytest.Config) -> int:
    timing = config.getoption("benchmark_enable", False) or not config.getoption(
        "benchmark_disable", False
    )
    large = os.environ.get("HISTCORE_BENCH_LARGE", "").strip().lower() in ("1", "true", "yes")
    return LARGE_SIZE if timing or large else SMOKE_SIZE


@pytest.fixture(scope="module")
def size(pytestconfig: pytest.Config) -> int:
    return _size(pytestconfig)


@pytest.fixture(scope="module")
def history(size: int) -> list[dict[str, Any]]:
    return generate_history(size)


@dataclass
class Place:
    """Where one backend's sessions live for this module's benchmarks."""

    backend: str
    sqlite_path: Path | None = None
    dsn: str | None = None
    tables: str = ""

    def session(self, session_id: str, **options: Any) -> SessionABC:
        if self.backend == "sqlite":
            assert self.sqlite_path is not None
            return SQLiteSession(session_id, self.sqlite_path, **options)
        from histcore.sessions.postgres import PostgresSession

        assert self.dsn is not None
        return PostgresSession(
            session_id,
            self.dsn,
            sessions_table=f"{self.tables}_sessions",
            messages_table=f"{self.tables}_messages",
            **options,
        )


class Loop:
    """One event loop per benchmark: pools and sessions live in it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, work: Callable[[], Awaitable[_T]]) -> _T:
        return self.loop.run_until_complete(work())

    def close(self) -> None:
        async def close_pools() -> None:
            if "histcore.sessions.postgres" in sys.modules:
                from histcore.sessions.postgres import close_pools

                await close_pools()

        self.loop.run_until_complete(close_pools())
        self.loop.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop()
    yield made
    made.close()


@pytest.fixture(scope="module")
def places(
    tmp_path_factory: pytest.TempPathFactory, history: list[dict[str, Any]]
) -> Iterator[dict[str, Place]]:
    """Each backend with two sessions holding ``history``: "main" (read-only) and
    "turns" (grows by the appended turns)."""
    made: dict[str, Place] = {}
    yield made
    for place in made.values():
        if place.backend == "postgres":
            _drop_tables(place)


def _drop_tables(place: Place) -> None:
    import psycopg

    assert place.dsn is not None
    with psycopg.connect(place.dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {place.tables}_messages, {place.tables}_sessions")


@pytest.fixture(params=BACKENDS)
def place(
    request: pytest.FixtureRequest,
    places: dict[str, Place],
    history: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Place:
    backend = str(request.param)
    if backend not in places:
        if backend == "sqlite":
            new = Place(backend, sqlite_path=tmp_path_factory.mktemp("sqlite") / "bench.db")
        else:
            new = Place(backend, dsn=require_pg().dsn, tables=unique("bench"))
        loader = Loop()
        try:
            for session_id in ("main", "turns"):
                session = new.session(session_id)
                loader.run(lambda s=session: s.add_items(history))
                _close(session)
        finally:
            loader.close()
        places[backend] = new
    return places[backend]


def _close(session: SessionABC) -> None:
    close = getattr(session, "close", None)
    if close is not None:
        close()


def _group(operation: str, size: int) -> str:
    return f"{operation}-{size}"


# --- get_items ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_get_items(
    benchmark: Any, place: Place, loop: Loop, history: list[dict[str, Any]], mode: str
) -> None:
    benchmark.group = _group(f"get_items-{mode}", len(history))
    session = place.session("main", cache_history=(mode == "warm"))
    items = loop.run(session.get_items)
    assert items == history
    result = benchmark.pedantic(lambda: loop.run(session.get_items), rounds=5, iterations=1)
    assert len(result) == len(history)
    assert result[-1] == history[-1]
    _close(session)


# --- add_items ------------------------------------------------------------------------


def test_add_items_turn(
    benchmark: Any, place: Place, loop: Loop, history: list[dict[str, Any]]
) -> None:
    benchmark.group = _group("add_items-turn", len(history))
    session = place.session("turns")
    turn = history[:TURN]
    before = len(loop.run(session.get_items))
    loop.run(lambda: session.add_items(turn))
    assert loop.run(lambda: session.get_items(TURN)) == turn
    benchmark.pedantic(lambda: loop.run(lambda: session.add_items(turn)), rounds=20, iterations=1)
    assert len(loop.run(session.get_items)) > before
    _close(session)


def test_add_items_bulk(
    benchmark: Any, place: Place, loop: Loop, history: list[dict[str, Any]]
) -> None:
    benchmark.group = _group("add_items-bulk", len(history))
    sessions: list[SessionABC] = []

    def fresh() -> tuple[tuple[SessionABC], dict[str, Any]]:
        sessions.append(place.session(unique("bulk")))
        return (sessions[-1],), {}

    benchmark.pedantic(
        lambda session: loop.run(lambda: session.add_items(history)),
        setup=fresh,
        rounds=3,
        iterations=1,
    )
    for session in sessions:
        assert loop.run(lambda s=session: s.get_items(1)) == history[-1:]
        loop.run(session.clear_session)
        _close(session)


# --- prepare_input_with_session --------------------------------------------------------


def _pass_through(history: list[Any], new: list[Any]) -> list[Any]:
    return history + new


@pytest.mark.parametrize("callback", ["plain", "callback"])
def test_prepare_input_with_session(
    benchmark: Any, place: Place, loop: Loop, history: list[dict[str, Any]], callback: str
) -> None:
    benchmark.group = _group(f"prepare_input_with_session-{callback}", len(history))
    session = place.session("main")
    hook = _pass_through if callback == "callback" else None

    def prepare() -> tuple[list[Any], list[Any]]:
        return loop.run(lambda: prepare_input_with_session("And now?", session, hook))

    model_input, persist = prepare()
    assert persist == [{"role": "user", "content": "And now?"}]
    assert model_input[-1] == persist[0]
    assert len(model_input) <= len(history) + 1
    benchmark.pedantic(prepare, rounds=5, iterations=1)
    _close(session)


# --- concurrent appends ------------------------------------------------------------------


def test_append_8_writers(benchmark: Any, place: Place, loop: Loop) -> None:
    benchmark.group = "append_8_writers"
    session_id = unique("shared")
    writers = [place.session(session_id) for _ in range(WRITERS)]
    per_round = WRITERS * BATCHES_PER_WRITER * TURN

    async def write_all() -> None:
        async def writer(number: int, session: SessionABC) -> None:
            for batch in range(BATCHES_PER_WRITER):
                await session.add_items(
                    [{"role": "user", "content": f"{number}.{batch}.{k}"} for k in range(TURN)]
                )

        await asyncio.gather(*(writer(n, s) for n, s in enumerate(writers)))

    started = time.perf_counter()
    loop.run(write_all)
    first_round = time.perf_counter() - started
    stored = loop.run(writers[0].get_items)
    assert len(stored) == per_round
    for number in range(WRITERS):  # each writer's items in its order, batches whole
        mine = [item["content"] for item in stored if item["content"].startswith(f"{number}.")]
        assert mine == [f"{number}.{b}.{k}" for b in range(BATCHES_PER_WRITER) for k in range(TURN)]
    benchmark.pedantic(lambda: loop.run(write_all), rounds=3, iterations=1)
    stats = getattr(benchmark, "stats", None)
    seconds = stats.stats.mean if stats is not None else first_round
    benchmark.extra_info["items_per_second"] = round(per_round / seconds)
    benchmark.extra_info["writers"] = WRITERS
    loop.run(writers[0].clear_session)
    for session in writers:
        _close(session)
