"""PostgreSQL under pressure: many writer processes on shared sessions, a connection
killed in the middle of a batch, and the server restarted between two turns of a run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import histcore
from histcore.exceptions import SessionError
from histcore.runner.agent import Agent
from histcore.runner.run import Runner
from histcore.runner.tool import function_tool
from histcore.testing import (
    ScriptedModel,
    function_call,
    function_call_output,
    text_message,
    user_message,
)
from tests.support.pg import (
    Backends,
    PgServer,
    backends,
    pg_execute,
    private_pg_server,
    unique,
)

PROCESSES = 8
TASKS = 4
BATCHES = 12


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends("postgres", tmp_path) as made:
        yield made


# One writer process. argv: dsn, tables prefix, process number, tasks, batches, session
# ids (comma separated). It prints "ready", waits for a line on stdin, then runs its
# tasks: task t appends `batches` batches to session ids[(process + t) % len(ids)],
# each task through its own pooled connection; batch b holds b % 4 + 1 items.
WRITER = """
import asyncio, sys
from histcore.sessions.postgres import PostgresSession, close_pools

dsn, tables, process, tasks, batches, ids = sys.argv[1:7]
session_ids = ids.split(",")

async def task(number):
    session = PostgresSession(
        session_ids[(int(process) + number) % len(session_ids)], dsn,
        sessions_table=tables + "_sessions", messages_table=tables + "_messages",
        pool_max_size=int(tasks),
    )
    for batch in range(int(batches)):
        await session.add_items([
            {"role": "user", "content": f"{process}.{number}.{batch}.{item}"}
            for item in range(batch % 4 + 1)
        ])

async def main():
    await asyncio.gather(*(task(number) for number in range(int(tasks))))
    await close_pools()

print("ready", flush=True)
sys.stdin.readline()
asyncio.run(main())
"""


def _child_env() -> dict[str, str]:
    """The environment of a writer process: it imports this very histcore."""
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    path = [package_root, os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def _start_writers(pg: Backends, session_ids: list[str]) -> list[subprocess.Popen[str]]:
    args = [pg.dsn, pg.tables, "", str(TASKS), str(BATCHES), ",".join(session_ids)]
    writers = []
    for process in range(PROCESSES):
        args[2] = str(process)
        writers.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_child_env(),
            )
        )
    return writers


def _check_session(items: list[dict[str, Any]], writers: set[tuple[int, int]]) -> None:
    """Every writer's batches are whole, in its order, and nothing is lost or doubled."""
    tags = [tuple(int(part) for part in item["content"].split(".")) for item in items]
    assert len(set(tags)) == len(tags), "an item was stored twice"
    position = 0
    next_batch = {writer: 0 for writer in writers}
    while position < len(tags):
        process, task, batch, first = tags[position]
        assert (process, task) in writers and first == 0, f"a batch starts mid-way at {position}"  # noqa: PT018
        assert batch == next_batch[(process, task)], f"writer {process}.{task} out of order"
        size = batch % 4 + 1
        assert tags[position : position + size] == [
            (process, task, batch, item) for item in range(size)
        ], f"batch {process}.{task}.{batch} is split"
        next_batch[(process, task)] += 1
        position += size
    assert set(next_batch.values()) == {BATCHES}, "a writer's batches are missing"
    # The writers really ran side by side: their batches alternate in the session.
    starts = [tag[:2] for tag in tags if tag[3] == 0]
    switches = sum(1 for index in range(1, len(starts)) if starts[index] != starts[index - 1])
    assert switches >= len(writers), f"only {switches} changes of writer: no concurrency"


async def test_eight_processes_of_four_writers_lose_nothing_and_keep_order(pg: Backends) -> None:
    session_ids = ["shared-a", "shared-b"]
    # Tables and both session rows exist before the race starts.
    for session_id in session_ids:
        await pg.session(session_id).clear_session()
    writers = _start_writers(pg, session_ids)
    try:
        for writer in writers:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "ready"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        # Meanwhile a reader follows session a incrementally (only rows with ids past
        # the last one it read): every read must extend the previous one exactly.
        reader = pg.session("shared-a")
        uncached = pg.session("shared-a", cache_history=False)
        seen: list[Any] = []
        reads = 0
        while any(writer.poll() is None for writer in writers):
            for follower in (reader, uncached):
                now = await follower.get_items()
                assert now[: len(seen)] == seen, "a committed item appeared before a seen one"
                seen = now
                reads += 1
            await asyncio.sleep(0.005)
        for writer in writers:
            _, errors = writer.communicate(timeout=60)
            assert writer.returncode == 0, errors
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    assert reads > 2
    final = {session_id: await pg.session(session_id).get_items() for session_id in session_ids}
    assert await reader.get_items() == final["shared-a"]
    for index, session_id in enumerate(session_ids):
        writers_here = {
            (process, task)
            for process in range(PROCESSES)
            for task in range(TASKS)
            if (process + task) % len(session_ids) == index
        }
        _check_session(final[session_id], writers_here)
        per_writer = sum(batch % 4 + 1 for batch in range(BATCHES))
        assert len(final[session_id]) == len(writers_here) * per_writer


async def _backend_running(marker: str) -> int | None:
    rows = await pg_execute(
        "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
        "AND pid <> pg_backend_pid()",
        (f"%{marker}%",),
    )
    return rows[0][0] if rows else None


async def test_a_connection_killed_mid_batch_leaves_the_batch_absent(pg: Backends) -> None:
    session = pg.session("killed")
    await session.add_items([user_message("before")])
    batch = [user_message(f"m{n}") for n in range(100_000)]
    task = asyncio.ensure_future(session.add_items(batch))
    deadline = time.monotonic() + 30
    pid = None
    while pid is None and not task.done() and time.monotonic() < deadline:
        pid = await _backend_running(f"INSERT INTO {pg.tables}_messages")
    assert pid is not None, "the batch's INSERT was never seen running"
    assert await pg_execute("SELECT pg_terminate_backend(%s)", (pid,)) == [(True,)]
    with pytest.raises(SessionError, match="add_items failed") as failure:
        await task
    assert "nothing of the batch was written, or all of it" in str(failure.value)
    # Killed before its commit: none of the batch is there, for anyone.
    assert await session.get_items() == [user_message("before")]
    assert await pg.session("killed").get_items() == [user_message("before")]
    # The pool drops the dead connection; the session goes on.
    await session.add_items([user_message("after")])
    assert await session.get_items() == [user_message("before"), user_message("after")]


async def test_idle_connections_killed_by_the_server_are_replaced(tmp_path: Path) -> None:
    # A server of its own: killing every client of the shared one would kill the
    # connections of tests running beside this one in other pytest-xdist workers.
    with private_pg_server() as server:
        async with backends("postgres", tmp_path, server) as pg:
            session = pg.session("idle")
            await session.add_items([user_message("u0")])
            killed = await pg_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend'",
                dsn=server.dsn,
            )
            assert killed
            assert all(ok for (ok,) in killed)
            await session.add_items([user_message("u1")])
            assert await session.get_items() == [user_message("u0"), user_message("u1")]


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    return f"moved {amount}"


async def test_the_server_restarts_between_turns_and_the_run_continues(tmp_path: Path) -> None:
    # A server of its own: restarting the shared one would drop the connections of
    # tests running beside this one in other pytest-xdist workers.
    with private_pg_server() as server:
        async with backends("postgres", tmp_path, server) as pg:
            await _restart_between_turns(pg, server)


async def _restart_between_turns(pg: Backends, server: PgServer) -> None:
    model = ScriptedModel(
        [
            [text_message("Hello.")],
            [function_call("transfer", {"amount": 5}, "c1")],
            [text_message("Moved 5.")],
        ]
    )
    agent = Agent("bank", model=model, tools=[transfer])
    session, store = pg.session("restart"), pg.state_store()
    key = unique("job")

    await Runner.run(agent, "Hi", session=session)
    paused = await Runner.run(agent, "Move 5", session=session)
    assert [item.call_id for item in paused.interruptions] == ["c1"]
    version = await store.save_state(key, paused.to_state())

    server.restart()

    stored = await store.load_stored_state(agent, key)
    assert stored is not None
    assert stored.version == version
    state = stored.state
    state.approve(state.interruptions[0])
    finished = await Runner.run(agent, state, session=session)
    assert finished.final_output == "Moved 5."
    await store.save_state(key, finished.to_state(), expected_version=stored.version)
    assert await session.get_items() == [
        user_message("Hi"),
        text_message("Hello."),
        user_message("Move 5"),
        function_call("transfer", {"amount": 5}, "c1"),
        function_call_output("c1", "moved 5"),
        text_message("Moved 5."),
    ]
    assert await store.version(key) == version + 1
