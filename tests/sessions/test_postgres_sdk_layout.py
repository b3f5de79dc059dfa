"""histcore's ``PostgresSession`` on the tables of the OpenAI Agents SDK's
``SQLAlchemySession`` (made by the SDK itself, in a schema of each test's own): each
session reads the other's rows exactly, under the other's writes, other processes,
hand-written statements, corrupt rows and compaction; revisions count the SDK's writes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.exceptions import SessionError
from tests.support.pg import require_pg, require_psycopg, unique

pytest.importorskip("agents")
pytest.importorskip("sqlalchemy")
pytest.importorskip("asyncpg")


@dataclass
class SdkTables:
    """The SDK's default tables in schema ``schema``: ``url`` for SQLAlchemy (asyncpg),
    ``dsn`` for histcore and psycopg, both with that schema first on the search path."""

    url: str
    dsn: str
    schema: str
    _engines: list[Any] = field(default_factory=list)
    _sessions: list[Any] = field(default_factory=list)

    def sdk(self, session_id: str = "s", **options: Any) -> Any:
        from agents.extensions.memory import SQLAlchemySession

        session = SQLAlchemySession.from_url(
            session_id,
            url=self.url,
            create_tables=True,
            engine_kwargs={"connect_args": {"server_settings": {"search_path": self.schema}}},
            **options,
        )
        self._engines.append(session.engine)
        return session

    def histcore(self, session_id: str = "s", **options: Any) -> Any:
        from histcore.sessions.postgres import PostgresSession

        session = PostgresSession(session_id, self.dsn, **options)
        self._sessions.append(session)
        return session

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            cursor = await conn.execute(sql, params)  # type: ignore[arg-type]
            return await cursor.fetchall() if cursor.description else []

    async def aclose(self) -> None:
        from histcore.sessions.postgres import close_pools

        for session in self._sessions:
            session.close()
        for engine in self._engines:
            await engine.dispose()
        self._sessions.clear()
        self._engines.clear()
        await close_pools()


def _server_urls() -> tuple[str, str, str]:
    """(asyncpg URL, libpq DSN, a new schema) on the test server."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server = require_pg()
    schema = unique("sdk")
    parts = conninfo_to_dict(server.dsn)
    with psycopg.connect(server.dsn, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    dsn = make_conninfo(server.dsn, options=f"-csearch_path={schema}")
    user = parts.get("user", "")
    password = f":{parts['password']}" if parts.get("password") else ""
    host = parts.get("host", "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    url = f"postgresql+asyncpg://{user}{password}@{host}{port}/{parts.get('dbname', '')}"
    return url, dsn, schema


def _drop(schema: str) -> None:
    import psycopg

    with psycopg.connect(require_pg().dsn, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


@contextmanager
def sdk_schema() -> Iterator[SdkTables]:
    """The SDK's tables in a schema of their own on the test server, dropped after."""
    require_psycopg()
    made = SdkTables(*_server_urls())
    try:
        yield made
    finally:
        _drop(made.schema)


@pytest.fixture
def schema_urls() -> Iterator[tuple[str, str, str]]:
    require_psycopg()
    url, dsn, schema = _server_urls()
    try:
        yield url, dsn, schema
    finally:
        _drop(schema)


@pytest.fixture
async def tables(schema_urls: tuple[str, str, str]) -> AsyncIterator[SdkTables]:
    made = SdkTables(*schema_urls)
    try:
        await made.sdk("setup").get_items()  # the SDK makes its tables
        yield made
    finally:
        await made.aclose()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{abs(hash(text)) % 10**8}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


ITEMS = [
    user("héllo ✓ \u2028"),
    answer("bonjour"),
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
    {"type": "function_call_output", "call_id": "c1", "output": '1e16 \\u0000 "q"'},
    user("big " + "x" * 5000),
    {"role": "user", "content": [{"type": "input_text", "text": "deep"}], "n": 1.5, "z": None},
]


# --- both directions ---------------------------------------------------------------------


async def test_the_sdks_rows_read_as_the_sdk_reads_them(tables: SdkTables) -> None:
    sdk = tables.sdk()
    for start in range(0, len(ITEMS), 2):
        await sdk.add_items(ITEMS[start : start + 2])
    expected = await sdk.get_items()
    assert expected == ITEMS
    cached, uncached = tables.histcore(), tables.histcore(cache_history=False)
    for session in (cached, uncached):
        assert await session.get_items() == expected
        for limit in (1, 2, 5, 6, 100):
            assert await session.get_items(limit) == await sdk.get_items(limit)
    # The cache reads the SDK's next batch incrementally, and equals its read again.
    await sdk.add_items([user("later")])
    assert await cached.get_items() == await sdk.get_items()
    assert await cached.get_items(1) == [user("later")]


async def test_histcores_rows_read_as_its_own_in_the_sdk(tables: SdkTables) -> None:
    session = tables.histcore("h")
    await session.add_items(ITEMS[:3])
    await session.add_items(ITEMS[3:])
    sdk = tables.sdk("h")
    assert await sdk.get_items() == ITEMS
    assert await sdk.get_items(2) == ITEMS[-2:]
    # The session row is made and touched as the SDK's writes do.
    (created, updated), *_ = await tables.execute(
        "SELECT created_at, updated_at FROM agent_sessions WHERE session_id = 'h'"
    )
    assert created <= updated
    # The SDK's write lands after histcore's, and pops come back in the same order.
    await sdk.add_items([user("sdk")])
    assert await session.get_items() == [*ITEMS, user("sdk")]
    assert await session.pop_item() == user("sdk")
    assert await sdk.pop_item() == ITEMS[-1]
    assert await session.get_items() == await sdk.get_items() == ITEMS[:-1]


async def test_layout_sdk_makes_the_sdks_own_tables(tables: SdkTables) -> None:
    other_url, other_dsn, other_schema = _server_urls()
    try:
        made = SdkTables(other_url, other_dsn, other_schema)
        try:
            session = made.histcore("m", layout="sdk")
            await session.add_items([user("first")])
            assert await made.sdk("m").get_items() == [user("first")]
            catalog = (
                "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), "
                "a.attnotnull, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = "
                "c.relnamespace LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND "
                "d.adnum = a.attnum WHERE n.nspname = %s AND a.attnum > 0 AND c.relname "
                "IN ('agent_sessions', 'agent_messages', 'idx_agent_messages_session_time') "
                "ORDER BY 1, 2"
            )

            def normal(rows: list[tuple[Any, ...]], schema: str) -> list[tuple[Any, ...]]:
                return [tuple(str(v).replace(schema, "<s>") for v in row) for row in rows]

            ours = normal(await made.execute(catalog, (other_schema,)), other_schema)
            theirs = normal(await tables.execute(catalog, (tables.schema,)), tables.schema)
            assert ours == theirs
        finally:
            await made.aclose()
    finally:
        _drop(other_schema)


async def test_a_layout_asked_for_must_be_the_one_found(tables: SdkTables) -> None:
    with pytest.raises(SessionError, match="has the OpenAI Agents SDK's layout"):
        await tables.histcore(layout="histcore").get_items()
    with pytest.raises(ValueError, match="layout must be one of"):
        tables.histcore(layout="sqlalchemy")
    await tables.histcore(layout="sdk").add_items([user("x")])
    assert await tables.sdk().get_items() == [user("x")]


# --- a model of both sessions on one session id ------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["sdk_add", "hc_add"]), st.integers(1, 3)),
        st.tuples(st.sampled_from(["sdk_pop", "hc_pop", "sdk_clear", "hc_clear"]), st.just(0)),
        st.tuples(st.sampled_from(["hc_read", "sdk_read", "hc_raw_read"]), st.integers(0, 4)),
    ),
    max_size=14,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_interleaved_sessions_match_a_list(
    schema_urls: tuple[str, str, str], ops: list[tuple[str, int]]
) -> None:
    asyncio.run(_run_model(SdkTables(*schema_urls), ops))


async def _run_model(tables: SdkTables, ops: list[tuple[str, int]]) -> None:
    sdk = tables.sdk("m")
    cached, raw = tables.histcore("m"), tables.histcore("m", cache_history=False)
    model: list[Any] = []
    counter = 0
    try:
        await sdk.clear_session()
        for op, n in ops:
            if op.endswith("_add"):
                batch = [user(f"{op} {counter + k}") for k in range(n)]
                counter += n
                await (sdk if op == "sdk_add" else cached).add_items(batch)
                model += batch
            elif op.endswith("_pop"):
                popped = await (sdk if op == "sdk_pop" else cached).pop_item()
                assert popped == (model.pop() if model else None)
            elif op.endswith("_clear"):
                await (sdk if op == "sdk_clear" else cached).clear_session()
                model.clear()
            else:
                reader = {"hc_read": cached, "sdk_read": sdk, "hc_raw_read": raw}[op]
                limit = n or None
                expected = model if limit is None else model[-limit:]
                assert await reader.get_items(limit) == expected
        assert await cached.get_items() == await sdk.get_items() == model
    finally:
        await tables.aclose()


# --- concurrent writers -------------------------------------------------------------------


async def test_concurrent_writers_of_both_libraries(tables: SdkTables) -> None:
    sdk, session, reader = tables.sdk("c"), tables.histcore("c"), tables.histcore("c")

    async def write(target: Any, name: str) -> None:
        for n in range(15):
            await target.add_items([user(f"{name} {n} a"), user(f"{name} {n} b")])

    async def read() -> None:
        for _ in range(30):
            items = await reader.get_items()
            # Batches are never split, and each writer's batches stay in order.
            texts = [item["content"] for item in items]
            for name in ("sdk", "hc"):
                mine = [text for text in texts if text.startswith(name + " ")]
                assert mine == sorted(mine, key=lambda t: (int(t.split()[1]), t[-1]))
                assert len(mine) % 2 == 0
            await asyncio.sleep(0)

    await asyncio.gather(write(sdk, "sdk"), write(session, "hc"), read())
    everything = await sdk.get_items()
    assert len(everything) == 60
    assert await reader.get_items() == everything
    assert await session.get_items() == everything


_WRITER = """
import asyncio, sys
from agents.extensions.memory import SQLAlchemySession

async def main():
    url, schema = sys.argv[1], sys.argv[2]
    session = SQLAlchemySession.from_url("p", url=url, engine_kwargs={
        "connect_args": {"server_settings": {"search_path": schema}}})
    for n in range(40):
        await session.add_items([{"role": "user", "content": f"process {n}"}])
        if n % 10 == 9:
            await session.pop_item()
    await session.engine.dispose()

asyncio.run(main())
"""


async def test_another_process_writing_through_the_sdk(tables: SdkTables) -> None:
    session = tables.histcore("p")
    await session.add_items([user("first")])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _WRITER,
        tables.url,
        tables.schema,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stderr=subprocess.PIPE,
    )
    while process.returncode is None:
        items = await session.get_items()
        assert items[0] == user("first")
        await session.add_items([user("hc")])
        try:
            await asyncio.wait_for(process.wait(), 0.05)
        except asyncio.TimeoutError:
            pass
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert await session.get_items() == await tables.sdk("p").get_items()


# --- changes by hand, corrupt rows --------------------------------------------------------


async def test_hand_written_changes_are_seen_by_the_next_read(tables: SdkTables) -> None:
    sdk, session = tables.sdk("r"), tables.histcore("r")
    await sdk.add_items([user(str(n)) for n in range(5)])
    assert await session.get_items() == await sdk.get_items()
    revision = await session.revision()
    # UPDATE in place: same rows, same ids, new content.
    await tables.execute(
        "UPDATE agent_messages SET message_data = %s WHERE session_id = 'r' AND "
        "id = (SELECT min(id) FROM agent_messages WHERE session_id = 'r')",
        (json.dumps(user("rewritten")),),
    )
    assert (await session.get_items())[0] == user("rewritten")
    assert await session.revision() > revision
    # DELETE then INSERT of the same id and timestamp: same count, same newest id.
    row_id, created = (
        await tables.execute(
            "SELECT id, created_at FROM agent_messages WHERE session_id = 'r' "
            "ORDER BY created_at, id OFFSET 2 LIMIT 1"
        )
    )[0]
    await tables.execute("DELETE FROM agent_messages WHERE id = %s", (row_id,))
    await tables.execute(
        "INSERT INTO agent_messages (id, session_id, message_data, created_at) "
        "VALUES (%s, 'r', %s, %s)",
        (row_id, json.dumps(user("replaced")), created),
    )
    assert await session.get_items() == await sdk.get_items()
    assert (await session.get_items())[2] == user("replaced")
    # A row inserted with an older timestamp sorts where the SDK puts it.
    await tables.execute(
        "INSERT INTO agent_messages (session_id, message_data, created_at) "
        "VALUES ('r', %s, '2000-01-01')",
        (json.dumps(user("ancient")),),
    )
    assert (await session.get_items())[0] == user("ancient")
    assert await session.get_items() == await sdk.get_items()


async def test_corrupt_rows_are_skipped_as_the_sdk_skips_them(tables: SdkTables) -> None:
    sdk, session = tables.sdk("x"), tables.histcore("x")
    await sdk.add_items([user("a")])
    await tables.execute(
        "INSERT INTO agent_messages (session_id, message_data) VALUES ('x', 'not json'), "
        '(\'x\', \'{"role": "user", "content": "trunc\')'
    )
    await sdk.add_items([user("b")])
    await tables.execute(
        "INSERT INTO agent_messages (session_id, message_data) VALUES ('x', '{broken')"
    )
    for reader in (session, tables.histcore("x", cache_history=False)):
        assert await reader.get_items() == await sdk.get_items() == [user("a"), user("b")]
        assert await reader.get_items(1) == await sdk.get_items(1) == [user("b")]
        assert await reader.get_items(2) == await sdk.get_items(2)
    assert len(session.skipped_row_ids) == 3
    # histcore's pop leaves corrupt rows where they are and returns the newest item.
    assert await session.pop_item() == user("b")
    assert await sdk.get_items() == [user("a")]


# --- history transactions -----------------------------------------------------------------


async def test_the_revision_counts_the_sdks_writes(tables: SdkTables) -> None:
    sdk, session = tables.sdk("v"), tables.histcore("v")
    assert await session.revision() == 0
    seen = [0]

    async def changed() -> None:
        now = await session.revision()
        assert now > seen[-1]
        assert await session.revision() == now  # stable while nothing changes
        seen.append(now)

    await sdk.add_items([user("a"), user("b")])
    await changed()
    await session.add_items([user("c")])
    await changed()
    await sdk.pop_item()
    await changed()
    await session.pop_item()
    await changed()
    snapshot = await sdk._get_compaction_snapshot(5)
    assert await snapshot.replace_suffix(0, [user("summary")])
    await changed()
    await sdk.clear_session()
    await changed()
    # op ids: a retried call stores nothing.
    await session.add_items([user("once")], op_id="op-1")
    await session.add_items([user("once")], op_id="op-1")
    assert await sdk.get_items() == [user("once")]


async def test_compaction_on_the_sdk_layout(tables: SdkTables) -> None:
    sdk, session = tables.sdk("k"), tables.histcore("k")
    await sdk.add_items([user(str(n)) for n in range(6)])
    snapshot = await session._get_compaction_snapshot(3)
    assert snapshot.items == [user("3"), user("4"), user("5")]
    assert not snapshot.complete
    assert await snapshot.replace_suffix(1, [user("summary")])
    expected = [user(str(n)) for n in range(4)] + [user("summary")]
    assert await sdk.get_items() == expected
    assert await session.get_items() == expected
    # A snapshot the SDK's write made stale replaces nothing.
    stale = await session._get_compaction_snapshot(2)
    await sdk.add_items([user("new")])
    assert not await stale.replace_suffix(0, [user("lost")])
    # replace_suffix and the SDK's own compaction, read by the other.
    revision = await session.revision()
    assert await session.replace_suffix(1, [user("kept")], expected_revision=revision)
    assert await sdk.get_items() == [user("0"), user("kept")]
    theirs = await sdk._get_compaction_snapshot(1)
    assert await theirs.replace_suffix(0, [user("theirs")])
    assert await session.get_items() == [user("0"), user("theirs")]


async def test_keep_replaced_on_the_sdk_layout(tables: SdkTables) -> None:
    session = tables.histcore("t", keep_replaced=True)
    await session.add_items([user("a"), user("b")])
    await tables.sdk("t").add_items([user("c")])
    assert await session.pop_item() == user("c")
    revision = await session.revision()
    assert await session.replace_suffix(1, [user("B")], expected_revision=revision)
    transcript = await session.transcript()
    assert [entry.item for entry in transcript] == [user("a"), user("b"), user("c"), user("B")]
    assert [entry.removed_revision is None for entry in transcript] == [True, False, False, True]
    assert await tables.sdk("t").get_items() == [user("a"), user("B")]
