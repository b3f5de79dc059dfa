"""What the installed SDK session read's freshness checks cost, against an installed turn.

    python benches/session_read_check.py --items 100000 --rounds 5

builds an SDK store of ``--items`` generated items, then times in CPU seconds (the
process's, so that other load on the machine counts less): each query of the checks a
read makes when the database changed (the count, the newest row, every row's
``_Digest``, and for scale ``sum(length(CAST(message_data AS BLOB)))`` and the SDK's
query without decoding), and ``--rounds`` installed turns of the bench's conversation
(``histcore.cli.bench.sdk_conversation``, one session object, a warm turn first)
without and with ``HISTCORE_CHECK_SESSION_ROWS=1``, with the check's own time within
each. Needs a release build for the turn to mean anything.
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


def cpu_ms(call: Callable[[], Any]) -> float:
    start = time.process_time()
    call()
    return (time.process_time() - start) * 1e3


def queries(store: str, rounds: int) -> None:
    with closing(sqlite3.connect(store)) as conn:
        (last,) = conn.execute("SELECT MAX(id) FROM agent_messages").fetchone()
        where = "FROM agent_messages WHERE session_id = ? AND id <= ?"
        params = (bench.SESSION_ID, last)

        def digest() -> int:
            rows = session_read._Digest()
            rows.read(conn.execute(f"SELECT {session_read._ROW} {where} ORDER BY id", params))
            return rows.value

        cases: dict[str, Callable[[], Any]] = {
            "count": lambda: conn.execute(f"SELECT COUNT(*) {where}", params).fetchone(),
            "newest row": lambda: conn.execute(
                f"SELECT {session_read._ROW} {where} ORDER BY id DESC LIMIT 1", params
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


def turns(store: str, rounds: int) -> None:
    spent: list[float] = []
    real = session_read._rows_unchanged

    def timed(*args: Any) -> Any:
        start = time.process_time()
        try:
            return real(*args)
        finally:
            spent.append(time.process_time() - start)

    session_read._rows_unchanged = timed  # type: ignore[assignment]
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = os.path.join(directory, "store.db")
        bench.build_store(store, args.items)
        queries(store, args.rounds)
        turns(store, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
