"""The store kinds ``histcore bench --openai-agents`` times an SDK turn on.

The SDK's ``SQLiteSession``, ``AsyncSQLiteSession`` (aiosqlite), ``EncryptedSession``
over ``SQLiteSession``, ``SQLAlchemySession`` on PostgreSQL (asyncpg) and histcore's own
``PostgresSession``, each filled with the same generated history by its own writer.
A kind whose packages or server are missing is skipped with a one-line reason.

Rules: each mode (plain SDK, ``install()``, ...) runs in a Python process of its own on
its own copy of the store (a copied file; for PostgreSQL a schema of its own, filled
again), and gives the median of its rounds; the process keeps one session object, as
a conversation does, and runs an untimed turn on it before the timed ones (installed,
each timed turn then reads what is new). The modes' timed rounds take turns, so that a
drift in the machine's speed weighs on each alike. histcore's ``PostgresSession`` has no
plain mode: its row compares with the SDK's ``SQLAlchemySession`` on the same server.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from histcore.cli.bench import memory
from histcore.cli.bench.signals import signals_held

if TYPE_CHECKING:
    from histcore.openai_agents import Installation

__all__ = [
    "KINDS",
    "SESSION_ID",
    "Checked",
    "Place",
    "Round",
    "StoreKind",
    "TimedMode",
    "close_session",
    "file_copies",
    "fill",
    "missing",
    "open_session",
    "read_items",
    "remove_copies",
    "session_at",
    "time_modes",
]

SESSION_ID = "bench"
#: EncryptedSession's key (not a secret: a benchmark's) and a TTL nothing outlives.
_KEY = "histcore-bench-key-histcore-bench-key-000000"
_TTL = 10**9


@dataclass(frozen=True)
class StoreKind:
    name: str
    label: str
    #: Modules it needs, and the extra that brings them.
    needs: tuple[str, ...]
    extra: str
    postgres: bool = False
    #: The kind whose plain SDK turn this kind's installed turn is compared with
    #: (None: its own).
    baseline: str | None = None


KINDS: dict[str, StoreKind] = {
    kind.name: kind
    for kind in (
        StoreKind("sqlite", "SQLiteSession", (), "openai-agents"),
        StoreKind("async-sqlite", "AsyncSQLiteSession", ("aiosqlite",), "test"),
        StoreKind(
            "encrypted-sqlite", "EncryptedSession over SQLiteSession", ("cryptography",), "test"
        ),
        StoreKind(
            "sqlalchemy-postgres",
            "SQLAlchemySession, PostgreSQL (asyncpg)",
            ("sqlalchemy", "asyncpg", "psycopg"),
            "test,postgres",
            postgres=True,
        ),
        StoreKind(
            "histcore-postgres",
            "histcore PostgresSession, PostgreSQL",
            ("psycopg", "psycopg_pool"),
            "postgres",
            postgres=True,
            baseline="sqlalchemy-postgres",
        ),
    )
}


@dataclass(frozen=True)
class Checked:
    """What a check turn did: its answer, the model's inputs, the items it left (JSON)."""

    answer: str
    inputs: list[str]
    items: str


@dataclass(frozen=True)
class Place:
    """One copy of a store: a SQLite file, or a schema in a PostgreSQL database."""

    path: str | None = None
    dsn: str | None = None
    schema: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "dsn": self.dsn, "schema": self.schema}


def missing(kind: StoreKind) -> str | None:
    """Why ``kind`` cannot run here (a package is missing), or None."""
    for module in kind.needs:
        try:
            importlib.import_module(module)
        except ImportError:
            return f"needs {module}: pip install 'histcore[{kind.extra}]'"
    return None


def _schema_dsn(place: Place) -> str:
    from psycopg.conninfo import make_conninfo

    assert place.dsn is not None
    return make_conninfo(place.dsn, options=f"-csearch_path={place.schema}")


def _sqlalchemy_url(dsn: str) -> Any:
    from psycopg.conninfo import conninfo_to_dict
    from sqlalchemy.engine import URL

    parts = {key: str(value) for key, value in conninfo_to_dict(dsn).items()}
    port = parts.get("port")
    return URL.create(
        "postgresql+asyncpg",
        username=parts.get("user"),
        password=parts.get("password"),
        host=parts.get("host"),
        port=int(port) if port else None,
        database=parts.get("dbname"),
    )


def open_session(kind: StoreKind, place: Place) -> Any:
    """A new session object of ``kind`` on ``place`` (open it inside the event loop that
    will use it: the PostgreSQL ones connect there)."""
    from agents import SQLiteSession

    path = place.path or ":memory:"
    if kind.name == "sqlite":
        return SQLiteSession(SESSION_ID, path)
    if kind.name == "async-sqlite":
        from agents.extensions.memory import AsyncSQLiteSession

        return AsyncSQLiteSession(SESSION_ID, path)
    if kind.name == "encrypted-sqlite":
        from agents.extensions.memory import EncryptedSession

        inner = SQLiteSession(SESSION_ID, path)
        return EncryptedSession(SESSION_ID, inner, _KEY, ttl=_TTL)
    assert place.dsn is not None
    if kind.name == "sqlalchemy-postgres":
        from agents.extensions.memory import SQLAlchemySession

        settings = {"server_settings": {"search_path": str(place.schema)}}
        return SQLAlchemySession.from_url(
            SESSION_ID,
            url=_sqlalchemy_url(place.dsn),
            create_tables=True,
            engine_kwargs={"connect_args": settings},
        )
    if kind.name == "histcore-postgres":
        from histcore.sessions.postgres import PostgresSession

        return PostgresSession(SESSION_ID, _schema_dsn(place))
    raise ValueError(f"unknown store kind {kind.name!r}")


async def close_session(session: Any) -> None:
    """Close ``session`` (and what it wraps), its connections too, in the running loop."""
    inner = getattr(session, "underlying_session", session)
    closing = getattr(inner, "close", None)
    if closing is not None:
        done = closing()
        if asyncio.iscoroutine(done):
            await done
    engine = getattr(inner, "_engine", None)
    if engine is not None:
        await engine.dispose()
    if type(inner).__module__.startswith("histcore.sessions.postgres"):
        from histcore.sessions.postgres import close_pools

        await close_pools()


@asynccontextmanager
async def session_at(kind: StoreKind, place: Place) -> AsyncIterator[Any]:
    """A session of ``kind`` at ``place``, closed (``close_session``) on leaving."""
    session = open_session(kind, place)
    try:
        yield session
    finally:
        await close_session(session)


def fill(kind: StoreKind, place: Place, history: list[Any]) -> None:
    """Write ``history`` to a new store of ``kind`` at ``place`` with its own writer."""

    async def write() -> None:
        async with session_at(kind, place) as session:
            await session.add_items(history)

    asyncio.run(write())


def file_copies(source: str, directory: str, name: str, modes: Iterable[str]) -> dict[str, Place]:
    """A copy of the SQLite file ``source`` per mode, ``<name>-<mode>.db`` in ``directory``."""
    places = {}
    for mode in modes:
        path = os.path.join(directory, f"{name}-{mode.replace(' ', '-')}.db")
        shutil.copyfile(source, path)
        places[mode] = Place(path=path)
    return places


def remove_copies(places: dict[str, Place]) -> None:
    """Remove the files of ``places`` that exist (a schema is its server's to drop)."""
    for place in places.values():
        if place.path is not None and os.path.exists(place.path):
            os.remove(place.path)


def read_items(kind: StoreKind, place: Place) -> list[Any]:
    """What a new session object of ``kind`` reads at ``place``."""

    async def read() -> list[Any]:
        async with session_at(kind, place) as session:
            return list(await session.get_items())

    return asyncio.run(read())


# --- timing: each mode a process of its own, the modes' rounds in turn -------------


class Round(NamedTuple):
    """One timed turn: its seconds, the guard's seconds within it, its model-input
    dedupes' seconds, its peak RSS in bytes (None: the platform cannot reset the peak
    for one turn), and when it started (``time.monotonic``, one clock for every
    process of the machine)."""

    seconds: float
    guard_seconds: float
    dedupe_seconds: float
    peak_rss: int | None
    started: float


async def _round(
    kind: StoreKind,
    place: Place,
    session: Any,
    installation: Installation | None,
    mode: str,
    round_: int,
) -> Round:
    """One timed turn in ``mode`` on ``session`` (None: a new session object opened in
    the turn)."""
    from contextlib import nullcontext

    from histcore.cli.bench import sdk_turn as bench

    model = bench.SDKScriptedModel(record=False, id_prefix=f"{mode}{round_}_")
    gc.collect()  # every sample starts from the same collector state
    guard = installation.guard if installation is not None else None
    own, deduping = (guard.seconds, guard.dedupe_seconds) if guard is not None else (0, 0)
    spent = [0.0]
    timing = bench.timed_dedupes(spent) if mode == "installed" else nullcontext()
    message = f"Paris and Rome, round {round_}"
    reset = memory.reset_peak_rss()
    with bench.quiet_guard(), timing:
        started = time.monotonic()
        start = time.perf_counter()
        if session is None:
            async with session_at(kind, place) as opened:
                await bench.session_turn(opened, message, model)
        else:
            await bench.session_turn(session, message, model)
        elapsed = time.perf_counter() - start
    peak = memory.peak_rss() if reset else None
    if guard is None:
        return Round(elapsed, 0.0, spent[0], peak, started)
    return Round(elapsed, guard.seconds - own, guard.dedupe_seconds - deduping, peak, started)


async def _conversation(
    kind: StoreKind,
    place: Place,
    mode: str,
    next_round: Callable[[], Awaitable[bool]],
    report: Callable[[Round], None],
) -> None:
    """An untimed turn in ``mode``, then a timed one each time ``next_round`` says so,
    all on one session object as a conversation keeps it (``new session``: each timed
    turn opens its own). The untimed turn puts first calls, imports and the SDK's trace
    provider behind the rounds, and under ``install()`` the full read: each timed turn
    reads what is new."""
    from histcore import openai_agents as accelerator
    from histcore.cli.bench import sdk_turn as bench

    accelerator.uninstall()
    installation = None if mode == "plain" else accelerator.install(guard=mode == "guarded")
    session: Any = open_session(kind, place)
    try:
        model = bench.SDKScriptedModel(record=False, id_prefix=f"{mode}-warm_")
        with bench.quiet_guard():
            await bench.session_turn(session, "Quito", model)
        if mode == "new session":
            opened, session = session, None
            await close_session(opened)
        round_ = 0
        while await next_round():
            report(await _round(kind, place, session, installation, mode, round_))
            round_ += 1
    finally:
        if session is not None:
            await close_session(session)
        accelerator.uninstall()


def _rounds(kind: StoreKind, place: Place, mode: str, repeat: int) -> list[Round]:
    """``repeat`` rounds of ``mode`` in this process, one after another."""
    rounds: list[Round] = []

    async def more() -> bool:
        return len(rounds) < repeat

    asyncio.run(_conversation(kind, place, mode, more, rounds.append))
    return rounds


#: What starts a line of the timing processes' own (the SDK may print lines too).
_MARK = "histcore-bench "


def _serve(kind: str, place: dict[str, Any], mode: str) -> None:
    """A timing process: the untimed turn, then ``ready``; a timed round for each
    ``round`` line on stdin, answered by its ``Round``; at ``done`` (or the end of
    stdin), the process's peak RSS."""

    def say(value: Any) -> None:
        sys.stdout.write(_MARK + json.dumps(value) + "\n")
        sys.stdout.flush()

    async def next_round() -> bool:
        say("ready")
        line: str = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        return line.strip() == "round"

    asyncio.run(_conversation(KINDS[kind], Place(**place), mode, next_round, say))
    say(memory.process_peak_rss())


_CHILD = """
import json, sys
from histcore.cli.bench import sdk_stores
sdk_stores._serve(*json.loads(sys.argv[1]))
"""


@dataclass(frozen=True)
class TimedMode:
    """A mode's rounds in their own process, and that process's peak RSS (bytes), which
    covers its warm-up turn and every round."""

    rounds: list[Round]
    peak_rss: int | None

    @property
    def turn_peak_rss(self) -> int | None:
        """The highest peak RSS of a timed turn, or the process's where a turn's peak
        cannot be measured alone (``memory.reset_peak_rss``)."""
        peaks = [round_.peak_rss for round_ in self.rounds]
        if not peaks or any(peak is None for peak in peaks):
            return self.peak_rss
        return max(peak for peak in peaks if peak is not None)


class ChildFailed(Exception):
    """A timing process ended with an error (its stderr is the message)."""


class _Process:
    """One mode's timing process (``_serve``), and its side of the conversation."""

    def __init__(self, kind: StoreKind, place: Place, mode: str) -> None:
        self.kind, self.mode = kind, mode
        argument = json.dumps([kind.name, place.to_json(), mode])
        # stderr to a file: a pipe nobody reads while the rounds run could fill and stall it
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8")
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, argument],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
            )
        except BaseException:
            self._stderr.close()
            raise

    def failure(self) -> ChildFailed:
        self._child.kill()
        self._child.wait()
        self._stderr.seek(0)
        problem = self._stderr.read()
        return ChildFailed(f"the {self.mode} turns on {self.kind.label} failed:\n{problem}")

    def reply(self) -> Any:
        """The process's next line of its own, once it has written it."""
        assert self._child.stdout is not None
        for line in self._child.stdout:
            if line.startswith(_MARK):
                return json.loads(line[len(_MARK) :])
        raise self.failure()

    def send(self, command: str) -> None:
        assert self._child.stdin is not None
        try:
            self._child.stdin.write(command + "\n")
            self._child.stdin.flush()
        except BrokenPipeError:
            raise self.failure() from None

    def finish(self) -> int | None:
        """Its peak RSS, once it has ended its conversation and exited."""
        self.send("done")
        peak = self.reply()
        if self._child.wait() != 0:
            raise self.failure()
        return None if peak is None else int(peak)

    def close(self) -> None:
        if self._child.poll() is None:
            self._child.kill()
            self._child.wait()
        for stream in (self._child.stdin, self._child.stdout, self._stderr):
            with suppress(BrokenPipeError):
                if stream is not None:
                    stream.close()


def time_modes(kind: StoreKind, places: dict[str, Place], repeat: int) -> dict[str, TimedMode]:
    """``repeat`` rounds of each mode of ``places`` on its place, each mode in a new
    Python process, the modes' rounds in turn (ABBA...: round 1 in the order given,
    round 2 the other way around, and so on), so that the machine's speed, which drifts
    from minute to minute, weighs on every mode alike."""
    processes: dict[str, _Process] = {}
    try:
        for mode, place in places.items():
            with signals_held():  # a process started is one the ``finally`` ends
                processes[mode] = _Process(kind, place, mode)
        for process in processes.values():  # the untimed turns, all at once
            if process.reply() != "ready":
                raise process.failure()
        rounds: dict[str, list[Round]] = {mode: [] for mode in processes}
        for round_ in range(repeat):
            order = list(processes) if round_ % 2 == 0 else list(reversed(processes))
            for mode in order:
                process = processes[mode]
                process.send("round")
                rounds[mode].append(Round(*process.reply()))
                if process.reply() != "ready":
                    raise process.failure()
        return {
            mode: TimedMode(rounds[mode], process.finish()) for mode, process in processes.items()
        }
    finally:
        for process in processes.values():
            process.close()
