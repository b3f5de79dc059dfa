"""The installed ``AsyncSQLiteSession.get_items`` and ``SQLAlchemySession.get_items``
return exactly what the SDK's own read returns at that moment, whoever wrote between.

Differential: each read of an installed session object is compared with the SDK's
original ``get_items`` run then on another object of the same store, while other
objects, raw SQL (UPDATE in place, DELETE then INSERT, corrupt and back-dated rows),
another process, the SDK's compaction (``replace_suffix``), pops and clears change it.
Store kinds: aiosqlite files, SQLAlchemy on SQLite (aiosqlite), and on PostgreSQL
through asyncpg and psycopg (skipped without ``HISTCORE_PG_DSN``; a table per test).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("agents", reason="openai-agents is not installed")
pytest.importorskip("aiosqlite", reason="aiosqlite is not installed")
pytest.importorskip("sqlalchemy", reason="SQLAlchemy is not installed")

from agents.extensions.memory import AsyncSQLiteSession, SQLAlchemySession

import histcore.openai_agents as accelerator
from histcore.openai_agents import _async_sqlite_read, _patches, _sqlalchemy_read
from histcore.openai_agents._session_read import CHECK_ROWS_VARIABLE
from tests.support.strategies import json_values

PG_DSN = os.environ.get("HISTCORE_PG_DSN", "")
KINDS = ["async_sqlite", "sqlalchemy_sqlite", "sqlalchemy_asyncpg", "sqlalchemy_psycopg"]
ODD_ROWS = ['{"type": "message", "content": NaN}', '{"big": 123456789012345678901234567890}',
            "not json", '"just text"', "[1, [2, {}]]"]  # fmt: skip

# Writes in another process: one command a line on stdin, "ok" or an error on stdout.
WORKER = r"""
import asyncio, json, sys
from agents.extensions.memory import AsyncSQLiteSession, SQLAlchemySession

async def main():
    for line in sys.stdin:
        c = json.loads(line)
        if c["kind"] == "async_sqlite":
            session = AsyncSQLiteSession(c["session"], c["path"])
        else:
            session = SQLAlchemySession.from_url(
                c["session"], url=c["url"], sessions_table=c["sessions"],
                messages_table=c["messages"], create_tables=True)
        try:
            if c["op"] == "add":
                await session.add_items(c["items"])
            elif c["op"] == "pop":
                await session.pop_item()
            elif c["op"] == "clear":
                await session.clear_session()
            print("ok", flush=True)
        except Exception as exc:
            print("error", type(exc).__name__, exc, flush=True)
        finally:
            if c["kind"] == "async_sqlite":
                await session.close()
            else:
                await session.engine.dispose()

asyncio.run(main())
"""


def _url(driver: str) -> str:
    scheme, rest = PG_DSN.split("://", 1)
    assert scheme in ("postgresql", "postgres"), scheme
    return f"postgresql+{driver}://{rest}"


class Store:
    """One store of a kind: makes SDK session objects on it and writes it raw."""

    def __init__(self, kind: str, path: str) -> None:
        self.kind, self.path = kind, path
        self.suffix = uuid.uuid4().hex[:10]
        self.sessions_table = f"s_{self.suffix}" if kind.endswith("pg") else "agent_sessions"
        self.messages_table = f"m_{self.suffix}" if kind.endswith("pg") else "agent_messages"
        self.url = {
            "sqlalchemy_sqlite": f"sqlite+aiosqlite:///{path}",
            "sqlalchemy_asyncpg": _url("asyncpg") if PG_DSN else "",
            "sqlalchemy_psycopg": _url("psycopg") if PG_DSN else "",
        }.get(kind, "")
        self.opened: list[Any] = []
        self.cls: Any = AsyncSQLiteSession if kind == "async_sqlite" else SQLAlchemySession

    @property
    def pg(self) -> bool:
        return self.kind in ("sqlalchemy_asyncpg", "sqlalchemy_psycopg")

    def session(self, session_id: str = "s", cls: Any = None, keep: bool = True) -> Any:
        cls = cls or self.cls
        if self.kind == "async_sqlite":
            made = cls(session_id, self.path)
        else:
            made = cls.from_url(
                session_id,
                url=self.url,
                create_tables=True,
                sessions_table=self.sessions_table,
                messages_table=self.messages_table,
            )
        if keep:
            self.opened.append(made)
        return made

    async def closed(self, *sessions: Any) -> None:
        for session in sessions:
            if self.kind == "async_sqlite":
                await session.close()
            else:
                await session.engine.dispose()

    async def close(self) -> None:
        await self.closed(*self.opened)
        if self.pg:
            self.raw(f"DROP TABLE IF EXISTS {self.messages_table}, {self.sessions_table}")

    def raw(self, sql: str, params: Any = ()) -> list[Any]:
        """Run ``sql`` (``?`` placeholders) on a connection of its own, committed."""
        if self.pg:
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                cursor = conn.execute(sql.replace("?", "%s"), params)
                return cursor.fetchall() if cursor.description else []
        with closing(sqlite3.connect(self.path)) as conn, conn:
            return conn.execute(sql, params).fetchall()

    def ids(self) -> list[int]:
        order = "id" if self.kind == "async_sqlite" else "created_at, id"
        rows = self.raw(
            f"SELECT id FROM {self.messages_table} WHERE session_id = 's' ORDER BY {order}"
        )
        return [row[0] for row in rows]

    def worker_command(self, **command: Any) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "url": self.url,
            "sessions": self.sessions_table,
            "messages": self.messages_table,
            "session": "s",
            **command,
        }


class Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, command: dict[str, Any]) -> None:
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
        self.process.wait(timeout=60)
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


# The SDK's own reads (captured while nothing is installed).
accelerator.uninstall()
PLAIN = {
    AsyncSQLiteSession: AsyncSQLiteSession.get_items,
    SQLAlchemySession: SQLAlchemySession.get_items,
}


def needs_pg(kind: str) -> None:
    if kind.endswith("pg") and not PG_DSN:
        pytest.skip("HISTCORE_PG_DSN is not set")


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


def texts(prefix: str, count: int) -> list[Any]:
    return [{"type": "message", "text": f"{prefix}{n}"} for n in range(count)]


class World:
    """Sessions of one store: two installed readers, writers, and a reference object
    the SDK's own read runs on."""

    def __init__(self, store: Store, worker: Worker | None) -> None:
        self.store, self.worker = store, worker
        self.readers = [store.session(), store.session()]
        self.other = store.session()
        self.reference = store.session()
        self.elsewhere = store.session("t")

    async def start(self) -> World:
        """The tables made (raw SQL needs them)."""
        if self.store.kind == "async_sqlite":
            await self.other._get_connection()
        else:
            await self.other._ensure_tables()
        return self

    async def read(self, reader: int, limit: int | None = None) -> None:
        got = await self.readers[reader].get_items(limit)
        expected = await PLAIN[self.store.cls](self.reference, limit)
        assert repr(got) == repr(expected)
        scrambled(got)

    async def add(self, who: str, items: list[Any]) -> None:
        if who == "process":
            if self.worker is not None and _jsonable(items):
                self.worker.run(self.store.worker_command(op="add", items=items))
            return
        if who == "raw":
            await self.readers[0].add_items(items[:1])  # the sessions row
            for item in items:
                self.store.raw(
                    f"INSERT INTO {self.store.messages_table} (session_id, message_data) "
                    "VALUES ('s', ?)",
                    (json.dumps(item),),
                )
            return
        await {"reader": self.readers[0], "other": self.other}[who].add_items(items)

    async def pop(self, who: str) -> None:
        if who == "process":
            if self.worker is not None:
                self.worker.run(self.store.worker_command(op="pop"))
            return
        await {"reader": self.readers[1], "other": self.other}[who].pop_item()

    async def clear(self, who: str) -> None:
        if who == "process":
            if self.worker is not None:
                self.worker.run(self.store.worker_command(op="clear"))
            return
        await {"reader": self.readers[0], "other": self.other}[who].clear_session()

    async def odd(self, index: int) -> None:
        await self.other.add_items([{"type": "message", "before": "odd"}])
        self.store.raw(
            f"INSERT INTO {self.store.messages_table} (session_id, message_data) VALUES ('s', ?)",
            (ODD_ROWS[index],),
        )

    async def update(self, index: int) -> None:
        """A row's text changed in place by raw SQL (noted as the doctor notes it, for
        the SQLite file, whose reads assume it)."""
        ids = self.store.ids()
        if not ids:
            return
        row = ids[index % len(ids)]
        table = self.store.messages_table
        if self.store.kind == "async_sqlite":
            from histcore.sessions._sqlite_schema import note_rewrite

            with closing(sqlite3.connect(self.store.path)) as conn, conn:
                conn.execute(
                    f"UPDATE {table} SET message_data = ? WHERE id = ?",
                    (json.dumps({"type": "message", "updated": row}), row),
                )
                note_rewrite(conn, table, "s")
            return
        self.store.raw(
            f"UPDATE {table} SET message_data = ? WHERE id = ?",
            (json.dumps({"type": "message", "updated": row}), row),
        )

    async def swap(self, index: int) -> None:
        """One row deleted and one appended: the count stays."""
        ids = self.store.ids()
        if not ids:
            return
        table = self.store.messages_table
        self.store.raw(f"DELETE FROM {table} WHERE id = ?", (ids[index % len(ids)],))
        self.store.raw(
            f"INSERT INTO {table} (session_id, message_data) VALUES ('s', ?)",
            (json.dumps({"type": "message", "swapped": index}),),
        )

    async def backdate(self, index: int) -> None:
        """A new row whose created_at sorts it before older ones (SQLAlchemy orders by
        it; the SQLite session by id)."""
        await self.other.add_items([{"type": "message", "before": "backdated"}])
        self.store.raw(
            f"INSERT INTO {self.store.messages_table} (session_id, message_data, created_at) "
            "VALUES ('s', ?, ?)",
            (json.dumps({"type": "message", "backdated": index}), f"200{index}-01-01 00:00:00"),
        )

    async def compact(self, start: int) -> None:
        """The SDK's compaction: the newest rows replaced by a summary."""
        snapshot = await self.other._get_compaction_snapshot(4)
        if snapshot is not None and snapshot.items:
            start = start % len(snapshot.items)
            await snapshot.replace_suffix(start, [{"type": "message", "summary": start}])

    async def add_elsewhere(self, items: list[Any]) -> None:
        await self.elsewhere.add_items(items)


def _jsonable(items: list[Any]) -> bool:
    try:
        json.dumps(items, allow_nan=False)
    except ValueError:
        return False
    return True


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    needs_pg(request.param)
    return str(request.param)


def make_store(kind: str, tmp_path: Any) -> Store:
    return Store(kind, str(tmp_path / f"{uuid.uuid4().hex[:8]}.db"))


def decoded_rows(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The rows of each batch decode the read of ``module`` makes."""
    calls: list[int] = []
    real = module.decode_with

    def counted(rows: list[Any], *args: Any) -> list[Any]:
        calls.append(len(rows))
        return real(rows, *args)

    monkeypatch.setattr(module, "decode_with", counted)
    return calls


# --- the installed read is histcore's ---------------------------------------------------


def test_install_replaces_both_reads_and_uninstall_restores_them() -> None:
    originals = dict(PLAIN)
    installation = accelerator.install()
    where = set(installation.replaced)
    assert "agents.extensions.memory.async_sqlite_session.AsyncSQLiteSession.get_items" in where
    assert "agents.extensions.memory.sqlalchemy_session.SQLAlchemySession.get_items" in where
    assert AsyncSQLiteSession.get_items is not originals[AsyncSQLiteSession]
    assert SQLAlchemySession.get_items is not originals[SQLAlchemySession]
    assert AsyncSQLiteSession.get_items.__wrapped__ is originals[AsyncSQLiteSession]
    accelerator.uninstall()
    assert AsyncSQLiteSession.get_items is originals[AsyncSQLiteSession]
    assert SQLAlchemySession.get_items is originals[SQLAlchemySession]


def test_a_group_whose_extra_is_missing_is_left_alone_silently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = _patches.importlib.util.find_spec
    monkeypatch.setattr(
        _patches.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "aiosqlite" else real(name, *a),
    )
    installation = accelerator.install()
    assert "async_session_read" not in installation.skipped
    assert AsyncSQLiteSession.get_items is PLAIN[AsyncSQLiteSession]
    assert SQLAlchemySession.get_items is not PLAIN[SQLAlchemySession]


def test_async_sqlite_reads_only_new_rows(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = decoded_rows(monkeypatch, _async_sqlite_read)

    async def run() -> None:
        store = make_store("async_sqlite", tmp_path)
        world = await World(store, None).start()
        try:
            await world.add("other", texts("a", 50))
            accelerator.install()
            await world.read(0)
            await world.add("other", texts("b", 2))
            await world.read(0)
            await world.read(0)
            await world.pop("other")
            await world.read(0)
        finally:
            await store.close()

    asyncio.run(run())
    # 50 rows, then the 2 new ones, nothing (unchanged), then the 51 left after a pop.
    assert calls == [50, 2, 51]


def test_sqlalchemy_decodes_in_one_batch(
    kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "async_sqlite":
        pytest.skip("SQLAlchemy only")
    calls = decoded_rows(monkeypatch, _sqlalchemy_read)

    async def run() -> None:
        store = make_store(kind, tmp_path)
        world = await World(store, None).start()
        try:
            await world.add("other", texts("a", 30))
            await world.odd(2)
            accelerator.install()
            deserialized = 0
            real = SQLAlchemySession._deserialize_item

            async def counting(self: Any, item: str) -> Any:
                nonlocal deserialized
                deserialized += 1
                return await real(self, item)

            await world.read(0)
            # A subclass that decodes otherwise gets the SDK's read, row by row.
            sub = type("Sub", (SQLAlchemySession,), {"_deserialize_item": counting})
            session = store.session(cls=sub)
            assert await session.get_items() == await PLAIN[SQLAlchemySession](world.reference)
            assert deserialized == 32
        finally:
            await store.close()

    asyncio.run(run())
    assert calls == [32]


@pytest.mark.parametrize("kind_name", ["sqlalchemy_asyncpg", "sqlalchemy_psycopg"])
def test_postgres_reads_only_new_rows(
    kind_name: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_pg(kind_name)
    calls = decoded_rows(monkeypatch, _sqlalchemy_read)

    async def run() -> None:
        store = make_store(kind_name, tmp_path)
        world = await World(store, None).start()
        try:
            await world.add("other", texts("a", 30))
            accelerator.install()
            await world.read(0)
            await world.add("other", texts("b", 2))
            await world.read(0)
            await world.read(0)
            await world.update(3)  # an UPDATE in place: read whole
            await world.read(0)
            await world.backdate(1)  # new rows, one sorting first: read whole
            await world.read(0)
            await world.pop("other")
            await world.read(0)
        finally:
            await store.close()

    asyncio.run(run())
    assert calls == [30, 2, 32, 34, 33]


def test_fallbacks_take_the_sdk_read(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A limit, a custom row_factory, an open transaction, a rebound json.loads."""
    calls = decoded_rows(monkeypatch, _async_sqlite_read)

    async def run() -> None:
        store = make_store("async_sqlite", tmp_path)
        world = await World(store, None).start()
        try:
            await world.add("other", texts("a", 5))
            accelerator.install()
            await world.read(0, limit=2)
            conn = await world.readers[0]._get_connection()
            conn.row_factory = sqlite3.Row
            got = await world.readers[0].get_items()
            assert [dict(item) for item in got] == texts("a", 5)
            conn.row_factory = None
            await conn.execute("BEGIN")
            await world.read(0)
            await conn.rollback()
            loads = json.loads
            monkeypatch.setattr(json, "loads", lambda text, **kw: {"seen": loads(text, **kw)})
            got = await world.readers[1].get_items()
            assert got[0] == {"seen": texts("a", 1)[0]}
        finally:
            await store.close()

    asyncio.run(run())
    assert calls == []


def test_raw_update_in_place_is_seen_when_rows_are_checked(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Un-noted UPDATE of an old row: the SQLite read's blind spot, seen with the check."""
    monkeypatch.setenv(CHECK_ROWS_VARIABLE, "1")

    async def run() -> None:
        store = make_store("async_sqlite", tmp_path)
        world = await World(store, None).start()
        try:
            await world.add("other", texts("a", 5))
            accelerator.install()
            await world.read(0)
            first = store.ids()[0]
            store.raw(
                "UPDATE agent_messages SET message_data = ? WHERE id = ?",
                (json.dumps({"type": "message", "same": "size"}), first),
            )
            await world.add("other", texts("b", 1))
            await world.read(0)
        finally:
            await store.close()

    asyncio.run(run())


# --- attacks ----------------------------------------------------------------------------

items_strategy = st.lists(json_values(max_leaves=4), min_size=1, max_size=3).map(
    lambda values: [{"type": "message", "value": value} for value in values]
)
ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("read"), st.integers(0, 1)),
        st.tuples(st.just("read"), st.integers(0, 1)),
        st.tuples(st.just("read"), st.integers(0, 1), st.integers(0, 3)),
        st.tuples(
            st.just("add"), st.sampled_from(["reader", "other", "raw", "process"]), items_strategy
        ),
        st.tuples(st.just("pop"), st.sampled_from(["reader", "other", "process"])),
        st.tuples(st.just("clear"), st.sampled_from(["reader", "other", "process"])),
        st.tuples(st.just("odd"), st.integers(0, len(ODD_ROWS) - 1)),
        st.tuples(st.just("update"), st.integers(0, 5)),
        st.tuples(st.just("swap"), st.integers(0, 5)),
        st.tuples(st.just("backdate"), st.integers(0, 5)),
        st.tuples(st.just("compact"), st.integers(0, 5)),
        st.tuples(st.just("add_elsewhere"), items_strategy),
    ),
    max_size=12,
)


async def run_ops(store: Store, ops: list[Any], worker: Worker | None) -> None:
    accelerator.install()
    world = await World(store, worker).start()
    try:
        for op, *args in ops:
            await getattr(world, op)(*args)
        for reader in range(len(world.readers)):
            await world.read(reader)
    finally:
        await store.close()


@pytest.mark.parametrize("kind_name", KINDS)
@settings(
    max_examples=int(os.environ.get("HISTCORE_STORE_READ_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops_strategy)
def test_installed_reads_equal_the_sdks_under_every_change(
    kind_name: str, ops: list[Any], tmp_path: Any, worker: Worker
) -> None:
    needs_pg(kind_name)
    asyncio.run(run_ops(make_store(kind_name, tmp_path), ops, worker))


EVERY_ATTACK = [
    ("add", "reader", texts("a", 3)),
    ("read", 0),
    ("add", "process", texts("p", 2)),
    ("read", 0),
    ("add", "raw", texts("r", 2)),
    ("odd", 2),
    ("read", 1),
    ("pop", "other"),
    ("read", 0),
    ("update", 1),
    ("read", 0),
    ("swap", 0),
    ("read", 0),
    ("backdate", 3),
    ("read", 1, 2),
    ("read", 0),
    ("compact", 1),
    ("read", 0),
    ("add_elsewhere", texts("t", 2)),
    ("pop", "process"),
    ("read", 0),
    ("clear", "process"),
    ("read", 0),
    ("add", "other", texts("z", 2)),
    ("clear", "reader"),
    ("read", 1),
]


def test_every_attack_in_turn(kind: str, tmp_path: Any, worker: Worker) -> None:
    asyncio.run(run_ops(make_store(kind, tmp_path), EVERY_ATTACK, worker))


def in_order(part: list[Any], whole: list[Any]) -> bool:
    """Whether ``part`` is ``whole`` with some items left out."""
    rest = iter(whole)
    return all(any(item == other for other in rest) for item in part)


def test_threads_each_with_a_loop_read_what_was_appended(kind: str, tmp_path: Any) -> None:
    """Appends only, from threads each running its own loop and session objects: every
    installed read is a prefix of the final history (on PostgreSQL, where created_at is
    a transaction's start, the final history with some items left out), and the last
    read equals the SDK's."""
    store = make_store(kind, tmp_path)
    accelerator.install()
    seen: list[list[Any]] = []
    errors: list[BaseException] = []

    def run(thread: int) -> None:
        async def body() -> None:
            writer, reader = store.session(keep=False), store.session(keep=False)
            try:
                for n in range(8):
                    await writer.add_items(texts(f"t{thread}.{n}.", 2))
                    seen.append(await reader.get_items())
            finally:
                await store.closed(writer, reader)

        try:
            asyncio.run(body())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors

    async def final() -> None:
        try:
            reader, reference = store.session(), store.session()
            history = await PLAIN[store.cls](reference)
            assert await reader.get_items() == history
            assert len(history) == 48
            for got in seen:
                assert in_order(got, history) if store.pg else got == history[: len(got)]
        finally:
            await store.close()

    asyncio.run(final())
