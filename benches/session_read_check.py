"""What the SQLite freshness checks (``sessions/_sqlite_freshness``) cost, against a read
and an installed turn.

    python benches/session_read_check.py --items 100000 --rounds 5

builds an SDK store of ``--items`` generated items, then times in CPU seconds (the
process's, so that other load on the machine counts less): each check a read makes
when the database changed (the count, the newest row, the schema version, the rewrite
generation, the file's identity, every row's ``Digest``, and for scale
``sum(length(CAST(message_data AS BLOB)))`` and the SDK's query without decoding);
histcore's ``SQLiteStore.read`` with nothing changed and after another connection's
append, with the check's own time within it; and (unless ``--skip-turns``) ``--rounds``
installed turns of the bench's conversation (``histcore.cli.bench.sdk_conversation``,
one session object, a warm turn first) without and with
``HISTCORE_CHECK_SESSION_ROWS=1``. Needs a release build for the turn to mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

from agents import SQLiteSession

import histcore.openai_agents as accelerator
from histcore.cli.bench import sdk_conversation as bench
from histcore.openai_agents import _session_read as session_read
from histcore.openai_agents.testing import SDKScriptedModel
from histcore.sessions import _sqlite_freshness as freshness
from histcore.sessions._sqlite_schema import rewrite_generation
from histcore.sessions._sqlite_store import SQLiteStore


def cpu_ms(call: Callable[[], Any]) -> float:
    start = time.process_time()
    call()
    return (time.process_time() - start) * 1e3


def cpu_us_each(call: Callable[[], Any], repeat: int = 2000) -> float:
    """CPU microseconds per call of a call too quick to time alone."""
    start = time.process_time()
    for _ in range(repeat):
        call()
    return (time.process_time() - start) * 1e6 / repeat


def queries(store: str, rounds: int) -> None:
    with closing(sqlite3.connect(store)) as conn:
        (last,) = conn.execute("SELECT MAX(id) FROM agent_messages").fetchone()
        where = "FROM agent_messages WHERE session_id = ? AND id <= ?"
        params = (bench.SESSION_ID, last)

        def digest() -> int:
            rows = freshness.Digest()
            rows.read(conn.execute(f"SELECT {freshness.ROW} {where} ORDER BY id", params))
            return rows.value

        cases: dict[str, Callable[[], Any]] = {
            "count": lambda: conn.execute(f"SELECT COUNT(*) {where}", params).fetchone(),
            "newest row": lambda: conn.execute(
                f"SELECT {freshness.ROW} {where} ORDER BY id DESC LIMIT 1", params
            ).fetchone(),
            "every row (_Digest)": digest,
            "sum(length(CAST AS BLOB))": lambda: conn.execute(
                f"SELECT sum(length(CAST(message_data AS BLOB))) {where}", params
            ).fetchone(),
            "SDK query, no decoding": lambda: conn.execute(
                "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id ASC",
                (bench.SESSION_ID,),
            ).fetchall(),
        }
        for name, call in cases.items():
            samples = sorted(cpu_ms(call) for _ in range(max(rounds, 5)))
            median = statistics.median(samples)
            print(f"{name:28s} min {samples[0]:8.2f} ms  median {median:8.2f} ms")
        name = freshness.database_file(conn)
        quick: dict[str, Callable[[], Any]] = {
            "newest row": lambda: freshness.newest_row(
                conn, "agent_messages", bench.SESSION_ID, last
            ),
            "schema version": lambda: conn.execute("PRAGMA schema_version").fetchone(),
            "rewrite generation": lambda: rewrite_generation(
                conn, "agent_messages", bench.SESSION_ID
            ),
            "file identity (os.stat)": lambda: freshness.file_identity(name),
        }
        for name_, call in quick.items():
            each = statistics.median(cpu_us_each(call) for _ in range(5))
            print(f"{name_:28s} {each:8.2f} us a call")


def store_reads(store: str, rounds: int) -> None:
    """histcore's store: a read with nothing changed, and one after another connection
    appended a row (the check, then the one new row), with the check's time within."""
    spent: list[float] = []
    real = freshness.unchanged

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            spent.append(time.process_time() - start)

    freshness.unchanged = timed  # type: ignore[assignment]
    reader = SQLiteStore(bench.SESSION_ID, store, "agent_sessions", "agent_messages", 5.0, True)
    try:
        with closing(sqlite3.connect(store, isolation_level=None)) as other:
            reader.read(None)
            unchanged, changed, checks = [], [], []
            for _ in range(max(rounds, 5)):
                unchanged.append(cpu_ms(lambda: reader.read(None)))
                other.execute(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                    (bench.SESSION_ID, '{"role":"user","content":"more"}'),
                )
                spent.clear()
                changed.append(cpu_ms(lambda: reader.read(None)))
                checks.append(sum(spent) * 1e3)
    finally:
        reader.close()
        freshness.unchanged = real  # type: ignore[assignment]
    print(
        f"SQLiteStore.read: unchanged {statistics.median(unchanged):.2f} ms, after another "
        f"connection's append {statistics.median(changed):.2f} ms (its check "
        f"{statistics.median(checks):.3f} ms)"
    )


def turns(store: str, rounds: int) -> None:
    spent: list[float] = []
    real = freshness.unchanged

    def timed(*args: Any) -> Any:
        start = time.process_time()
        try:
            return real(*args)
        finally:
            spent.append(time.process_time() - start)

    freshness.unchanged = timed  # type: ignore[assignment]
    results: dict[str, list[tuple[float, float]]] = {"0": [], "1": []}
    for round_ in range(rounds):
        for check, samples in results.items():
            os.environ[session_read.CHECK_ROWS_VARIABLE] = check
            accelerator.uninstall()
            accelerator.install()
            session = SQLiteSession(bench.SESSION_ID, store)
            try:
                warm = SDKScriptedModel(record=False, id_prefix=f"warm{round_}-{check}_")
                asyncio.run(bench.run_turn(store, "Lima", warm, session=session))
                gc.collect()
                spent.clear()
                model = SDKScriptedModel(record=False, id_prefix=f"turn{round_}-{check}_")
                start = time.process_time()
                asyncio.run(bench.run_turn(store, "Paris", model, session=session))
                turn = (time.process_time() - start) * 1e3
            finally:
                session.close()
            samples.append((turn, sum(spent) * 1e3))
    accelerator.uninstall()
    for check, samples in results.items():
        turn = statistics.median(t for t, _ in samples)
        own = statistics.median(c for _, c in samples)
        print(
            f"{session_read.CHECK_ROWS_VARIABLE}={check}: installed turn {turn:.0f} ms CPU, "
            f"its freshness check {own:.1f} ms ({own / turn:.1%})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-turns", action="store_true", help="no installed turns")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = os.path.join(directory, "store.db")
        bench.build_store(store, args.items)
        queries(store, args.rounds)
        store_reads(store, args.rounds)
        if not args.skip_turns:
            turns(store, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
