"""The store kinds ``histcore bench --openai-agents`` times an SDK turn on.

The SDK's ``SQLiteSession``, ``AsyncSQLiteSession`` (aiosqlite), ``EncryptedSession``
over ``SQLiteSession``, ``SQLAlchemySession`` on PostgreSQL (asyncpg) and histcore's own
``PostgresSession``, each filled with the same generated history by its own writer.
A kind whose packages or server are missing is skipped with a one-line reason.

Rules: each mode (plain SDK, ``install()``, ...) runs in a Python process of its own on
its own copy of the store (a copied file; for PostgreSQL a schema of its own, filled
again), and gives the median of its rounds; the process keeps one session object, as
a conversation does, and runs an untimed turn on it before the timed ones (installed,
each timed turn then reads what is new). histcore's ``PostgresSession`` has no
plain mode: its row compares with the SDK's ``SQLAlchemySession`` on the same server.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from histcore.cli.bench import memory

if TYPE_CHECKING:
    from histcore.openai_agents import Installation

__all__ = [
    "KINDS",
    "SESSION_ID",
    "Checked",
    "Place",
    "StoreKind",
    "TimedMode",
    "close_session",
    "fill",
    "missing",
    "open_session",
    "read_items",
    "session_at",
    "time_mode",
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


def read_items(kind: StoreKind, place: Place) -> list[Any]:
    """What a new session object of ``kind`` reads at ``place``."""

    async def read() -> list[Any]:
        async with session_at(kind, place) as session:
            return list(await session.get_items())

    return asyncio.run(read())


# --- timing, in a process of its own ------------------------------------------------

#: a turn's seconds, the guard's seconds within it, its model-input dedupes' seconds,
#: and its peak RSS in bytes (None: the platform cannot reset the peak for one turn)
RoundResult = tuple[float, float, float, int | None]


async def _round(
    kind: StoreKind,
    place: Place,
    session: Any,
    installation: Installation | None,
    mode: str,
    round_: int,
) -> RoundResult:
    """One timed turn in ``mode`` on ``session`` (None: a new session object opened in
    the turn): its seconds, the guard's own seconds within it, the seconds of its
    model-input dedupes (as ``sdk_conversation`` reports them) and its peak RSS."""
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
        start = time.perf_counter()
        if session is None:
            async with session_at(kind, place) as opened:
                await bench.session_turn(opened, message, model)
        else:
            await bench.session_turn(session, message, model)
        elapsed = time.perf_counter() - start
    peak = memory.peak_rss() if reset else None
    if guard is None:
        return elapsed, 0.0, spent[0], peak
    return elapsed, guard.seconds - own, guard.dedupe_seconds - deduping, peak


async def _conversation(kind: StoreKind, place: Place, mode: str, repeat: int) -> list[RoundResult]:
    """An untimed turn in ``mode``, then ``repeat`` timed ones, all on one session
    object as a conversation keeps it (``new session``: each timed turn opens its own).
    The untimed turn puts first calls, imports and the SDK's trace provider behind the
    rounds, and under ``install()`` the full read: each timed turn reads what is new."""
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
        return [
            await _round(kind, place, session, installation, mode, round_)
            for round_ in range(repeat)
        ]
    finally:
        if session is not None:
            await close_session(session)
        accelerator.uninstall()


def _rounds(kind: StoreKind, place: Place, mode: str, repeat: int) -> list[RoundResult]:
    return asyncio.run(_conversation(kind, place, mode, repeat))


_CHILD = """
import json, sys
from histcore.cli.bench import memory, sdk_stores
kind, place, mode, repeat = json.loads(sys.argv[1])
rounds = sdk_stores._rounds(
    sdk_stores.KINDS[kind], sdk_stores.Place(**place), mode, repeat
)
print(json.dumps([rounds, memory.process_peak_rss()]))
"""


@dataclass(frozen=True)
class TimedMode:
    """A mode's rounds in their own process, and that process's peak RSS (bytes), which
    covers its warm-up turn and every round."""

    rounds: list[RoundResult]
    peak_rss: int | None

    @property
    def turn_peak_rss(self) -> int | None:
        """The highest peak RSS of a timed turn, or the process's where a turn's peak
        cannot be measured alone (``memory.reset_peak_rss``)."""
        peaks = [round_[3] for round_ in self.rounds]
        if not peaks or any(peak is None for peak in peaks):
            return self.peak_rss
        return max(peak for peak in peaks if peak is not None)


class ChildFailed(Exception):
    """A timing process ended with an error (its stderr is the message)."""


def time_mode(
    kind: StoreKind, place: Place, mode: str, repeat: int, run: Callable[..., Any] = subprocess.run
) -> TimedMode:
    """``repeat`` rounds of ``mode`` on ``place``, in a new Python process."""
    argument = json.dumps([kind.name, place.to_json(), mode, repeat])
    done = run(
        [sys.executable, "-c", _CHILD, argument],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ChildFailed(f"the {mode} turns on {kind.label} failed:\n{done.stderr}")
    rounds, peak = json.loads(done.stdout.strip().splitlines()[-1])
    return TimedMode(
        [(float(a), float(b), float(c), None if d is None else int(d)) for a, b, c, d in rounds],
        None if peak is None else int(peak),
    )
