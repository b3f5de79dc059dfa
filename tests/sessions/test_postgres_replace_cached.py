"""``PostgresSession.replace_suffix`` on a session that keeps its history, on both table
layouts: the positions come from the kept history (no decode of every row) when it is
current by the layout's freshness rule, the kept history follows the replacement, and
every read still equals a session's without a kept history, whoever else writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.exceptions import SessionError
from tests.support import replacements
from tests.support.examples import examples
from tests.support.pg import Backends, backends, pg_execute, require_psycopg
from tests.support.replacements import user

LAYOUTS = ("histcore", "sdk")


@pytest.fixture(autouse=True)
def _psycopg() -> None:
    require_psycopg()


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends("postgres", tmp_path) as made:
        yield made


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


def count_decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows each decode of PostgresSession is given, from now on."""
    from histcore.sessions.postgres import PostgresSession

    decoded: list[int] = []
    original = PostgresSession._decoded

    def counting(self: Any, rows: list[tuple[int, Any]]) -> Any:
        decoded.append(len(rows))
        return original(self, rows)

    monkeypatch.setattr(PostgresSession, "_decoded", counting)
    return decoded


async def fresh_read(pg: Backends, layout: str, session_id: str = "s") -> list[Any]:
    reader: Any = pg.session(session_id, layout=layout, cache_history=False)
    try:
        return list(await reader.get_items())
    finally:
        reader.close()


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_a_replacement_on_a_kept_history_decodes_no_row(
    pg: Backends, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session: Any = pg.session("s", layout=layout)
    await session.add_items([user(str(number)) for number in range(50)])
    assert len(await session.get_items()) == 50  # the history is kept
    decoded = count_decoded(monkeypatch)
    revision = await session.revision()
    assert await session.replace_suffix(40, [user("summary")], expected_revision=revision)
    assert sum(decoded) == 0
    assert texts(await session.get_items()) == [*map(str, range(40)), "summary"]
    # The next read decoded the new row alone: the kept history followed the replacement.
    assert sum(decoded) == 1
    assert await session.get_items() == await fresh_read(pg, layout)
    assert await session.revision() == revision + 1


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_a_second_writer_between_the_read_and_the_replacement(
    pg: Backends, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session: Any = pg.session("s", layout=layout)
    other: Any = pg.session("s", layout=layout)
    await session.add_items([user(str(number)) for number in range(10)])
    await session.get_items()
    revision = await session.revision()
    await other.add_items([user("o1"), user("o2")])
    # The revision read before the other's write: False, nothing written.
    assert not await session.replace_suffix(5, [user("late")], expected_revision=revision)
    assert texts(await fresh_read(pg, layout)) == [*map(str, range(10)), "o1", "o2"]
    # Read again: the other's appends join the kept history, which still gives the
    # positions (only their two rows decoded).
    decoded = count_decoded(monkeypatch)
    revision = await session.revision()
    assert await session.replace_suffix(11, [user("r")], expected_revision=revision)
    assert sum(decoded) == 2
    assert texts(await session.get_items()) == [*map(str, range(10)), "o1", "r"]
    # A removal by the other: the kept history is stale, every row is decoded instead.
    assert await other.pop_item() == user("r")
    decoded.clear()
    revision = await session.revision()
    assert await session.replace_suffix(0, [user("all")], expected_revision=revision)
    assert sum(decoded) == 11
    assert texts(await session.get_items()) == ["all"]
    assert await session.get_items() == await other.get_items() == await fresh_read(pg, layout)


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_a_failed_replacement_leaves_the_store_and_the_kept_history(
    pg: Backends, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histcore.sessions.postgres import PostgresSession

    session: Any = pg.session("s", layout=layout)
    await session.add_items([user(str(number)) for number in range(8)])
    before = await session.get_items()
    revision = await session.revision()

    async def failing(self: Any, conn: Any, *args: Any) -> Any:
        await conn.execute("SELECT 1 / 0")  # after the removal, in its transaction

    name = "_sdk_append" if layout == "sdk" else "_append"
    with monkeypatch.context() as patched:
        patched.setattr(PostgresSession, name, failing)
        with pytest.raises(SessionError, match="replace_suffix failed"):
            await session.replace_suffix(3, [user("x")], expected_revision=revision)
    assert await fresh_read(pg, layout) == before
    assert await session.get_items() == before
    assert await session.revision() == revision
    assert await session.replace_suffix(3, [user("x")], expected_revision=revision)
    assert texts(await session.get_items()) == ["0", "1", "2", "x"]
    assert await session.get_items() == await fresh_read(pg, layout)


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 4)),
        st.tuples(st.just("replace"), st.integers(0, 12), st.integers(0, 3)),
        st.tuples(st.just("read"), st.none()),
        st.tuples(st.just("limited read"), st.integers(1, 3)),
        st.tuples(st.just("pop"), st.none()),
        st.tuples(st.just("other add"), st.integers(1, 3)),
        st.tuples(st.just("other pop"), st.none()),
        st.tuples(st.just("other replace"), st.integers(0, 12)),
        st.tuples(st.just("corrupt row"), st.none()),
    ),
    max_size=20,
)


@pytest.mark.parametrize("layout", LAYOUTS)
@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=OPERATIONS)
def test_reads_after_replacements_equal_a_fresh_sessions(
    tmp_path: Path, layout: str, operations: list[tuple[Any, ...]]
) -> None:
    async def run() -> None:
        async with backends("postgres", tmp_path) as pg:
            await play(pg)

    async def play(pg: Backends) -> None:
        session: Any = pg.session("s", layout=layout)
        other: Any = pg.session("s", layout=layout)
        column = "message_data" if layout == "sdk" else "message_text"

        async def corrupt() -> None:
            await pg_execute(
                f"INSERT INTO {pg.tables}_messages (session_id, {column}) VALUES ('s', 'not json')"
            )

        await replacements.play(session, other, operations, lambda: fresh_read(pg, layout), corrupt)

    asyncio.run(run())
