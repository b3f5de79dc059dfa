"""Memory of writes: a session holds little of what was written to it, and a large batch
is encoded and inserted a chunk at a time, still all or nothing.

The memory tests measure resident memory (RSS, which counts the Rust engine's,
orjson's and SQLite's allocations too) in a child process of their own, so nothing
another test allocated counts. The bounds are several times what the sessions need and
far below what holding each item's encoder output would cost (several KiB an item).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import histcore
from histcore.sessions import MemorySession, SQLiteSession
from histcore.testing import generate_history

needs_proc = pytest.mark.skipif(
    not os.path.exists("/proc/self/status"), reason="reads RSS from /proc/self/status"
)


def child_env() -> dict[str, str]:
    """Environment for a child Python that imports this very histcore."""
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


_MEASURE = textwrap.dedent(
    """
    import asyncio, gc, json, sys
    from histcore.testing import generate_history
    from histcore.sessions import MemorySession, SQLiteSession

    def status():
        values = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(value.split()[0]) * 1024
        return values

    def reset_peak():
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    kind, path, items, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    history = generate_history(items) if calls == 1 else None

    async def main():
        if kind == "memory":
            session = MemorySession("s")
        else:
            session = SQLiteSession("s", path)
            await session.get_items()  # the session keeps a history cache from here on
        gc.collect()
        base = status()["VmRSS"]
        peak_known = reset_peak()
        if calls == 1:
            await session.add_items(history)
        else:
            per = items // calls
            for call in range(calls):
                await session.add_items(generate_history(per, seed=call))
        peak = status()["VmHWM"] if peak_known else None
        gc.collect()
        await asyncio.sleep(0.05)  # a deferred WAL checkpoint
        retained = status()["VmRSS"] - base
        count = len(session) if kind == "memory" else None
        print(json.dumps({"peak": None if peak is None else peak - base,
                          "retained": retained, "count": count}))
        if kind != "memory":
            session.close()

    asyncio.run(main())
    """
)


def measure(kind: str, path: Path, items: int, calls: int) -> dict[str, Any]:
    """Peak and retained RSS (bytes above the RSS before) of writing ``items``
    generated items in ``calls`` add_items calls, in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, kind, str(path), str(items), str(calls)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@needs_proc
def test_a_session_written_to_and_not_read_holds_little_of_it(tmp_path: Path) -> None:
    # 4*10^4 items (~21 MB of JSON) in 100 calls, after one read (the history cache
    # exists). Keeping every item's text (with orjson's buffer, ~4 KiB each) held
    # ~5 KiB an item; the SDK's session holds a few MB whatever was written.
    items = 40_000
    result = measure("sqlite", tmp_path / "s.db", items, calls=100)
    assert result["retained"] <= 600 * items, result  # 24 MB
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == items


@needs_proc
def test_one_large_write_peaks_far_below_its_encoder_output(tmp_path: Path) -> None:
    # 4*10^4 items (~21 MB of JSON) in one call: encoded a chunk at a time, the write
    # holds one chunk's text at once (~20 MB above the start in all, most of it fixed
    # costs). Encoding the whole batch first peaked at ~5 KiB an item (orjson's
    # buffers, and the engine's copy made by the plain-data check).
    items = 40_000
    result = measure("sqlite", tmp_path / "s.db", items, calls=1)
    if result["peak"] is not None:
        assert result["peak"] <= 1_000 * items, result  # 40 MB
    assert result["retained"] <= 1_000 * items, result


@needs_proc
def test_a_memory_session_holds_its_texts_right_sized(tmp_path: Path) -> None:
    # The texts it keeps are ~530 bytes an item; orjson's results as they come hold a
    # buffer of ~4 KiB each.
    items = 40_000
    result = measure("memory", tmp_path / "unused", items, calls=1)
    assert result["count"] == items
    assert result["retained"] <= 1_500 * items, result  # 60 MB


# --- chunked writes stay all or nothing -------------------------------------------------


def small(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"m{index}"} for index in range(start, start + count)]


async def test_a_refused_item_in_a_later_chunk_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteSession("s", path) as session:
        await session.add_items(small(3))
        before = await session.get_items()  # the cache now holds the three
        batch = small(10_000, start=3)
        batch[9_000] = {"role": "user", "content": {1, 2}}  # a set: refused
        with pytest.raises(TypeError, match=r"items\[9000\]"):
            await session.add_items(batch)
        assert await session.get_items() == before
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 3
        # The session goes on as before.
        await session.add_items(small(2, start=100))
        assert await session.get_items() == before + small(2, start=100)
    with SQLiteSession("s", path) as fresh:
        assert await fresh.get_items() == before + small(2, start=100)


async def test_a_refused_item_in_a_later_chunk_of_a_fresh_session(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteSession("s", path) as session:
        batch = small(5_000)
        batch[-1] = {"role": "user", "content": float("nan"), "x": object()}
        with pytest.raises(TypeError, match=r"items\[4999\]"):
            await session.add_items(batch)
        assert await session.get_items() == []
        assert await session.pop_item() is None


async def test_a_memory_session_refusing_a_later_chunk_keeps_nothing() -> None:
    session = MemorySession("s")
    batch = small(5_000)
    batch[4_500] = {"role": "user", "content": b"bytes"}
    with pytest.raises(TypeError, match=r"items\[4500\]"):
        await session.add_items(batch)
    assert len(session) == 0


# --- what the cache keeps of appended rows ----------------------------------------------


async def test_reads_after_many_writes_and_large_ones_return_everything(tmp_path: Path) -> None:
    # Small writes (their texts kept for the next read), then enough to drop the kept
    # texts (the next read fetches the rows), then both again, with reads, pops and
    # another session writing in between.
    path = tmp_path / "s.db"
    history = generate_history(6_000)
    expected: list[Any] = []
    with SQLiteSession("s", path) as session, SQLiteSession("s", path) as other:
        assert await session.get_items() == []
        for start in range(0, 200, 20):  # kept texts
            await session.add_items(history[start : start + 20])
            expected += history[start : start + 20]
        assert await session.get_items() == expected
        for start in range(200, 4_000, 400):  # past the bound: fetched back
            await session.add_items(history[start : start + 400])
            expected += history[start : start + 400]
        assert await session.get_items(limit=5) == expected[-5:]
        assert await session.get_items() == expected
        await session.add_items(history[4_000:4_010])  # kept again
        expected += history[4_000:4_010]
        await session.add_items(history[4_010:5_000])  # dropped
        expected += history[4_010:5_000]
        assert await session.pop_item() == expected.pop()
        await other.add_items(history[5_000:5_100])  # another connection
        expected += history[5_000:5_100]
        await session.add_items(history[5_100:6_000])
        expected += history[5_100:6_000]
        assert await session.get_items() == expected
    with SQLiteSession("s", path) as fresh:
        assert await fresh.get_items() == expected


async def test_rows_removed_by_another_connection_before_the_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    history = generate_history(3_000)
    with SQLiteSession("s", path) as session:
        await session.get_items()
        await session.add_items(history)  # too much to keep: read back by the next read
        with closing(sqlite3.connect(path)) as conn, conn:  # closed, after the commit
            conn.execute("DELETE FROM agent_messages WHERE id > 2990")
        assert await session.get_items() == history[:2990]
