"""Many writers on one SQLite file, and a writer killed in the middle of a batch."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import histcore
from histcore.sessions import SQLiteSession
from tests.support.sqlite import query

PROCESSES = 4
THREADS = 4
BATCHES = 20

# One writer process: THREADS threads, each with its own event loop. Threads 0 and 1
# share one session object (so its lock is exercised), threads 2 and 3 have their own.
# Writer (p, t) appends items {"writer": "p<p>t<t>", "seq": k} in batches of 1-7 to
# session "s<t % 2>", reading the session back between batches.
WRITER = """
import asyncio, random, sys, threading
from histcore.sessions import SQLiteSession

path, process, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
shared = SQLiteSession("s0", path)
errors = []

def run(thread):
    async def main():
        session = shared if thread < 2 else SQLiteSession(f"s{thread % 2}", path)
        rng = random.Random(process * 10 + thread)
        seq = 0
        for _ in range(batches):
            size = rng.randint(1, 7)
            batch = [
                {"role": "user", "content": "x", "writer": f"p{process}t{thread}", "seq": seq + i}
                for i in range(size)
            ]
            seq += size
            await session.add_items(batch)
            await session.get_items(5)
        if session is not shared:
            session.close()
    try:
        asyncio.run(main())
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
for t in threads: t.start()
for t in threads: t.join()
shared.close()
if errors:
    sys.exit("\\n".join(errors))
"""

# Writes one large batch; prints BEGIN when its write transaction starts.
KILLED_WRITER = """
import asyncio, sys
from histcore.sessions import SQLiteSession

path, size = sys.argv[1], int(sys.argv[2])

async def main():
    session = SQLiteSession("victim", path)
    await session.add_items([{"role": "user", "content": "before"}])
    def trace(statement):
        if statement.startswith("BEGIN IMMEDIATE"):
            print("BEGIN", flush=True)
    session._store._conn.set_trace_callback(trace)
    batch = [{"role": "user", "content": f"item {i} " + "x" * 200} for i in range(size)]
    await session.add_items(batch)
    print("DONE", flush=True)

asyncio.run(main())
"""


def child_env() -> dict[str, str]:
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def check_writer_order(items: list[dict[str, Any]]) -> dict[str, int]:
    """Each writer's items appear complete and in its own order; returns counts."""
    by_writer: dict[str, list[int]] = defaultdict(list)
    for item in items:
        by_writer[item["writer"]].append(item["seq"])
    for writer, seqs in by_writer.items():
        assert seqs == list(range(len(seqs))), f"{writer} lost or reordered items"
    return {writer: len(seqs) for writer, seqs in by_writer.items()}


async def test_processes_and_threads_lose_no_item(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    SQLiteSession("s0", db).close()  # create the file once, as an application would
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(process), str(BATCHES)],
            env=child_env(),
            stderr=subprocess.PIPE,
        )
        for process in range(PROCESSES)
    ]
    # Meanwhile, an incremental reader keeps checking the invariant on partial data.
    with SQLiteSession("s1", db) as reader:
        while any(writer.poll() is None for writer in writers):
            check_writer_order(await reader.get_items())
            await asyncio.sleep(0.02)
        for writer in writers:
            _, stderr = writer.communicate()
            assert writer.returncode == 0, stderr.decode()
        seen_by_reader = await reader.get_items()

    counts: dict[str, int] = {}
    for session_id in ("s0", "s1"):
        with SQLiteSession(session_id, db) as session:
            counts.update(check_writer_order(await session.get_items()))
    assert len(counts) == PROCESSES * THREADS
    expected_total = 0
    for process in range(PROCESSES):
        for thread in range(THREADS):
            rng = random.Random(process * 10 + thread)
            expected = sum(rng.randint(1, 7) for _ in range(BATCHES))
            assert counts[f"p{process}t{thread}"] == expected
            expected_total += expected
    assert sum(counts.values()) == expected_total
    with SQLiteSession("s1", db) as fresh:
        assert await fresh.get_items() == seen_by_reader


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15])
async def test_writer_killed_mid_batch_leaves_all_or_nothing(tmp_path: Path, delay: float) -> None:
    db = tmp_path / "crash.db"
    size = 60_000
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db), str(size)],
        env=child_env(),
        stdout=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == b"BEGIN\n", line
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
    assert child.returncode == -signal.SIGKILL

    ((count,),) = query(db, "SELECT COUNT(*) FROM agent_messages WHERE session_id = 'victim'")
    assert count in (1, 1 + size)
    if delay == 0.0:
        assert count == 1, "killed right after BEGIN, the batch cannot have committed"
    with SQLiteSession("victim", db) as session:
        items = await session.get_items()
        assert len(items) == count
        assert items[0] == {"role": "user", "content": "before"}
        await session.add_items([{"role": "user", "content": "after"}])
        assert (await session.get_items(1)) == [{"role": "user", "content": "after"}]
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
