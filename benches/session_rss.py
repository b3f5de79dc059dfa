"""Resident memory (RSS) of session writes, reads and preparation: histcore and the SDK.

One measurement per process, so that nothing a previous one allocated (and the
allocator kept) counts::

    python benches/session_rss.py --impl histcore --op write --items 1000000
    python benches/session_rss.py --impl sdk --op write-many --items 200000 --calls 200
    python benches/session_rss.py --impl histcore --op read --items 100000 --db history.db

prints one JSON object: ``peak`` (the highest RSS during the operation, above the RSS
before it) and ``retained`` (RSS after it, the session still open and the result
dropped, above the RSS before it), in bytes, and ``seconds``. RSS counts what tracemalloc
misses (the Rust engine's, orjson's and SQLite's allocations). The peak is read from
``VmHWM`` after resetting it (``/proc/self/clear_refs``), so it is measured on Linux
only (elsewhere it is null).

Operations (``--impl histcore`` is ``histcore.sessions.SQLiteSession``, ``--impl sdk``
the OpenAI Agents SDK's ``agents.memory.SQLiteSession``):

* ``write``: one ``add_items`` of ``--items`` generated items to a new file; the items
  are generated before the measurement and kept by the caller throughout;
* ``write-many``: ``--calls`` ``add_items`` of ``--items / --calls`` items each to a new
  file, after one ``get_items`` of the empty session (as a turn's input preparation
  does) and with no read afterwards: what a session holds of what was written to it.
  Each call's items are generated just before it and dropped after it, as a caller's
  new items of a turn are;
* ``read``: ``get_items()`` of the history in ``--db`` by a new session;
* ``prepare``: ``prepare_input_with_session`` of one new user message with the history
  in ``--db`` (the SDK's ``agents.run_internal.session_persistence`` version for
  ``sdk``); nothing is persisted by it;
* ``turn`` (``--impl sdk`` or ``installed``, the SDK with
  ``histcore.openai_agents.install()``): one ``Runner.run`` of an SDK agent on a copy of
  the history in ``--db``, in the SDK's ``SQLiteSession``: a scripted model calls a
  tool, then answers (``histcore.openai_agents.testing.SDKScriptedModel``).

``--db`` for ``read`` and ``prepare``: a file holding the history (``--make-db`` writes
one with ``--items`` generated items, in the SDK's tables, session ``bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SESSION_ID = "bench"
NEW_INPUT = "What changed since yesterday?"
OPERATIONS = ("write", "write-many", "read", "prepare", "turn")
IMPLEMENTATIONS = ("histcore", "sdk", "installed")


def _status() -> dict[str, int]:
    """VmRSS and VmHWM in bytes (empty where /proc is missing)."""
    values: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return values


def _rss() -> int:
    rss = _status().get("VmRSS")
    if rss is not None:
        return rss
    # No /proc (macOS): the peak so far is the best available (bytes on macOS).
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return "VmHWM" in _status()


def _classes(impl: str) -> tuple[Any, Any]:
    if impl == "installed":
        importlib.import_module("histcore.openai_agents").install()
    if impl == "histcore":
        sessions = importlib.import_module("histcore.sessions")
        return sessions.SQLiteSession, sessions.prepare_input_with_session
    memory = importlib.import_module("agents.memory")
    persistence = importlib.import_module("agents.run_internal.session_persistence")
    return memory.SQLiteSession, persistence.prepare_input_with_session


def _history(size: int, seed: int = 7) -> list[Any]:
    from histcore.testing import generate_history

    return generate_history(size, seed=seed)


def make_db(path: Path, items: int) -> None:
    """A file holding ``items`` generated items in session ``bench`` (SDK tables)."""
    from histcore.sessions import SQLiteSession

    with SQLiteSession(SESSION_ID, path) as session:
        asyncio.run(session.add_items(_history(items)))


def _turn() -> Any:
    """One SDK turn on a session: a tool call, then the answer."""
    agents = importlib.import_module("agents")
    model = importlib.import_module("histcore.openai_agents.testing").SDKScriptedModel()

    @agents.function_tool
    def lookup(city: str) -> str:
        return f"sunny in {city}"

    agent = agents.Agent(name="bench", model=model, tools=[lookup])

    async def turn(text: str, session: Any, _: Any) -> Any:
        return await agents.Runner.run(agent, text, session=session)

    return turn


def measure(impl: str, op: str, items: int, calls: int, db: Path | None) -> dict[str, Any]:
    if (op == "turn" and impl == "histcore") or (impl == "installed" and op != "turn"):
        raise SystemExit("--op turn takes --impl sdk or installed; installed is for turns only")
    session_class, prepare = _classes(impl)
    if op == "turn":
        prepare = _turn()
    history = _history(items) if op == "write" else None
    scratch = tempfile.mkdtemp(prefix="session_rss-")
    path = db if op in ("read", "prepare", "turn") else Path(scratch) / "written.db"
    if path is None:
        raise SystemExit(f"--op {op} needs --db")
    if op == "turn":  # the turn writes to its session: a copy of the history
        path = Path(shutil.copy(path, Path(scratch) / "turn.db"))

    async def run() -> dict[str, Any]:
        session = session_class(SESSION_ID, path)
        try:
            if op == "write-many":
                await session.get_items()
            gc.collect()
            base = _rss()
            peak_known = _reset_peak()
            started = time.perf_counter()
            result: Any = None
            if op == "write":
                await session.add_items(history)
            elif op == "write-many":
                per = max(1, items // calls)
                for call in range(calls):
                    batch = _history(per, seed=call)
                    await session.add_items(batch)
                    del batch
            elif op == "read":
                result = await session.get_items()
            else:
                result = await prepare(NEW_INPUT, session, None)
            seconds = time.perf_counter() - started
            peak = _status().get("VmHWM") if peak_known else None
            del result
            gc.collect()
            # Let the write's deferred WAL checkpoint (histcore) finish, as it would
            # between turns.
            await asyncio.sleep(0.05)
            retained = _rss() - base
            return {
                "impl": impl,
                "op": op,
                "items": items,
                "calls": calls if op == "write-many" else 1,
                "peak": None if peak is None else peak - base,
                "retained": retained,
                "seconds": round(seconds, 3),
            }
        finally:
            session.close()

    try:
        return asyncio.run(run())
    finally:
        for name in os.listdir(scratch):
            os.unlink(os.path.join(scratch, name))
        os.rmdir(scratch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", choices=IMPLEMENTATIONS)
    parser.add_argument("--op", choices=OPERATIONS)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--make-db", type=Path, help="write a history file and exit")
    args = parser.parse_args(argv)
    if args.make_db is not None:
        make_db(args.make_db, args.items)
        return 0
    if args.impl is None or args.op is None:
        parser.error("--impl and --op are required (or --make-db)")
    print(json.dumps(measure(args.impl, args.op, args.items, args.calls, args.db)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
