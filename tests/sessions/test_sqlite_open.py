"""How a SQLiteSession opens its file: not in the constructor but on first use, in a
worker thread (a locked file never stalls the event loop), and read-only when the file
cannot be written (reads work, writes fail with a clear SessionError)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import histcore
from histcore.exceptions import SessionError
from histcore.sessions import SQLiteSession
from tests.support.sqlite import connected, no_file_left_open, query, write_junk


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


ITEMS = [user("a"), user("b")]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


async def write(path: Path, items: list[Any], journal_mode: str = "wal") -> None:
    """A store holding ``items`` in session 's', left in ``journal_mode``."""
    with SQLiteSession("s", path) as session:
        await session.add_items(items)
    if journal_mode != "wal":
        with connected(path) as conn:
            conn.execute(f"PRAGMA journal_mode={journal_mode}")


@contextmanager
def holding_the_write_lock(path: Path) -> Iterator[None]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


class Ticker:
    """Counts the event loop's turns while it runs, to show the loop was never stalled."""

    def __init__(self) -> None:
        self.ticks = 0
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            self.longest = max(self.longest, time.monotonic() - before)
            self.ticks += 1

    def __enter__(self) -> Ticker:
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


# --- opening off the event loop ------------------------------------------------------------


def test_construction_opens_nothing(db: Path) -> None:
    session = SQLiteSession("s", db)
    assert not db.exists()
    session.close()
    assert not db.exists()


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
async def test_a_locked_file_never_stalls_the_event_loop(db: Path, journal_mode: str) -> None:
    await write(db, ITEMS, journal_mode)
    with holding_the_write_lock(db):
        started = time.monotonic()
        session = SQLiteSession("s", db, busy_timeout=1.0)
        assert time.monotonic() - started < 0.25  # it used to wait the busy timeout here
        with Ticker() as ticker:
            if journal_mode == "wal":
                # A WAL file with the tables is read without the write lock ...
                assert await session.get_items() == ITEMS
            # ... and whatever waits for the lock does so in a worker thread.
            with pytest.raises(SessionError, match="locked"):
                await session.add_items([user("c")])
            with (
                SQLiteSession("s", db, busy_timeout=0.5) as other,
                pytest.raises(SessionError, match="locked"),
            ):
                await other.pop_item()
        assert ticker.ticks >= 10 and ticker.longest < 0.5, (ticker.ticks, ticker.longest)  # noqa: PT018
        session.close()
    with SQLiteSession("s", db) as after:
        assert await after.get_items() == ITEMS


async def test_an_open_that_failed_is_tried_again(db: Path) -> None:
    await write(db, ITEMS, "delete")
    session = SQLiteSession("s", db, busy_timeout=0.2)
    with holding_the_write_lock(db), pytest.raises(SessionError, match="cannot open"):
        await session.get_items()
    assert await session.get_items() == ITEMS
    session.close()


async def test_open_errors_come_from_the_first_operation(db: Path) -> None:
    missing = SQLiteSession("s", db.parent / "missing" / "dir" / "x.db")
    with pytest.raises(SessionError, match="cannot open SQLite session store"):
        await missing.get_items()
    missing.close()
    write_junk(db)
    with no_file_left_open():
        junk = SQLiteSession("s", db)
        with pytest.raises(SessionError, match="file is not a database"):
            await junk.add_items([user("a")])
        junk.close()


# --- read-only databases -------------------------------------------------------------------


async def test_a_file_uri_with_mode_ro_is_read_only(db: Path) -> None:
    await write(db, ITEMS)
    with SQLiteSession("s", f"file:{db}?mode=ro") as session:
        assert await session.get_items() == ITEMS
        assert await session.get_items(1) == ITEMS[-1:]
        for name, operation in (
            ("add_items", session.add_items([user("c")])),
            ("pop_item", session.pop_item()),
            ("clear_session", session.clear_session()),
        ):
            with pytest.raises(SessionError, match=f"{name} failed: .* is read-only"):
                await operation
        assert await session.get_items() == ITEMS
    assert query(db, "SELECT COUNT(*) FROM agent_messages") == [(2,)]


async def test_a_read_only_database_without_the_tables_is_a_clear_error(db: Path) -> None:
    with connected(db) as conn:
        conn.execute("CREATE TABLE other (x)")
    with SQLiteSession("s", f"file:{db}?mode=ro") as session:
        with pytest.raises(SessionError, match=r"read-only.*agent_messages"):
            await session.get_items()


CHILD = """
import asyncio, json, os, sys
from histcore.exceptions import SessionError
from histcore.sessions import SQLiteSession

path, probe = sys.argv[1], sys.argv[2]
try:
    open(probe, "ab").close()
except PermissionError:
    pass
else:
    print(json.dumps({"enforced": False}))
    sys.exit(0)


async def main():
    result = {"enforced": True, "errors": {}}
    with SQLiteSession("s", path) as session:
        result["items"] = await session.get_items()
        result["latest"] = await session.get_items(1)
        for name, operation in (
            ("add_items", lambda: session.add_items([{"role": "user", "content": "c"}])),
            ("pop_item", session.pop_item),
            ("clear_session", session.clear_session),
        ):
            try:
                await operation()
            except SessionError as exc:
                result["errors"][name] = str(exc)
        result["after"] = await session.get_items()
    print(json.dumps(result))


asyncio.run(main())
"""

# Root writes any file whatever its mode: the child runs without that privilege.
_UNPRIVILEGED = [
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search",
    "--inh-caps=-dac_override,-dac_read_search",
]


def run_without_write_permission(path: Path, probe: Path) -> dict[str, Any]:
    """Run ``CHILD`` on ``path`` as a process that file permissions apply to."""
    command = [sys.executable, "-c", CHILD, str(path), str(probe)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        command = _UNPRIVILEGED + command
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0 and os.geteuid() == 0 and "setpriv" in done.stderr:
        pytest.skip(f"setpriv cannot drop privileges here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    if not result["enforced"]:
        pytest.skip("file permissions are not enforced for this process")
    return result


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
@pytest.mark.parametrize("where", ["file", "directory"])
async def test_a_database_that_cannot_be_written_is_opened_read_only(
    tmp_path: Path, journal_mode: str, where: str
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "sessions.db"
    await write(path, ITEMS, journal_mode)
    read_only = path if where == "file" else folder
    mode = read_only.stat().st_mode
    read_only.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        probe = path if where == "file" else folder / "probe"
        result = run_without_write_permission(path, probe)
    finally:
        read_only.chmod(mode)
    assert result["items"] == ITEMS
    assert result["latest"] == ITEMS[-1:]
    assert result["after"] == ITEMS
    assert set(result["errors"]) == {"add_items", "pop_item", "clear_session"}
    for name, message in result["errors"].items():
        assert f"{name} failed" in message and "read-only" in message, message  # noqa: PT018
    assert query(path, "SELECT COUNT(*) FROM agent_messages") == [(2,)]
