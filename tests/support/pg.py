"""PostgreSQL for the tests, session / RunState-store factories for every backend, and
``ListSession``, a session written without histcore.

The server is the one named by ``HISTCORE_PG_DSN`` (with ``HISTCORE_PG_DIR``, the
cluster directory printed by ``scripts/pg-cluster.sh start``, restart tests can restart
it). Without ``HISTCORE_PG_DSN`` the first PostgreSQL test starts a throwaway cluster
through that script, for the whole test run, and it is stopped when the run ends.

When PostgreSQL is unavailable the PostgreSQL tests are skipped, except when ``CI`` is
set: then they FAIL, so a CI run can never pass without having run them.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from histcore.sessions import MemorySession, SessionABC, SessionSettings, SQLiteSession
from histcore.state_store import MemoryRunStateStore, RunStateStore, SQLiteRunStateStore

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO / "scripts" / "pg-cluster.sh"

#: Every session / RunState-store backend, for parametrised fixtures.
BACKENDS = ("memory", "sqlite", "postgres")


class PgUnavailable(Exception):
    """PostgreSQL could not be reached or started; the message says why."""


@dataclass(frozen=True)
class PgServer:
    dsn: str
    #: The cluster directory when the cluster was made by scripts/pg-cluster.sh.
    cluster_dir: str | None

    def restart(self) -> None:
        """Stop and start the server (``pg_ctl restart``); every connection drops."""
        if self.cluster_dir is None:
            raise PgUnavailable(
                "HISTCORE_PG_DSN is set without HISTCORE_PG_DIR: the server cannot be restarted"
            )
        _script("restart", self.cluster_dir)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _script(*args: str) -> str:
    env = {**os.environ, "HISTCORE_PG_NO_INSTALL": "1"}
    try:
        done = subprocess.run(
            ["bash", str(CLUSTER_SCRIPT), *args],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PgUnavailable(f"{CLUSTER_SCRIPT.name} {args[0]}: {exc}") from exc
    if done.returncode != 0:
        raise PgUnavailable(f"{CLUSTER_SCRIPT.name} {args[0]} failed:\n{done.stderr.strip()}")
    return done.stdout


def _check_connects(dsn: str) -> None:
    try:
        import psycopg
    except ImportError as exc:
        raise PgUnavailable(f"psycopg is not installed ({exc})") from exc
    try:
        with psycopg.connect(dsn, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise PgUnavailable(f"cannot connect to HISTCORE_PG_DSN: {exc}") from exc


def _new_cluster() -> PgServer:
    """A throwaway cluster made by scripts/pg-cluster.sh; the caller stops it."""
    exports: dict[str, str] = {}
    for line in _script("start").splitlines():
        if line.startswith("export ") and "=" in line:
            name, _, value = line[len("export ") :].partition("=")
            exports[name] = value
    if "HISTCORE_PG_DSN" not in exports or "HISTCORE_PG_DIR" not in exports:
        raise PgUnavailable(f"{CLUSTER_SCRIPT.name} start printed no DSN")
    return PgServer(exports["HISTCORE_PG_DSN"], exports["HISTCORE_PG_DIR"])


def _start_cluster() -> PgServer:
    server = _new_cluster()
    assert server.cluster_dir is not None
    atexit.register(_stop_quietly, server.cluster_dir)
    return server


def _stop_quietly(cluster_dir: str) -> None:
    try:
        _script("stop", cluster_dir)
    except PgUnavailable as exc:
        print(f"warning: could not stop the test cluster: {exc}", file=sys.stderr)


def _require_driver() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise PgUnavailable(f"{exc}: pip install 'histcore[postgres]'") from exc


_server: PgServer | None = None
_failure: str | None = None


def pg_server() -> PgServer:
    """The server for this test run (found or started once); PgUnavailable if none."""
    global _server, _failure
    if _server is not None:
        return _server
    if _failure is not None:
        raise PgUnavailable(_failure)
    try:
        dsn = os.environ.get("HISTCORE_PG_DSN", "").strip()
        if dsn:
            server = PgServer(dsn, os.environ.get("HISTCORE_PG_DIR", "").strip() or None)
        else:
            _require_driver()
            server = _start_cluster()
        _check_connects(server.dsn)
    except PgUnavailable as exc:
        _failure = str(exc)
        raise
    _server = server
    return server


def require_psycopg() -> None:
    """psycopg and psycopg-pool (the postgres extra), or end the test: skipped locally,
    failed when CI is set."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        if in_ci():
            pytest.fail(f"the postgres extra is required when CI is set: {exc}", pytrace=False)
        pytest.skip(f"the postgres extra is not installed: {exc}")


def require_pg() -> PgServer:
    """The server, or end the test: skipped locally, failed when CI is set."""
    try:
        return pg_server()
    except PgUnavailable as exc:
        if in_ci():
            pytest.fail(f"PostgreSQL is required when CI is set: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL is unavailable: {exc}")


@contextmanager
def private_pg_server() -> Iterator[PgServer]:
    """A cluster of its own for one test (a few seconds to make), stopped after it:
    for a test that restarts its server, while other tests (and other pytest-xdist
    workers) go on using the shared one. Skips or fails as ``require_pg`` does."""
    require_pg()
    try:
        server = _new_cluster()
    except PgUnavailable as exc:
        _no_private_server(exc)
    assert server.cluster_dir is not None
    try:
        # Inside the try: a cluster that started but takes no connection is stopped too.
        try:
            _check_connects(server.dsn)
        except PgUnavailable as exc:
            _no_private_server(exc)
        yield server
    finally:
        _stop_quietly(server.cluster_dir)


def _no_private_server(exc: PgUnavailable) -> NoReturn:
    message = f"a private PostgreSQL cluster could not start: {exc}"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def unique(prefix: str) -> str:
    """A name no other test (or earlier run against the same server) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


async def pg_execute(
    sql: str, params: tuple[Any, ...] = (), *, dsn: str | None = None
) -> list[tuple[Any, ...]]:
    """Run one statement on a connection of its own (autocommit) to ``dsn`` (default:
    the shared server); its rows, if any."""
    import psycopg

    target = pg_server().dsn if dsn is None else dsn
    async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
        cursor = await conn.execute(sql, params)
        return await cursor.fetchall() if cursor.description else []


# --- sessions and stores of every backend ---------------------------------------------------


class ListSession:
    """A third-party session: only the protocol's members, over a plain list of items
    (``items``) that it hands out as they are, stored objects included."""

    session_id = "third"
    session_settings = None

    def __init__(self, items: list[Any] | None = None) -> None:
        self.items: list[Any] = [] if items is None else items

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return self.items if not limit else self.items[-limit:]

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


class Backends:
    """Makes sessions and RunState stores of one backend for one test, and closes them.

    Sessions of one ``Backends`` with the same ``session_id`` share their data (memory:
    the same object), as separate workers on one database would.
    """

    def __init__(self, name: str, tmp_path: Path, server: PgServer | None = None) -> None:
        self.name = name
        self._tmp_path = tmp_path
        self._memory: dict[str, MemorySession] = {}
        self._closers: list[Any] = []
        self.tables = unique("t")
        if name == "postgres":
            self.dsn = (server or require_pg()).dsn

    @property
    def durable(self) -> bool:
        """Whether separate session objects share one store (not so in memory)."""
        return self.name != "memory"

    def session(
        self,
        session_id: str = "s1",
        session_settings: SessionSettings | None = None,
        **options: Any,
    ) -> SessionABC:
        if self.name == "memory":
            if session_id not in self._memory:
                self._memory[session_id] = MemorySession(session_id, session_settings, **options)
            return self._memory[session_id]
        if self.name == "sqlite":
            sqlite = SQLiteSession(
                session_id,
                self._tmp_path / "sessions.db",
                session_settings=session_settings,
                **options,
            )
            self._closers.append(sqlite.close)
            return sqlite
        from histcore.sessions.postgres import PostgresSession

        postgres = PostgresSession(
            session_id,
            self.dsn,
            sessions_table=f"{self.tables}_sessions",
            messages_table=f"{self.tables}_messages",
            session_settings=session_settings,
            **options,
        )
        self._closers.append(postgres.close)
        return postgres

    def state_store(self) -> RunStateStore:
        if self.name == "memory":
            return MemoryRunStateStore()
        if self.name == "sqlite":
            store = SQLiteRunStateStore(self._tmp_path / "states.db")
            self._closers.append(store.close)
            return store
        from histcore.state_store import PostgresRunStateStore

        return PostgresRunStateStore(self.dsn, table=f"{self.tables}_states")

    async def aclose(self) -> None:
        for close in reversed(self._closers):
            close()
        if self.name == "postgres":
            from histcore.sessions.postgres import close_pools

            await close_pools()
            # Leave a server given by HISTCORE_PG_DSN as it was found.
            kinds = (
                "messages",
                "sessions",
                "sessions_revisions",
                "sessions_op_ids",
                "sessions_archive",
                "sessions_writes",
                "states",
                "states_versions",
            )
            tables = ", ".join(f"{self.tables}_{kind}" for kind in kinds)
            await pg_execute(f"DROP TABLE IF EXISTS {tables}", dsn=self.dsn)


@asynccontextmanager
async def backends(
    name: str, tmp_path: Path, server: PgServer | None = None
) -> AsyncIterator[Backends]:
    """Sessions and stores of backend ``name`` (PostgreSQL: on ``server``, default the
    shared one), closed and their tables dropped at the end."""
    made = Backends(name, tmp_path, server)
    try:
        yield made
    finally:
        await made.aclose()
