"""``SQLiteSession.replace_suffix`` on a session that keeps its history: the positions
come from the kept history (no decode of every row) and the kept history follows the
replacement, and every read still equals a fresh session's, whoever else writes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.sessions import SQLiteSession
from histcore.sessions._sqlite_store import SQLiteStore
from tests.support import replacements
from tests.support.examples import examples
from tests.support.replacements import user


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


async def test_a_replacement_on_a_kept_history_decodes_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = SQLiteSession("s", tmp_path / "store.db")
    await session.add_items([user(str(number)) for number in range(50)])
    assert len(await session.get_items()) == 50  # the history is kept
    decoded: list[str] = []
    original = SQLiteStore._decode_query

    def counting(self: SQLiteStore, sql: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(sql)
        return original(self, sql, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "_decode_query", counting)
    revision = await session.revision()
    assert await session.replace_suffix(40, [user("summary")], expected_revision=revision)
    assert decoded == []
    assert texts(await session.get_items()) == [*map(str, range(40)), "summary"]
    # The read found the replacement's rows in the kept history too: nothing re-read.
    assert decoded == []
    session.close()


def _raw(path: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(sql, params)
    conn.close()


CORRUPT = "(session_id, message_data) VALUES ('s', 'not json')"
# Not among them: another connection's UPDATE in place, which a kept history does not
# see (docs/design.md, "The SQLite store").
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 4)),
        st.tuples(st.just("replace"), st.integers(0, 12), st.integers(0, 3)),
        st.tuples(st.just("read"), st.none()),
        st.tuples(st.just("pop"), st.none()),
        st.tuples(st.just("other add"), st.integers(1, 3)),
        st.tuples(st.just("other replace"), st.integers(0, 12)),
        st.tuples(st.just("corrupt row"), st.none()),
    ),
    max_size=25,
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=OPERATIONS)
def test_reads_after_replacements_equal_a_fresh_sessions(
    tmp_path_factory: pytest.TempPathFactory, operations: list[tuple[Any, ...]]
) -> None:
    path = tmp_path_factory.mktemp("replace") / "store.db"

    async def run() -> None:
        session = SQLiteSession("s", path)
        other = SQLiteSession("s", path)

        async def corrupt() -> None:
            _raw(path, f"INSERT INTO agent_messages {CORRUPT}")

        try:
            await replacements.play(session, other, operations, fresh_read, corrupt)
        finally:
            session.close()
            other.close()

    async def fresh_read() -> list[Any]:
        reader = SQLiteSession("s", path, cache_history=False)
        try:
            return await reader.get_items()
        finally:
            reader.close()

    asyncio.run(run())
