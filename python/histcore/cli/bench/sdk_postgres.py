"""PostgreSQL for ``histcore bench --openai-agents``: a server, and a schema per store copy.

The server is the database ``--scratch-dsn`` names, or else a throwaway cluster started
here with ``initdb`` and ``pg_ctl`` from PATH (as root, run as the unprivileged
``nobody`` through ``runuser``, since PostgreSQL refuses to run as root), listening on
127.0.0.1 at a free port, stopped and deleted afterwards (after SIGTERM too: the command
ends through every ``finally``). When neither is possible the PostgreSQL store kinds are
skipped with a one-line reason. Every store copy lives in a schema of its own
(``histcore_bench_<pid>_<n>``), dropped at the end: nothing else in a scratch database
is read or written.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import count

from histcore.cli.bench.signals import signals_held

__all__ = ["Server", "postgres_server"]

_ROLE = "histcore"
_DATABASE = "histcore_bench"
_START_TIMEOUT_SECONDS = 60


@dataclass
class Server:
    """A PostgreSQL database the bench may write to, or why there is none."""

    dsn: str | None
    reason: str | None = None
    _schemas: list[str] = field(default_factory=list)
    _numbers: Iterator[int] = field(default_factory=count)

    def new_schema(self) -> str:
        """A new empty schema's name (created now); dropped by ``drop_schemas``."""
        import psycopg

        assert self.dsn is not None
        name = f"histcore_bench_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            connection.execute(f"CREATE SCHEMA {name}")
        self._schemas.append(name)
        return name

    def drop_schemas(self) -> None:
        if self.dsn is None or not self._schemas:
            return
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as connection:
            for name in self._schemas:
                connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        self._schemas.clear()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


def _cannot_start() -> str | None:
    """Why no throwaway cluster can be started here, or None."""
    missing = [name for name in ("initdb", "pg_ctl") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH (give --scratch-dsn DSN)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as nobody"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "needs psycopg: pip install 'histcore[postgres]'"
    return None


def _run(command: list[str], log: str) -> None:
    with open(log, "a", encoding="utf-8") as out:
        subprocess.run(
            _as_owner(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=_START_TIMEOUT_SECONDS,
        )


@contextmanager
def _cluster(workdir: str | None) -> Iterator[Server]:
    reason = _cannot_start()
    if reason is not None:
        yield Server(None, reason)
        return
    top: str | None = None
    started = False
    try:
        # Signals wait until the folder and the server are made and recorded, so that the
        # ``finally`` removes them (a pg_ctl ended while it starts a server leaves it up).
        with signals_held():
            top = tempfile.mkdtemp(prefix="histcore-bench-pg-", dir=workdir)
            server, started = _start(top)
        yield server
    finally:
        if top is not None:
            if started:
                with suppress(OSError, subprocess.SubprocessError):  # the folder goes anyway
                    stop = ["pg_ctl", "-D", os.path.join(top, "data"), "-w", "-m", "immediate"]
                    _run([*stop, "stop"], os.path.join(top, "server.log"))
            shutil.rmtree(top, ignore_errors=True)


def _start(top: str) -> tuple[Server, bool]:
    """Make and start a cluster in the folder ``top``: its server, and whether it was
    started (a server that could not be made names why)."""
    data, log = os.path.join(top, "data"), os.path.join(top, "server.log")
    os.chmod(top, 0o755)  # nobody, who runs the server, must reach data/
    os.mkdir(data, 0o700)
    open(log, "w").close()
    if os.geteuid() == 0:
        shutil.chown(data, "nobody")
        shutil.chown(log, "nobody")
    started = False
    try:
        initdb = ["initdb", "-D", data, "-U", _ROLE, "--auth=trust", "--no-sync"]
        _run([*initdb, "--encoding=UTF8", "--no-locale"], log)
        port = _free_port()
        with open(os.path.join(data, "postgresql.auto.conf"), "a", encoding="utf-8") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {port}\n"
                "unix_socket_directories = ''\nfsync = off\n"
            )
        _run(["pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start"], log)
        started = True
        import psycopg

        admin = f"postgresql://{_ROLE}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {_DATABASE}")
        return Server(f"postgresql://{_ROLE}@127.0.0.1:{port}/{_DATABASE}"), True
    except Exception as exc:  # OSError, SubprocessError, ImportError, psycopg's errors
        return Server(None, f"could not start a throwaway PostgreSQL ({exc})"), started


@contextmanager
def postgres_server(dsn: str | None, wanted: bool, workdir: str | None = None) -> Iterator[Server]:
    """The server for the PostgreSQL store kinds (``wanted``: any was asked for)."""
    if not wanted:
        yield Server(None, "not asked for")
        return
    if dsn is not None:
        server = Server(dsn)
        try:
            yield server
        finally:
            server.drop_schemas()
        return
    with _cluster(workdir) as server:
        yield server
