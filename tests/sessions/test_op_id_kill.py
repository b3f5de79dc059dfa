"""A writer killed with SIGKILL, then its op retried: each op is stored once.

The op id is stored in the same transaction as its rows, so a client that dies after
the commit but before it heard of it (the acknowledgement lost) retries safely, and one
that dies in the middle of the transaction left nothing to skip. Both on SQLite and on
PostgreSQL, through a real process killed by the operating system.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import histcore
from tests.support.pg import Backends, backends

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

# Applies the ops named on its command line in order, printing each op id once its
# add_items returned; with "hold" it then sleeps instead of exiting: the commit is
# done and nobody has been told (the parent kills it there).
CHILD = """
import asyncio, sys, time
from histcore.sessions import SQLiteSession

async def main(kind, where, tables, hold, ops):
    if kind == "sqlite":
        session = SQLiteSession("killed", where)
    else:
        from histcore.sessions.postgres import PostgresSession
        session = PostgresSession(
            "killed", where, sessions_table=tables + "_sessions",
            messages_table=tables + "_messages",
        )
    for op in ops:
        await session.add_items(
            [{"role": "user", "content": op + "/a"}, {"role": "user", "content": op + "/b"}],
            op_id=op,
        )
        if hold == "hold":
            time.sleep(600)
        print(op, flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
"""


@pytest.fixture(params=["sqlite", "postgres"])
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


def _start(made: Backends, hold: bool, ops: list[str]) -> subprocess.Popen[str]:
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    path = [package_root, os.environ.get("PYTHONPATH", "")]
    where = str(made._tmp_path / "sessions.db") if made.name == "sqlite" else made.dsn
    mode = "hold" if hold else "go"
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, made.name, where, made.tables, mode, *ops],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)},
    )


def _end(child: subprocess.Popen[str]) -> str:
    """Kill ``child`` unless it ended by itself; what it printed that was not read yet
    (its pipes closed). Read through the same buffered readers the test's ``readline``
    used: ``communicate`` reads the pipes underneath them, and would lose lines already
    buffered there."""
    assert child.stdout is not None
    assert child.stderr is not None
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    with child.stdout, child.stderr:
        out = child.stdout.read()
        errors = child.stderr.read()
    child.wait(timeout=30)
    assert child.returncode in (0, -signal.SIGKILL), errors
    return out


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


def expected(ops: list[str]) -> list[str]:
    return [text for op in ops for text in (op + "/a", op + "/b")]


async def test_a_client_killed_after_its_commit_retries_and_stores_once(
    durable: Backends,
) -> None:
    reader = durable.session("killed")
    await reader.clear_session()  # the tables exist before the child writes
    child = _start(durable, True, ["op-1"])
    try:
        deadline = time.monotonic() + 60
        while texts(await reader.get_items()) != expected(["op-1"]):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child's write never became visible"
            await asyncio.sleep(0.02)
    finally:
        out = _end(child)
    assert child.returncode == -signal.SIGKILL
    assert out == ""  # the commit was never acknowledged
    revision = await reader.revision()
    # The client's retry after the lost acknowledgement: nothing more is stored.
    retry = durable.session("killed")
    await retry.add_items([{"role": "user", "content": "op-1/a"}], op_id="op-1")
    assert texts(await retry.get_items()) == expected(["op-1"])
    assert await retry.revision() == revision
    await retry.add_items([{"role": "user", "content": "next"}], op_id="op-2")
    assert texts(await reader.get_items()) == [*expected(["op-1"]), "next"]


async def test_clients_killed_at_any_point_then_retried_store_every_op_once(
    durable: Backends,
) -> None:
    reader = durable.session("killed")
    await reader.clear_session()
    ops = [f"op-{number}" for number in range(400)]
    rng = random.Random(7)
    acknowledged: list[str] = []
    for _ in range(4):
        # A writer from the first op not yet acknowledged, killed a random moment after
        # a random number of acknowledged ops: between two commits, or inside one.
        child = _start(durable, False, ops[len(acknowledged) :])
        assert child.stdout is not None
        for _ in range(rng.randint(1, 5)):
            line = await asyncio.to_thread(child.stdout.readline)
            assert line, f"the writer ended early: {_end(child)!r}"
            acknowledged.append(line.strip())
        await asyncio.sleep(rng.uniform(0, 0.01))
        acknowledged.extend(_end(child).split())
        assert child.returncode == -signal.SIGKILL, "the writer ended before it was killed"
        stored = texts(await reader.get_items())
        # What was acknowledged is stored, in order, and at most one op more (the one
        # in flight) may be stored without its acknowledgement.
        assert stored[: 2 * len(acknowledged)] == expected(acknowledged)
        assert len(stored) - 2 * len(acknowledged) in (0, 2)
    # The retry of everything not acknowledged, as a client would after a crash.
    retry = durable.session("killed")
    for op in ops[len(acknowledged) :]:
        await retry.add_items(
            [{"role": "user", "content": op + "/a"}, {"role": "user", "content": op + "/b"}],
            op_id=op,
        )
    assert texts(await reader.get_items()) == expected(ops)
