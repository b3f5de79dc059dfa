"""``histcore bench --store/--dsn``: each session replayed as it grew, and its storage.

At up to ``POINTS`` sizes spread over a session (every prefix of its items for short
ones), a private SQLite copy of that prefix (the SDK's tables) gets one turn's history
handling timed: the SDK's ``SQLiteSession.get_items`` (read) and its
``prepare_input_with_session`` (read included; the rest is ``prepare``), plain, under
``histcore.openai_agents.install()`` (which must give the same model input) and under
``install(guard=True)`` (its part of the history preparation; its check before each
model call runs in the run loop, outside a turn here). A difference whose samples'
min-max ranges overlap is within noise. ``verdict`` says per session whether histcore
would help (plain against install()) and what the guard adds; ``storage`` measures the
store's bytes.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from histcore.cli.bench.store_plan import NEW_MESSAGE, Mismatch, is_item, write_copy
from histcore.cli.bench.timing import Timing
from histcore.cli.bench.units import format_seconds
from histcore.sessions._store_readers.model import Row, StoreReader, Tables
from histcore.sessions._store_readers.sqlite import SQLiteReader

__all__ = [
    "CURVE_SAMPLES",
    "POINTS",
    "Point",
    "Storage",
    "curve_sizes",
    "overlaps",
    "storage",
    "time_curve",
    "verdict",
]

#: Sizes timed per session (fewer when it has fewer items).
POINTS = 20
#: Samples per figure at least, so each has a spread to judge noise by.
CURVE_SAMPLES = 3
#: A sample repeats a fast call until it lasts this long (timer resolution).
_MIN_SAMPLE_SECONDS = 0.002
#: Below this a turn's history handling is not worth accelerating.
NEGLIGIBLE_SECONDS = 1e-3
_SESSION_MODULE = "agents.run_internal.session_persistence"


@dataclass(frozen=True)
class Point:
    """One size of a session: the turn's history handling plain, installed and, when
    timed, under ``install(guard=True)``."""

    items: int
    plain: dict[str, Timing]  # "read", "turn"
    installed: dict[str, Timing]
    guarded: dict[str, Timing] | None = None
    #: whether the guard sent another model input than install() (it repaired one)
    guard_repaired: bool = False

    def ratio(self, phase: str = "turn") -> float | None:
        fast = self.installed[phase].median
        return None if fast <= 0 else self.plain[phase].median / fast

    def within_noise(self, phase: str = "turn") -> bool:
        return overlaps(self.plain[phase], self.installed[phase])

    def guard_cost(self) -> float | None:
        """What the guard adds to an installed turn (medians, seconds); None when not
        timed or within noise."""
        if self.guarded is None or overlaps(self.installed["turn"], self.guarded["turn"]):
            return None
        return self.guarded["turn"].median - self.installed["turn"].median

    def prepare(self, mode: str) -> float:
        """The turn beyond its read (medians), in seconds."""
        timings = {"plain": self.plain, "guarded": self.guarded}.get(mode) or self.installed
        return max(0.0, timings["turn"].median - timings["read"].median)

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "plain": {phase: timing.to_json() for phase, timing in self.plain.items()},
            "installed": {phase: timing.to_json() for phase, timing in self.installed.items()},
            "ratio": self.ratio(),
            "within_noise": self.within_noise(),
            "read_ratio": self.ratio("read"),
            "read_within_noise": self.within_noise("read"),
            "guarded": (
                None
                if self.guarded is None
                else {phase: timing.to_json() for phase, timing in self.guarded.items()}
            ),
            "guard_cost_s": self.guard_cost(),
            "guard_within_noise": (
                None
                if self.guarded is None
                else overlaps(self.installed["turn"], self.guarded["turn"])
            ),
            "guard_repaired": self.guard_repaired,
        }


def overlaps(a: Timing, b: Timing) -> bool:
    """Whether the samples' min-max ranges overlap: no measurable difference."""
    return min(a.samples) <= max(b.samples) and min(b.samples) <= max(a.samples)


def curve_sizes(items: int, points: int = POINTS) -> list[int]:
    """Up to ``points`` sizes spread evenly over 1..items, increasing, ending at items."""
    count = min(points, items)
    return sorted({max(1, round(items * step / count)) for step in range(1, count + 1)})


# --- timing -----------------------------------------------------------------------------


def _sampled(calls: dict[str, Callable[[], object]], samples: int) -> dict[str, Timing]:
    """Each call sampled ``samples`` times in rounds (after a first, untimed call that
    sizes its loops); the collector is paused as ``timing.measure_interleaved`` does."""
    import gc

    loops: dict[str, int] = {}
    for key, call in calls.items():
        start = time.perf_counter()
        call()
        first = time.perf_counter() - start
        loops[key] = max(1, math.ceil(_MIN_SAMPLE_SECONDS / max(first, 1e-7)))
    taken: dict[str, list[float]] = {key: [] for key in calls}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(samples):
            for key, call in calls.items():
                start = time.perf_counter()
                for _ in range(loops[key]):
                    call()
                taken[key].append((time.perf_counter() - start) / loops[key])
    finally:
        if enabled:
            gc.enable()
    return {
        key: Timing(statistics.median(values), tuple(values), loops[key])
        for key, values in taken.items()
    }


def _model_input(prepared: object) -> str:
    model_input = prepared[0] if isinstance(prepared, tuple) else prepared
    return json.dumps(model_input, sort_keys=True, default=str)


def _time_copy(path: str, session_id: str, samples: int) -> tuple[dict[str, Timing], str]:
    """The read and the prepared turn on the copy at ``path``: timings, model input."""
    from agents import SQLiteSession as SdkSession

    loop = asyncio.new_event_loop()
    session = SdkSession(session_id, path)
    try:
        # Looked up now: install() replaces the module's function.
        prepare = importlib.import_module(_SESSION_MODULE).prepare_input_with_session
        calls: dict[str, Callable[[], object]] = {
            "read": lambda: loop.run_until_complete(session.get_items()),
            "turn": lambda: loop.run_until_complete(prepare(NEW_MESSAGE, session, None)),
        }
        prepared = _model_input(calls["turn"]())
        return _sampled(calls, samples), prepared
    finally:
        session.close()
        loop.close()


def _time_sizes(
    session_id: str, item_rows: Sequence[Row], sizes: Sequence[int], workdir: str, samples: int
) -> list[tuple[dict[str, Timing], str]]:
    measured = []
    for size in sizes:
        path = os.path.join(workdir, f"curve-{size}.db")
        write_copy(path, session_id, item_rows[:size])
        try:
            measured.append(_time_copy(path, session_id, samples))
        finally:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
    return measured


def time_curve(
    session_id: str, rows: Sequence[Row], workdir: str, repeat: int, points: int = POINTS
) -> list[Point]:
    """The session's curve, timed on private copies of its prefixes (all plain, then all
    installed, then all guarded: install() takes about 0.1 s). Raises Mismatch when
    install() prepares another model input than the plain SDK (the guard may repair
    one: ``Point.guard_repaired``)."""
    from histcore import openai_agents as accelerator

    item_rows = [row for row in rows if is_item(row)]
    sizes = curve_sizes(len(item_rows), points)
    samples = max(repeat, CURVE_SAMPLES)
    accelerator.uninstall()
    plain = _time_sizes(session_id, item_rows, sizes, workdir, samples)
    accelerator.install()
    try:
        fast = _time_sizes(session_id, item_rows, sizes, workdir, samples)
        accelerator.install(guard=True)
        # The guard warns once per session and problem; a bench reports, not warns.
        guard_logger = logging.getLogger("histcore.openai_agents")
        level = guard_logger.level
        guard_logger.setLevel(logging.ERROR)
        try:
            guarded = _time_sizes(session_id, item_rows, sizes, workdir, samples)
        finally:
            guard_logger.setLevel(level)
    finally:
        accelerator.uninstall()
    curve: list[Point] = []
    for size, (plain_timings, plain_input), (fast_timings, fast_input), (
        guard_timings,
        guard_input,
    ) in zip(sizes, plain, fast, guarded, strict=True):
        if plain_input != fast_input:
            raise Mismatch(
                f"session {session_id!r}: at {size} items, install() prepared another model "
                "input than the plain SDK"
            )
        curve.append(
            Point(size, plain_timings, fast_timings, guard_timings, guard_input != fast_input)
        )
    return curve


def verdict(curve: Sequence[Point]) -> str:
    """One line: would histcore help this session, at its full size (plain against
    install())? Then what the guard adds to install(), when measurable."""
    if not curve:
        return "no items: nothing to time"
    cost = curve[-1].guard_cost()
    guard = "" if cost is None or cost <= 0 else f"; the guard adds {format_seconds(cost)}"
    return _gain(curve[-1]) + guard


def _gain(last: Point) -> str:
    plain, fast = last.plain["turn"].median, last.installed["turn"].median
    if plain < NEGLIGIBLE_SECONDS:
        return (
            f"at {last.items:,} items a turn spends {format_seconds(plain)} in history "
            "handling: below 1 ms, nothing to gain here"
        )
    if last.within_noise():
        return (
            f"at {last.items:,} items a turn spends {format_seconds(plain)} in history "
            f"handling, with install() {format_seconds(fast)}: within noise, no measurable "
            "difference"
        )
    ratio = last.ratio()
    factor = "-" if ratio is None else (f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x")
    if ratio is not None and ratio < 1:
        factor += ", slower"
    return (
        f"at {last.items:,} items a turn spends {format_seconds(plain)} in history handling; "
        f"with install() {format_seconds(fast)} ({factor})"
    )


# --- storage ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Storage:
    """The store's bytes: per table (its indexes included), per stored item, the WAL."""

    tables: dict[str, int]
    total: int
    rows: int
    wal: int | None  # SQLite: the -wal file's bytes (0 when absent); None on PostgreSQL
    method: str

    @property
    def per_item(self) -> float | None:
        return None if self.rows <= 0 else self.total / self.rows

    def to_json(self) -> dict[str, Any]:
        return {
            "tables_bytes": dict(self.tables),
            "total_bytes": self.total,
            "stored_rows": self.rows,
            "bytes_per_item": self.per_item,
            "wal_bytes": self.wal,
            "method": self.method,
        }


def storage(store: StoreReader, kind: str, tables: Tables, wal: int | None) -> Storage:
    """The store's sizes, read on its own (read-only) connection."""
    if kind == "sqlite":
        return _sqlite_storage(store, tables.messages, wal)
    return _postgres_storage(store, tables.sessions, tables.messages)


def _sqlite_storage(store: StoreReader, messages: str, wal: int | None) -> Storage:
    if not isinstance(store, SQLiteReader):
        raise TypeError(f"not a SQLite store: {store!r}")
    conn = store._conn
    rows = int(conn.execute(f'SELECT COUNT(*) FROM "{messages}"').fetchone()[0])
    owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    page_count = int(conn.execute("PRAGMA page_count").fetchone()[0])
    try:
        used = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except Exception:  # dbstat is a compile-time option of SQLite
        return Storage({}, page_size * page_count, rows, wal, "page_count*page_size")
    tables: dict[str, int] = {}
    for name, size in used:
        table = owner.get(name, name)
        tables[table] = tables.get(table, 0) + int(size)
    return Storage(tables, page_size * page_count, rows, wal, "dbstat")


def _like_prefix(table: str) -> str:
    escaped = table.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "\\_%"


def _postgres_storage(store: StoreReader, sessions: str, messages: str) -> Storage:
    from histcore.sessions._store_readers.postgres import PostgresReader

    if not isinstance(store, PostgresReader):
        raise TypeError(f"not a PostgreSQL store: {store!r}")
    execute = store._execute
    # The session tables and their side tables (named after them), not the database's others.
    names = [sessions, messages]
    tables = {
        str(name): int(size)
        for name, size in execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() "
            "AND (c.relname = ANY(%s) OR c.relname LIKE %s OR c.relname LIKE %s) "
            "ORDER BY c.relname",
            (names, _like_prefix(sessions), _like_prefix(messages)),
        )
    }
    rows = int(execute(f'SELECT COUNT(*) FROM "{messages}"')[0][0])
    return Storage(tables, sum(tables.values()), rows, None, "pg_total_relation_size")
