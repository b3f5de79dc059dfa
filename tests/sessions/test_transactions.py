"""History transactions on every backend: ``revision()``, ``add_items(op_id=...)`` and
``replace_suffix``; against a list model, across session objects and processes, and
through a PostgreSQL backend killed in the middle of a write."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import histcore
from histcore.exceptions import SessionError
from histcore.sessions import MemorySession, SessionABC, SQLiteSession
from tests.support.examples import examples
from tests.support.pg import BACKENDS, Backends, backends, pg_execute, require_pg


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


@pytest.fixture(params=BACKENDS)
async def made(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


@pytest.fixture(params=["sqlite", "postgres"])
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


# --- revisions ------------------------------------------------------------------------


async def test_revision_changes_with_every_change_and_never_repeats(made: Backends) -> None:
    session = made.session("rev")
    seen = [await session.revision()]

    async def changed() -> None:
        now = await session.revision()
        assert now > seen[-1], f"revision {now} after {seen}"
        seen.append(now)

    async def unchanged() -> None:
        assert await session.revision() == seen[-1]

    await session.add_items([user("a"), user("b")])
    await changed()
    await session.add_items([])
    await unchanged()
    assert await session.pop_item() == user("b")
    await changed()
    await session.clear_session()
    await changed()
    await session.clear_session()  # nothing to clear
    await unchanged()
    assert await session.pop_item() is None
    await unchanged()
    await session.add_items([user("c")])  # after a clear: still counting up
    await changed()
    assert await session.replace_suffix(0, [user("d")], expected_revision=seen[-1])
    await changed()
    assert len(set(seen)) == len(seen)
    assert texts(await session.get_items()) == ["d"]


async def test_two_session_objects_read_the_same_revision(durable: Backends) -> None:
    one, two = durable.session("shared"), durable.session("shared")
    await one.add_items([user("a")])
    assert await two.revision() == await one.revision() > 0
    await two.pop_item()
    assert await one.revision() == await two.revision()
    assert await one.get_items() == []


# A process that opens the same store, applies `ops` ("add:<op>:<text>", "rev") and
# prints the revision after each "rev".
CHILD = """
import asyncio, sys
from histcore.sessions import SQLiteSession

async def main(kind, where, tables, ops):
    if kind == "sqlite":
        session = SQLiteSession("shared", where)
    else:
        from histcore.sessions.postgres import PostgresSession, close_pools
        session = PostgresSession(
            "shared", where, sessions_table=tables + "_sessions",
            messages_table=tables + "_messages",
        )
    sys.stdin.readline()  # every child starts together
    for op in ops:
        if op == "rev":
            print(await session.revision(), flush=True)
        else:
            _, op_id, text = op.split(":")
            await session.add_items([{"role": "user", "content": text}], op_id=op_id)
    session.close()
    if kind != "sqlite":
        await close_pools()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
"""


def _child_env() -> dict[str, str]:
    package_root = str(Path(histcore.__file__).resolve().parent.parent)
    path = [package_root, os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def _children(made: Backends, *op_lists: list[str]) -> list[str]:
    """Run one child per op list, all started at once; their standard outputs."""
    where = str(made._tmp_path / "sessions.db") if made.name == "sqlite" else made.dsn
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, made.name, where, made.tables, *ops],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_child_env(),
        )
        for ops in op_lists
    ]
    outputs = []
    try:
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, errors = child.communicate(timeout=120)
            assert child.returncode == 0, errors
            outputs.append(out)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    return outputs


async def test_another_process_reads_the_same_revision(durable: Backends) -> None:
    session = durable.session("shared")
    await session.add_items([user("a")])
    await session.pop_item()
    (output,) = await asyncio.to_thread(_children, durable, ["rev", "add:x:b", "rev"])
    before, after = (int(line) for line in output.split())
    assert before == 2  # an add and a pop, counted by this process
    assert await session.revision() == after > before
    assert texts(await session.get_items()) == ["b"]


# --- op ids ---------------------------------------------------------------------------


async def test_an_op_applied_twice_is_stored_once(made: Backends) -> None:
    session = made.session("ops")
    await session.add_items([user("a"), user("b")], op_id="op-1")
    revision = await session.revision()
    await session.add_items([user("a"), user("b")], op_id="op-1")  # the retry
    assert await session.revision() == revision
    await session.add_items([user("c")], op_id="op-2")
    await session.add_items([user("d")])  # no op id: always stored
    await session.add_items([user("d")])
    assert texts(await session.get_items()) == ["a", "b", "c", "d", "d"]
    if made.durable:  # another session object knows the op too
        await made.session("ops").add_items([user("c")], op_id="op-2")
        assert len(await made.session("ops").get_items()) == 5
    # An op id is the session's own: another session applies it.
    await made.session("other").add_items([user("x")], op_id="op-1")
    assert texts(await made.session("other").get_items()) == ["x"]


async def test_op_ids_are_kept_across_a_clear(made: Backends) -> None:
    session = made.session("cleared")
    await session.add_items([user("a")], op_id="op")
    await session.clear_session()
    await session.add_items([user("a")], op_id="op")
    assert await session.get_items() == []


async def test_only_the_latest_op_ids_of_the_window_are_remembered(made: Backends) -> None:
    session = made.session("window", op_id_window=3)
    for op in "abcd":
        await session.add_items([user(op)], op_id=op)
    # The window holds b, c and d: a was forgotten, so its retry is stored again.
    for op in "bcd":
        await session.add_items([user(op)], op_id=op)
    assert texts(await session.get_items()) == ["a", "b", "c", "d"]
    await session.add_items([user("a")], op_id="a")
    assert texts(await session.get_items()) == ["a", "b", "c", "d", "a"]
    # Pops and clears do not push op ids out: only other op ids do.
    await session.pop_item()
    await session.pop_item()
    for op in "ca":
        await session.add_items([user(op)], op_id=op)
    assert texts(await session.get_items()) == ["a", "b", "c"]


@pytest.mark.parametrize("op_id", [5, b"op", ["op"]])
async def test_an_op_id_that_is_no_str_is_a_type_error(made: Backends, op_id: Any) -> None:
    session = made.session("bad")
    with pytest.raises(TypeError, match="op_id must be a non-empty str"):
        await session.add_items([user("a")], op_id=op_id)
    assert await session.get_items() == []


@pytest.mark.parametrize("op_id", ["", "\ud800", "a\x00b"])
async def test_an_empty_or_unstorable_op_id_is_a_value_error(made: Backends, op_id: str) -> None:
    session = made.session("bad")
    with pytest.raises(ValueError, match="op_id must"):
        await session.add_items([user("a")], op_id=op_id)
    assert await session.get_items() == []


@pytest.mark.parametrize("window", [0, -1, True, 2.5])
def test_a_bad_op_id_window_is_refused(window: Any, tmp_path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="op_id_window must be an int >= 1"):
        MemorySession("s", op_id_window=window)
    with pytest.raises((TypeError, ValueError), match="op_id_window must be an int >= 1"):
        SQLiteSession("s", tmp_path / "x.db", op_id_window=window)


async def test_two_processes_applying_the_same_ops_at_once_store_each_once(
    durable: Backends,
) -> None:
    await durable.session("shared").clear_session()  # the tables exist before the race
    ops = [f"add:op{number}:{number}" for number in range(30)]
    await asyncio.to_thread(_children, durable, ops, list(reversed(ops)), ops)
    stored = texts(await durable.session("shared").get_items())
    assert sorted(stored, key=int) == [str(number) for number in range(30)]


# --- replace_suffix -------------------------------------------------------------------


async def test_replace_suffix_replaces_from_a_position(made: Backends) -> None:
    session = made.session("replace")
    await session.add_items([user(text) for text in "abcd"])
    revision = await session.revision()
    assert await session.replace_suffix(1, [user("x"), user("y")], expected_revision=revision)
    assert texts(await session.get_items()) == ["a", "x", "y"]
    revision = await session.revision()
    assert await session.replace_suffix(3, [user("z")], expected_revision=revision)  # append
    revision = await session.revision()
    assert await session.replace_suffix(0, [], expected_revision=revision)  # remove all
    assert await session.get_items() == []
    revision = await session.revision()
    assert await session.replace_suffix(0, [], expected_revision=revision)  # no change
    assert await session.revision() == revision


async def test_a_stale_revision_changes_nothing(made: Backends) -> None:
    session = made.session("stale")
    await session.add_items([user("a"), user("b")])
    revision = await session.revision()
    await made.session("stale").add_items([user("c")])  # another writer
    assert not await session.replace_suffix(0, [user("x")], expected_revision=revision)
    assert texts(await made.session("stale").get_items()) == ["a", "b", "c"]
    assert not await session.replace_suffix(0, [user("x")], expected_revision=revision + 99)
    assert texts(await session.get_items()) == ["a", "b", "c"]


async def test_replace_suffix_refuses_bad_arguments_and_leaves_the_store(made: Backends) -> None:
    session = made.session("args")
    await session.add_items([user("a"), user("b")])
    revision = await session.revision()
    with pytest.raises(ValueError, match=r"start must be at most the number of items \(2\), got 3"):
        await session.replace_suffix(3, [], expected_revision=revision)
    with pytest.raises(ValueError, match="start must be an int >= 0"):
        await session.replace_suffix(-1, [], expected_revision=revision)
    for start in (1.0, "1", True, None):
        with pytest.raises(TypeError, match="start must be an int"):
            await session.replace_suffix(start, [], expected_revision=revision)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected_revision must be an int"):
        await session.replace_suffix(0, [], expected_revision="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await session.replace_suffix(0, [user("x"), {"bad": object()}], expected_revision=revision)
    with pytest.raises(TypeError, match="items must be a list"):
        await session.replace_suffix(0, user("x"), expected_revision=revision)  # type: ignore[arg-type]
    assert texts(await session.get_items()) == ["a", "b"]
    assert await session.revision() == revision


async def test_a_reader_that_keeps_the_history_sees_a_replacement(durable: Backends) -> None:
    reader, writer = durable.session("kept"), durable.session("kept")
    await writer.add_items([user(text) for text in "abc"])
    assert texts(await reader.get_items()) == ["a", "b", "c"]  # now kept by the reader
    assert await writer.replace_suffix(1, [user("x")], expected_revision=await writer.revision())
    assert texts(await reader.get_items()) == ["a", "x"]
    assert texts(await writer.get_items()) == ["a", "x"]


async def test_replace_racing_an_append_loses_nothing_accepted(durable: Backends) -> None:
    replacer, appender = durable.session("race"), durable.session("race")
    for round_number in range(12):
        await replacer.clear_session()
        await replacer.add_items([user("old1"), user("old2")])
        revision = await replacer.revision()
        replaced, _ = await asyncio.gather(
            replacer.replace_suffix(1, [user("new")], expected_revision=revision),
            appender.add_items([user(f"appended{round_number}")]),
        )
        final = texts(await durable.session("race").get_items())
        if replaced:  # the replacement came first, the append after it
            assert final == ["old1", "new", f"appended{round_number}"]
        else:  # the append came first: the replacement wrote nothing
            assert final == ["old1", "old2", f"appended{round_number}"]


async def test_a_memory_session_shared_by_tasks_gives_the_same_answers() -> None:
    session = MemorySession("tasks")
    await session.add_items([user("base")])
    revision = await session.revision()

    async def apply(number: int) -> bool:
        await asyncio.sleep(0)
        await session.add_items([user(f"op{number % 5}")], op_id=f"op{number % 5}")
        return await session.replace_suffix(0, [user("base")], expected_revision=revision)

    results = await asyncio.gather(*(apply(number) for number in range(20)))
    # Each task's own add changed the revision its replacement expected: none wins.
    assert not any(results)
    assert sorted(texts(await session.get_items())) == ["base"] + [f"op{n}" for n in range(5)]
    # Now the same expected revision from many tasks at once: exactly one wins.
    revision = await session.revision()
    results = await asyncio.gather(
        *(
            session.replace_suffix(1, [user(f"winner{n}")], expected_revision=revision)
            for n in range(10)
        )
    )
    assert results.count(True) == 1
    assert texts(await session.get_items()) == ["base", f"winner{results.index(True)}"]


# --- interplay with the SDK's SQLiteSession and older stores ---------------------------


async def test_sdk_writes_to_the_same_file_change_the_revision(tmp_path: Path) -> None:
    agents_memory = pytest.importorskip("agents.memory")
    path = tmp_path / "shared.db"
    sdk = agents_memory.SQLiteSession("s", str(path))
    try:
        # A store the SDK made and wrote, before histcore counted anything.
        await sdk.add_items([user("a"), user("b")])
        with SQLiteSession("s", path) as session:
            first = await session.revision()
            assert first > 0
            assert await session.revision() == first
            await sdk.pop_item()
            second = await session.revision()
            assert second > first
            await sdk.add_items([user("c")])
            # A replacement read against the revision before the SDK's append fails.
            assert not await session.replace_suffix(0, [], expected_revision=second)
            third = await session.revision()
            assert third > second
            await session.add_items([user("d")], op_id="op")
            assert await session.replace_suffix(1, [user("e")], expected_revision=third + 1)
        # The SDK reads and writes the file histcore wrote.
        assert texts(await sdk.get_items()) == ["a", "e"]
        await sdk.add_items([user("f")])
        assert texts(await sdk.get_items()) == ["a", "e", "f"]
    finally:
        sdk.close()


async def test_postgres_tables_made_before_revisions_are_migrated(tmp_path: Path) -> None:
    require_pg()
    from histcore.sessions.postgres import close_pools

    async with backends("postgres", tmp_path) as made:
        await made.session("old").add_items([user("a")])
        await close_pools()
        tables = made.tables
        await pg_execute(
            f"DROP TABLE {tables}_sessions_revisions, {tables}_sessions_op_ids", dsn=made.dsn
        )
        session = made.session("old")
        assert await session.revision() == 1  # the uncounted history counts as one change
        await session.add_items([user("b")], op_id="op")
        await session.add_items([user("b")], op_id="op")
        assert texts(await session.get_items()) == ["a", "b"]
        assert await session.revision() == 2


# --- PostgreSQL: a backend killed mid-transaction -------------------------------------------


async def test_a_postgres_write_killed_mid_transaction_is_retried_once(tmp_path: Path) -> None:
    require_pg()
    import psycopg

    async with backends("postgres", tmp_path) as made:
        session = made.session("killed")
        await session.add_items([user("before")], op_id="op-0")
        revisions = f"{made.tables}_sessions_revisions"
        # Hold the revision row: the write takes the session's lock, inserts its rows,
        # and then waits here, in the middle of its transaction.
        async with await psycopg.AsyncConnection.connect(made.dsn) as holder:
            await holder.execute(
                f"SELECT 1 FROM {revisions} WHERE session_id = %s FOR UPDATE", ("killed",)
            )
            write = asyncio.ensure_future(session.add_items([user("once")], op_id="op-1"))
            pid = None
            for _ in range(600):
                rows = await pg_execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE %s",
                    (f"%INSERT INTO {revisions}%",),
                    dsn=made.dsn,
                )
                if rows:
                    pid = rows[0][0]
                    break
                await asyncio.sleep(0.05)
            assert pid is not None, "the write never waited for the revision row"
            assert await pg_execute("SELECT pg_terminate_backend(%s)", (pid,), dsn=made.dsn) == [
                (True,)
            ]
            with pytest.raises(SessionError, match="add_items failed"):
                await write
            await holder.rollback()
        # The killed transaction left nothing: neither its rows nor its op id.
        assert texts(await made.session("killed").get_items()) == ["before"]
        for _ in range(2):  # the retry, and a retry of the retry
            await session.add_items([user("once")], op_id="op-1")
        assert texts(await made.session("killed").get_items()) == ["before", "once"]


# --- every backend against a list model ---------------------------------------------------

_operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3), st.none()),
        st.tuples(st.just("add"), st.integers(1, 2), st.sampled_from(["o1", "o2", "o3", "o4"])),
        st.tuples(st.just("pop"), st.none(), st.none()),
        st.tuples(st.just("clear"), st.none(), st.none()),
        st.tuples(st.just("replace"), st.integers(0, 8), st.integers(0, 3)),
        st.tuples(st.just("stale"), st.integers(0, 8), st.integers(0, 3)),
    ),
    max_size=14,
)

WINDOW = 2


async def _against_model(session: SessionABC, operations: list[Any]) -> None:
    model: list[str] = []
    ops: list[str] = []  # the op ids the session remembers, oldest first
    revisions = [await session.revision()]
    counter = 0
    for kind, first, second in operations:
        before = list(model)
        if kind == "add":
            counter += 1
            batch = [f"{counter}.{n}" for n in range(first)]
            await session.add_items([user(text) for text in batch], op_id=second)
            if batch and (second is None or second not in ops):
                model += batch
                if second is not None:
                    ops = [*ops, second][-WINDOW:]
        elif kind == "pop":
            popped = await session.pop_item()
            assert popped == (user(model.pop()) if model else None)
        elif kind == "clear":
            await session.clear_session()
            model.clear()
        else:
            counter += 1
            batch = [f"r{counter}.{n}" for n in range(second)]
            expected = revisions[-1] + (1 if kind == "stale" else 0)
            if first > len(model) and kind == "replace":
                with pytest.raises(ValueError, match="start must be at most"):
                    await session.replace_suffix(
                        first, [user(t) for t in batch], expected_revision=expected
                    )
            else:
                done = await session.replace_suffix(
                    first, [user(t) for t in batch], expected_revision=expected
                )
                assert done == (kind == "replace")
                if done:
                    model[first:] = batch
        now = await session.revision()
        if model != before or (kind == "clear" and before):
            assert now > revisions[-1]
        else:
            assert now == revisions[-1]
        revisions.append(now)
        assert texts(await session.get_items()) == model


@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(operations=_operations)
def test_every_backend_behaves_like_a_list(backend: str, operations: list[Any]) -> None:
    if backend == "postgres":
        require_pg()

    async def run() -> None:
        with tempfile.TemporaryDirectory() as directory:
            async with backends(backend, Path(directory)) as made:
                session = made.session(f"m{uuid.uuid4().hex[:8]}", op_id_window=WINDOW)
                await _against_model(session, operations)

    asyncio.run(run())
