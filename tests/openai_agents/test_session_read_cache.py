"""The installed ``SQLiteSession.get_items`` reads only new rows, and still returns
exactly what the SDK's own ``get_items`` returns, whoever wrote in between.

Differential: every read of an installed session is compared with the SDK's original
``get_items`` run at that moment (on another session object of the same file, or on
the same object for an in-memory database), while other session objects, raw
connections, histcore's own sessions and another process add, pop, clear, rewrite in
place (noting it as ``histcore doctor --fix`` does) and slip in rows the SDK skips.
Every returned list is then mutated all the way down: the next read must not see it.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import SQLiteSession as SDKSQLiteSession

import histcore.openai_agents as accelerator
from histcore.openai_agents import _session_read
from histcore.sessions import SQLiteSession as HistcoreSQLiteSession
from histcore.sessions._sqlite_schema import note_rewrite
from tests.support.examples import examples
from tests.support.session_read import decode_calls
from tests.support.strategies import json_values

# Sessions hold any JSON value here, not only the SDK's typed input items.
SQLiteSession: Any = SDKSQLiteSession

ODD_ROWS: list[Any] = [
    '{"type": "message", "content": NaN}',
    '{"big": 123456789012345678901234567890}',
    "not json",
    b'{"blob": true}',
    7,
    '"just text"',
    "[1, [2, {}]]",
]

# Writes in another process: one command a line on stdin, "ok" or an error on stdout.
WORKER = r"""
import asyncio, json, sys
from agents import SQLiteSession

async def main():
    for line in sys.stdin:
        command = json.loads(line)
        session = SQLiteSession(command["session"], command["path"])
        try:
            if command["op"] == "add":
                await session.add_items(command["items"])
            elif command["op"] == "pop":
                await session.pop_item()
            elif command["op"] == "clear":
                await session.clear_session()
            print("ok", flush=True)
        except Exception as exc:
            print("error", type(exc).__name__, exc, flush=True)
        finally:
            session.close()

asyncio.run(main())
"""


class Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, **command: Any) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer == "ok\n", answer

    def close(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    process = Worker()
    yield process
    process.close()


@pytest.fixture(autouse=True)
def uninstalled() -> Iterator[None]:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


@pytest.fixture
def plain_get_items() -> Any:
    accelerator.uninstall()
    return SQLiteSession.get_items


def scrambled(value: Any) -> None:
    """Mutate every container of ``value`` in place."""
    if type(value) is dict:
        for child in list(value.values()):
            scrambled(child)
        value.clear()
        value["scrambled"] = [1]
    elif type(value) is list:
        for child in value:
            scrambled(child)
        value.append("scrambled")


def seen(items: Any) -> str:
    # repr tells 1 from 1.0 and shows NaN, which is not equal to itself.
    return repr(items)


items_strategy = st.lists(json_values(max_leaves=4), min_size=1, max_size=3).map(
    lambda values: [{"type": "message", "value": value} for value in values]
)


def jsonable(items: list[Any]) -> bool:
    """Whether the items survive a trip through the worker's JSON line (no NaN)."""
    try:
        json.dumps(items, allow_nan=False)
    except ValueError:
        return False
    return True


# --- a file database, written by everyone ---------------------------------------------

file_ops = st.lists(
    st.one_of(
        st.tuples(st.just("read"), st.integers(0, 1)),
        st.tuples(st.just("read"), st.integers(0, 1)),
        st.tuples(
            st.just("add"),
            st.sampled_from(["reader", "other", "raw", "histcore", "process"]),
            items_strategy,
        ),
        st.tuples(st.just("pop"), st.sampled_from(["reader", "other", "histcore", "process"])),
        st.tuples(st.just("clear"), st.sampled_from(["reader", "other", "process"])),
        st.tuples(st.just("odd"), st.integers(0, len(ODD_ROWS) - 1)),
        st.tuples(st.just("rewrite"), st.integers(0, 5)),
        st.tuples(st.just("swap"), st.integers(0, 5)),
        st.tuples(st.just("elsewhere"), items_strategy),
    ),
    max_size=14,
)


def raw(path: str) -> Any:
    return closing(sqlite3.connect(path))


def rewrite_in_place(conn: sqlite3.Connection, index: int) -> None:
    """As ``histcore doctor --fix`` does: a row's message_data rewritten, and noted."""
    rows = conn.execute(
        "SELECT id FROM agent_messages WHERE session_id = 's' ORDER BY id"
    ).fetchall()
    if rows:
        row_id = rows[index % len(rows)][0]
        conn.execute(
            "UPDATE agent_messages SET message_data = ? WHERE id = ?",
            (json.dumps({"type": "message", "rewritten": row_id}), row_id),
        )
        note_rewrite(conn, "agent_messages", "s")
    conn.commit()


def delete_and_insert(conn: sqlite3.Connection, index: int) -> None:
    """One row deleted and one appended in one transaction: the count stays."""
    rows = conn.execute(
        "SELECT id FROM agent_messages WHERE session_id = 's' ORDER BY id"
    ).fetchall()
    if rows:
        conn.execute("DELETE FROM agent_messages WHERE id = ?", (rows[index % len(rows)][0],))
        conn.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (json.dumps({"type": "message", "swapped": True}),),
        )
    conn.commit()


class FileWorld:
    """The sessions, connections and process writing one file database."""

    def __init__(self, path: str, worker: Worker, plain_get_items: Any) -> None:
        self.path, self.worker, self.plain_get_items = path, worker, plain_get_items
        self.readers = [SQLiteSession("s", path), SQLiteSession("s", path)]
        self.other = SQLiteSession("s", path)
        self.reference = SQLiteSession("s", path)
        self.elsewhere = SQLiteSession("t", path)
        self.ours = HistcoreSQLiteSession("s", path)

    def close(self) -> None:
        for session in (*self.readers, self.other, self.reference, self.elsewhere):
            session.close()
        self.ours.close()

    def writer(self, who: str) -> Any:
        return {"reader": self.readers[0], "other": self.other, "histcore": self.ours}[who]

    async def read(self, reader: int) -> None:
        got = await self.readers[reader].get_items()
        assert seen(got) == seen(await self.plain_get_items(self.reference))
        scrambled(got)

    async def add(self, who: str, items: list[Any]) -> None:
        if who == "raw":
            with raw(self.path) as conn, conn:
                conn.executemany(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                    [(json.dumps(item),) for item in items],
                )
        elif who == "histcore":
            # histcore's session refuses some values the SDK stores (a surrogate pair
            # written as two characters): it adds plain ones.
            await self.ours.add_items([{"type": "message", "n": n} for n in range(len(items))])
        elif who == "process":
            if jsonable(items):
                self.worker.run(op="add", path=self.path, session="s", items=items)
        else:
            await self.writer(who).add_items(items)

    async def pop(self, who: str) -> None:
        if who == "process":
            self.worker.run(op="pop", path=self.path, session="s")
        else:
            await self.writer(who).pop_item()

    async def clear(self, who: str) -> None:
        if who == "process":
            self.worker.run(op="clear", path=self.path, session="s")
        else:
            await self.writer(who).clear_session()

    async def odd(self, index: int) -> None:
        with raw(self.path) as conn, conn:
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                (ODD_ROWS[index],),
            )

    async def rewrite(self, index: int) -> None:
        with raw(self.path) as conn:
            rewrite_in_place(conn, index)

    async def swap(self, index: int) -> None:
        with raw(self.path) as conn:
            delete_and_insert(conn, index)

    async def add_elsewhere(self, items: list[Any]) -> None:
        await self.elsewhere.add_items(items)


async def run_file_ops(
    path: str, ops: list[Any], worker: Worker, plain_get_items: Any, threads: int | None
) -> None:
    if threads is not None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(threads))
    world = FileWorld(path, worker, plain_get_items)
    try:
        for kind, *args in ops:
            await getattr(world, "add_elsewhere" if kind == "elsewhere" else kind)(*args)
        for reader in range(len(world.readers)):  # and a last look, after everything
            await world.read(reader)
    finally:
        world.close()


@pytest.mark.parametrize("threads", [1, None], ids=["one-thread", "thread-pool"])
@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=file_ops)
def test_file_reads_equal_the_sdks_whoever_writes(
    tmp_path_factory: pytest.TempPathFactory,
    worker: Worker,
    plain_get_items: Any,
    threads: int | None,
    ops: list[Any],
) -> None:
    path = str(tmp_path_factory.mktemp("cache") / "store.db")
    with accelerator.installed():
        asyncio.run(run_file_ops(path, ops, worker, plain_get_items, threads))


# --- an in-memory database: one connection, written through it --------------------------

memory_ops = st.lists(
    st.one_of(
        st.just(("read",)),
        st.just(("read",)),
        st.tuples(st.just("add"), items_strategy),
        st.just(("pop",)),
        st.just(("clear",)),
        st.tuples(st.just("odd"), st.integers(0, len(ODD_ROWS) - 1)),
        st.tuples(st.just("rewrite"), st.integers(0, 5)),
        st.tuples(st.just("swap"), st.integers(0, 5)),
    ),
    max_size=14,
)


async def run_memory_ops(session: Any, ops: list[Any], plain_get_items: Any) -> None:
    conn = session._shared_connection
    for op in ops:
        kind = op[0]
        if kind == "read":
            got = await session.get_items()
            assert seen(got) == seen(await plain_get_items(session))
            scrambled(got)
        elif kind == "add":
            await session.add_items(op[1])
        elif kind == "pop":
            await session.pop_item()
        elif kind == "clear":
            await session.clear_session()
        elif kind == "odd":
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                (ODD_ROWS[op[1]],),
            )
            conn.commit()
        elif kind == "rewrite":
            # On the same connection: its total_changes, then the noted generation, tell.
            rewrite_in_place(conn, op[1])
        else:
            delete_and_insert(conn, op[1])
    assert seen(await session.get_items()) == seen(await plain_get_items(session))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=memory_ops)
def test_memory_reads_equal_the_sdks(ops: list[Any]) -> None:
    accelerator.uninstall()
    plain = SQLiteSession.get_items
    session = SQLiteSession("s")
    try:
        with accelerator.installed():
            asyncio.run(run_memory_ops(session, ops, plain))
    finally:
        session.close()


# --- the cache is used, and its detection matters --------------------------------------


def test_only_new_rows_are_decoded(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "incremental.db")
    calls = decode_calls(monkeypatch)

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        session = SQLiteSession("s", path)
        try:
            await session.add_items([{"n": n} for n in range(50)])
            first = await session.get_items()
            again = await session.get_items()
            assert first == again
            assert first is not again
            assert all(a is not b for a, b in zip(first, again, strict=True))
            await session.add_items([{"n": 50}, {"n": 51}])
            assert len(await session.get_items()) == 52
        finally:
            session.close()

    with accelerator.installed():
        asyncio.run(scenario())
    assert calls == [50, 2]  # all of it once, nothing for the unchanged read, then 2


def test_a_rewrite_noted_by_the_doctor_is_read_again(tmp_path: Any) -> None:
    path = str(tmp_path / "rewrite.db")

    async def scenario() -> Any:
        session = SQLiteSession("s", path)
        try:
            await session.add_items([{"n": n} for n in range(3)])
            await session.get_items()
            with raw(path) as conn:
                rewrite_in_place(conn, 1)
            return await session.get_items()
        finally:
            session.close()

    with accelerator.installed():
        items = asyncio.run(scenario())
    assert items[1] == {"type": "message", "rewritten": 2}


def test_a_table_without_autoincrement_is_read_whole(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "plain-ids.db")
    with raw(path) as conn, conn:
        conn.execute(
            "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
        )
        conn.execute(
            "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, "
            "message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
        )
    calls = decode_calls(monkeypatch)

    async def scenario() -> None:
        session = SQLiteSession("s", path)
        try:
            await session.add_items([{"n": 0}, {"n": 1}])
            await session.get_items()
            await session.pop_item()
            # Without AUTOINCREMENT the popped row's id is handed out again.
            await session.add_items([{"n": 2}])
            assert await session.get_items() == [{"n": 0}, {"n": 2}]
        finally:
            session.close()

    with accelerator.installed():
        asyncio.run(scenario())
    assert calls == [2, 2]


def test_items_too_deep_to_copy_are_handed_out_and_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_session_read, "copied", lambda items: None)

    async def scenario() -> None:
        session = SQLiteSession("s")
        try:
            await session.add_items([{"n": [1]}])
            first = await session.get_items()
            first[0]["n"].append(2)
            assert await session.get_items() == [{"n": [1]}]
        finally:
            session.close()

    with accelerator.installed():
        asyncio.run(scenario())


def test_nan_and_other_skips_match(tmp_path: Any, plain_get_items: Any) -> None:
    path = str(tmp_path / "odd.db")

    async def scenario() -> None:
        session = SQLiteSession("s", path)
        reference = SQLiteSession("s", path)
        try:
            await session.add_items([{"x": math.inf}])
            for row in ODD_ROWS:
                with raw(path) as conn, conn:
                    conn.execute(
                        "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                        (row,),
                    )
                assert seen(await session.get_items()) == seen(await plain_get_items(reference))
        finally:
            session.close()
            reference.close()

    with accelerator.installed():
        asyncio.run(scenario())
