"""The durable RunState store on every backend (memory, SQLite, PostgreSQL): exact
round trips, optimistic concurrency, clear errors, and racing savers."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from histcore.exceptions import RunStateError
from histcore.runner.agent import Agent
from histcore.runner.run import Runner
from histcore.runner.run_state import RunState
from histcore.runner.tool import function_tool
from histcore.state_store import (
    RunStateConflictError,
    RunStateStore,
    RunStateStoreError,
    SQLiteRunStateStore,
)
from histcore.testing import ScriptedModel, function_call, text_message
from tests.support.pg import BACKENDS, Backends, backends, pg_execute
from tests.support.sqlite import no_file_left_open, write_junk


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made
    if made.name == "postgres":  # the store's second table, beside the ones dropped above
        await pg_execute(f"DROP TABLE IF EXISTS {made.tables}_states_versions")


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    return f"moved {amount}"


def bank(*outputs: list[dict[str, object]]) -> Agent:
    return Agent("bank", model=ScriptedModel(list(outputs)), tools=[transfer])


async def paused_state(agent: Agent, amount: int = 5) -> RunState:
    """A run paused on a tool approval: the typical checkpoint."""
    assert isinstance(agent.model, ScriptedModel)
    agent.model.set_next_output([function_call("transfer", {"amount": amount}, f"c{amount}")])
    result = await Runner.run(agent, f"Move {amount}")
    assert result.interruptions
    return result.to_state()


async def test_a_saved_state_loads_back_exactly(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    state = await paused_state(agent)
    assert await store.version("job") == 0
    assert await store.load_state(agent, "job") is None
    assert await store.load_stored_state(agent, "job") is None
    assert await store.save_state("job", state) == 1
    loaded = await store.load_state(agent, "job")
    assert loaded is not None
    assert loaded is not state
    assert loaded.to_json() == state.to_json()
    stored = await store.load_stored_state(agent, "job")
    assert stored is not None
    assert stored.version == 1
    assert stored.state is not loaded
    assert await store.version("job") == 1


async def test_a_loaded_state_resumes_and_its_continuation_is_saved(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    await store.save_state("job", await paused_state(agent))
    stored = await store.load_stored_state(agent, "job")
    assert stored is not None
    stored.state.approve(stored.state.interruptions[0])
    assert isinstance(agent.model, ScriptedModel)
    agent.model.set_next_output([text_message("Moved 5.")])
    result = await Runner.run(agent, stored.state)
    assert result.final_output == "Moved 5."
    new_version = await store.save_state("job", result.to_state(), expected_version=stored.version)
    assert new_version == 2
    final = await store.load_state(agent, "job")
    assert final is not None
    assert final.to_json() == result.to_state().to_json()


async def test_a_save_based_on_a_stale_version_fails_and_keeps_the_newer(
    backend: Backends,
) -> None:
    store = backend.state_store()
    agent = bank()
    first, second, third = [await paused_state(agent, amount) for amount in (1, 2, 3)]
    await store.save_state("job", first)
    # Two workers resume version 1; the first to save wins.
    assert await store.save_state("job", second, expected_version=1) == 2
    with pytest.raises(RunStateConflictError, match="based on version 1 but it is at version 2"):
        await store.save_state("job", third, expected_version=1)
    # A first save of a key that already has a checkpoint is stale too.
    with pytest.raises(RunStateConflictError, match="based on a new key") as info:
        await store.save_state("job", third)
    assert (info.value.key, info.value.expected_version, info.value.current_version) == (
        "job",
        0,
        2,
    )
    with pytest.raises(RunStateConflictError, match="it is at version 2"):
        await store.save_state("job", third, expected_version=5)
    loaded = await store.load_state(agent, "job")
    assert loaded is not None
    assert loaded.to_json() == second.to_json()


async def test_racing_savers_of_one_version_have_exactly_one_winner(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    states = [await paused_state(agent, amount) for amount in range(1, 9)]
    await store.save_state("job", states[0])

    async def attempt(state: RunState) -> bool:
        try:
            await store.save_state("job", state, expected_version=1)
        except RunStateConflictError:
            return False
        return True

    outcomes = await asyncio.gather(*(attempt(state) for state in states[1:]))
    assert outcomes.count(True) == 1
    winner = states[1 + outcomes.index(True)]
    loaded = await store.load_state(agent, "job")
    assert loaded is not None
    assert loaded.to_json() == winner.to_json()
    assert await store.version("job") == 2


async def test_delete_with_and_without_a_version(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    await store.save_state("job", await paused_state(agent))
    with pytest.raises(RunStateConflictError):
        await store.delete_state("job", expected_version=3)
    assert await store.delete_state("job", expected_version=1) is True
    assert await store.delete_state("job") is False
    assert await store.load_state(agent, "job") is None
    # A save based on the deleted version is stale; a new first save works, and its
    # version follows the deleted one.
    with pytest.raises(RunStateConflictError, match="it has no checkpoint"):
        await store.save_state("job", await paused_state(agent), expected_version=1)
    assert await store.save_state("job", await paused_state(agent)) == 2


async def test_keys_are_independent(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    one, two = await paused_state(agent, 1), await paused_state(agent, 2)
    await store.save_state("one", one)
    await store.save_state("two", two)
    await store.save_state("two", one, expected_version=1)
    assert (await store.version("one"), await store.version("two")) == (1, 2)
    loaded = await store.load_state(agent, "one")
    assert loaded is not None
    assert loaded.to_json() == one.to_json()


async def test_bad_arguments_are_named_and_nothing_is_written(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    state = await paused_state(agent)
    with pytest.raises(TypeError, match="key must be a str"):
        await store.save_state(7, state)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key must be a non-empty str"):
        await store.save_state("", state)
    with pytest.raises(TypeError, match="state must be a RunState"):
        await store.save_state("job", state.to_json())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected_version must be an int >= 0"):
        await store.save_state("job", state, expected_version=-1)
    with pytest.raises(TypeError, match="expected_version must be an int >= 0"):
        await store.save_state("job", state, expected_version=True)
    assert await store.version("job") == 0


async def test_a_state_for_another_agent_is_a_clear_error(backend: Backends) -> None:
    store = backend.state_store()
    await store.save_state("job", await paused_state(bank()))
    stranger = Agent("stranger", model=ScriptedModel())
    with pytest.raises(RunStateError, match=r"run state 'job' \(version 1\).*agent\.name"):
        await store.load_state(stranger, "job")


async def test_a_corrupt_stored_state_is_a_clear_error(backend: Backends) -> None:
    if backend.name != "postgres":
        pytest.skip("written behind the store's back with SQL: PostgreSQL only")
    store = backend.state_store()
    await store.save_state("job", await paused_state(bank()))
    await pg_execute(
        f"UPDATE {backend.tables}_states SET state_json = %s WHERE state_key = 'job'",
        ('{"$schemaVersion": 99}',),
    )
    with pytest.raises(RunStateError, match=r"run state 'job'.*\$schemaVersion"):
        await store.load_state(bank(), "job")


def test_a_closed_sqlite_store_refuses_to_work(tmp_path: Path) -> None:
    store = SQLiteRunStateStore(tmp_path / "states.db")
    store.close()
    store.close()

    async def use(store: RunStateStore) -> int:
        return await store.version("job")

    with pytest.raises(RunStateStoreError, match="is closed"):
        asyncio.run(use(store))


def test_a_file_that_is_not_a_database_is_refused_and_closed(tmp_path: Path) -> None:
    write_junk(tmp_path / "states.db")
    with no_file_left_open(), pytest.raises(RunStateStoreError, match="not a database"):
        SQLiteRunStateStore(tmp_path / "states.db")


async def test_a_cancelled_save_is_over_before_the_cancellation_arrives(
    backend: Backends,
) -> None:
    if backend.name != "postgres":
        pytest.skip("needs a second connection holding a row lock: PostgreSQL only")
    import psycopg

    store = backend.state_store()
    agent = bank()
    await store.save_state("job", await paused_state(agent, 1))
    newer = await paused_state(agent, 2)
    async with await psycopg.AsyncConnection.connect(backend.dsn) as blocker:
        await blocker.execute(
            f"SELECT 1 FROM {backend.tables}_states WHERE state_key = 'job' FOR UPDATE"
        )
        task = asyncio.ensure_future(store.save_state("job", newer, expected_version=1))
        while not await pg_execute(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            (f"%UPDATE {backend.tables}_states%",),
        ):
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()
        await blocker.rollback()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.version("job") == 2
    loaded = await store.load_state(agent, "job")
    assert loaded is not None
    assert loaded.to_json() == newer.to_json()


async def test_versions_never_repeat_after_a_delete(backend: Backends) -> None:
    store = backend.state_store()
    agent = bank()
    first, second, third = [await paused_state(agent, amount) for amount in (1, 2, 3)]
    assert await store.save_state("job", first) == 1
    stale = await store.load_stored_state(agent, "job")  # a worker holding version 1
    assert stale is not None
    assert stale.version == 1
    assert await store.delete_state("job") is True
    assert await store.version("job") == 0
    # The key is recreated; the stale worker's save must not replace the new checkpoint.
    assert await store.save_state("job", second) == 2
    with pytest.raises(RunStateConflictError, match="based on version 1 but it is at version 2"):
        await store.save_state("job", third, expected_version=stale.version)
    loaded = await store.load_state(agent, "job")
    assert loaded is not None
    assert loaded.to_json() == second.to_json()
    # Again with a delete that names its version, and more saves in between.
    assert await store.save_state("job", third, expected_version=2) == 3
    assert await store.delete_state("job", expected_version=3) is True
    assert await store.delete_state("job") is False
    assert await store.save_state("job", first) == 4
    with pytest.raises(RunStateConflictError):
        await store.delete_state("job", expected_version=1)
    assert await store.version("job") == 4
    # Other keys are not affected.
    assert await store.save_state("other", first) == 1


async def test_racing_deletes_and_first_saves_never_issue_a_version_twice(
    backend: Backends,
) -> None:
    store = backend.state_store()
    agent = bank()
    state = await paused_state(agent)
    issued: list[int] = []

    async def saver() -> None:
        for _ in range(15):
            try:
                issued.append(await store.save_state("job", state))
            except RunStateConflictError:
                pass
            await asyncio.sleep(0)

    async def deleter() -> None:
        for _ in range(15):
            await store.delete_state("job")
            await asyncio.sleep(0)

    await asyncio.gather(saver(), saver(), deleter(), deleter())
    assert issued and len(issued) == len(set(issued)), issued  # noqa: PT018
    last = await store.version("job")
    assert last == 0 or last == max(issued)


async def test_a_checkpoint_holding_a_lone_surrogate_saves_and_loads(backend: Backends) -> None:
    import os

    name = os.fsdecode(b"report-\xe9.txt")  # 'report-\udce9.txt'

    @function_tool
    def newest_file() -> str:
        return name

    model = ScriptedModel(
        [[function_call("newest_file", {}, "c0")], [function_call("transfer", {"amount": 1}, "c1")]]
    )
    agent = Agent("bank", model=model, tools=[newest_file, transfer])
    state = (await Runner.run(agent, f"Move 1 for {name}")).to_state()
    state.reject(state.interruptions[0], f"not for {name}")
    store = backend.state_store()
    assert await store.save_state("job", state) == 1
    loaded = await store.load_stored_state(agent, "job")
    assert loaded is not None
    assert loaded.version == 1
    assert loaded.state.to_json() == state.to_json()
    assert loaded.state.original_input == f"Move 1 for {name}"
    assert await store.save_state("job", loaded.state, expected_version=1) == 2


async def test_a_state_that_cannot_be_written_writes_nothing(backend: Backends) -> None:
    import uuid

    from histcore.runner.models.interface import ModelResponse

    store = backend.state_store()
    good = await paused_state(bank())
    bad = RunState(
        dataclasses.replace(
            good._fields,
            model_responses=(ModelResponse([], response_id=uuid.uuid4()),),  # type: ignore[arg-type]
        )
    )
    with pytest.raises(TypeError, match=r"'model_responses\[0\]\.response_id'"):
        await store.save_state("job", bad)
    assert await store.version("job") == 0


def test_an_sqlite_database_made_before_the_versions_table_opens_and_keeps_counting(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    agent = bank()
    text = asyncio.run(paused_state(agent)).to_string()
    with sqlite3.connect(path) as conn:  # the layout of earlier releases
        conn.execute(
            """CREATE TABLE agent_run_states (
                state_key TEXT PRIMARY KEY,
                version INTEGER NOT NULL,
                state_json TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            )"""
        )
        conn.execute(
            "INSERT INTO agent_run_states (state_key, version, state_json) VALUES ('job', 7, ?)",
            (text,),
        )
    conn.close()

    async def use() -> None:
        store = SQLiteRunStateStore(path)
        try:
            stored = await store.load_stored_state(agent, "job")
            assert stored is not None
            assert stored.version == 7
            assert await store.delete_state("job", expected_version=7) is True
            assert await store.save_state("job", stored.state) == 8
        finally:
            store.close()
        again = SQLiteRunStateStore(path)  # opening twice is harmless
        try:
            assert await again.version("job") == 8
        finally:
            again.close()

    asyncio.run(use())


async def test_a_postgres_database_made_before_the_versions_table_keeps_counting(
    tmp_path: Path,
) -> None:
    from histcore.sessions.postgres import close_pools
    from histcore.state_store import PostgresRunStateStore
    from tests.support.pg import require_pg, unique

    server = require_pg()
    table = unique("old_states")
    agent = bank()
    text = (await paused_state(agent)).to_string()
    await pg_execute(
        f"""CREATE TABLE {table} (
            state_key TEXT PRIMARY KEY,
            version BIGINT NOT NULL,
            state_json TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )"""
    )
    try:
        await pg_execute(
            f"INSERT INTO {table} (state_key, version, state_json) VALUES ('job', 7, %s)",
            (text,),
        )
        store = PostgresRunStateStore(server.dsn, table=table)
        stored = await store.load_stored_state(agent, "job")
        assert stored is not None
        assert stored.version == 7
        assert await store.delete_state("job") is True
        assert await store.save_state("job", stored.state) == 8
        with pytest.raises(RunStateConflictError):
            await store.save_state("job", stored.state, expected_version=7)
        await close_pools()
    finally:
        await pg_execute(f"DROP TABLE IF EXISTS {table}, {table}_versions")


async def test_an_unreachable_server_fails_in_one_line_within_the_default_timeout() -> None:
    pytest.importorskip("psycopg_pool")  # the postgres extra; no server needed
    from histcore.state_store import PostgresRunStateStore

    store = PostgresRunStateStore("postgresql://someone:s3cret@127.0.0.1:1/nowhere")
    started = asyncio.get_running_loop().time()
    with pytest.raises(
        RunStateStoreError, match=r"cannot connect to PostgreSQL at someone@"
    ) as info:
        await store.version("k")
    # The sessions' 5 s default, not psycopg-pool's 30 s; nothing listens on port 1, so
    # the refusal is immediate and the bound only matters for a server that never answers.
    assert asyncio.get_running_loop().time() - started < 5.5
    assert store._connect_timeout == 5.0
    assert "\n" not in str(info.value)
    assert "s3cret" not in str(info.value)
