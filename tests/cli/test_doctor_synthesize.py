"""``histcore doctor --fix --dangling synthesize``: a call whose output is missing keeps
its unit and gets the engine's synthesized output right after it (new rows in the
middle of a session), on every store layout the doctor fixes; the store then reads,
through its own session class, as ``repair_input(..., dangling="synthesize")`` says."""

from __future__ import annotations

import asyncio
import glob
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import histcore.items
from histcore.items import LOST_OUTPUT_TEXT
from tests.cli.test_doctor import (
    _tool_only_dedupe,
    answer,
    call,
    output,
    report_json,
    run_cli,
    session_entry,
    tool_histories,
    user,
    write_store,
)
from tests.cli.test_doctor_postgres import PgStore, pg  # noqa: F401 (a fixture)
from tests.support.examples import examples
from tests.support.sqlite import query

agents = pytest.importorskip("agents")

#: Two calls that lost their output (a function call and a custom tool call), one
#: answered, one a shell call (its output cannot say so in text: dropped either way),
#: and a last call awaiting approval.
DAMAGED: list[dict[str, Any]] = [
    user("a"),
    call("c1"),
    user("b"),
    call("c2"),
    output("c2"),
    {"type": "reasoning", "id": "rs_1", "summary": []},
    call("c3", kind="custom_tool_call"),
    answer("sent"),
    call("c4", kind="shell_call"),
    user("c"),
    call("c5"),
]


def expected(items: list[Any], dangling: str) -> list[Any]:
    """The engine's answer, with the last call awaiting approval kept (as the doctor
    keeps it: docs/doctor.md)."""
    repaired = histcore.items.repair_input(items[:-1], history=items, dangling=dangling)
    return [*repaired, items[-1]]


def test_the_expectation_synthesizes_two_outputs() -> None:
    synthesized = [
        i for i in expected(DAMAGED, "synthesize") if i.get("output") == LOST_OUTPUT_TEXT
    ]
    assert [i["call_id"] for i in synthesized] == ["c1", "c3"]
    assert [i["type"] for i in synthesized] == ["function_call_output", "custom_tool_call_output"]


# --- SQLite: the SDK's SQLiteSession and AsyncSQLiteSession, histcore's SQLiteSession ----


def _sdk_sqlite(path: str) -> Any:
    return agents.SQLiteSession("s", path)


def _sdk_async_sqlite(path: str) -> Any:
    pytest.importorskip("aiosqlite")
    from agents.extensions.memory import AsyncSQLiteSession

    return AsyncSQLiteSession("s", path)


def _histcore_sqlite(path: str) -> Any:
    from histcore.sessions import SQLiteSession

    return SQLiteSession("s", path)


async def _close(session: Any) -> None:
    closing = session.close()
    if asyncio.iscoroutine(closing):
        await closing


def _write(make: Callable[[str], Any], path: str, items: list[Any]) -> None:
    async def write() -> None:
        session = make(path)
        try:
            await session.add_items(items)
        finally:
            await _close(session)

    asyncio.run(write())


def _read(make: Callable[[str], Any], path: str) -> list[Any]:
    async def read() -> list[Any]:
        session = make(path)
        try:
            return list(await session.get_items())
        finally:
            await _close(session)

    return asyncio.run(read())


def _all_rows(path: str) -> list[Any]:
    return query(path, "SELECT * FROM agent_messages ORDER BY id")


SQLITE_MAKERS = pytest.mark.parametrize(
    "make",
    [_sdk_sqlite, _sdk_async_sqlite, _histcore_sqlite],
    ids=["sdk-sqlite", "sdk-async", "histcore"],
)


@SQLITE_MAKERS
def test_sqlite_synthesize_reads_back_as_the_engine_says(
    tmp_path: Any, make: Callable[[str], Any]
) -> None:
    path = os.path.join(tmp_path, "s.db")
    _write(make, path, DAMAGED)
    original = _all_rows(path)
    code, report = report_json(path, "--fix", "--dangling", "synthesize")
    assert code == 0, report
    entry = session_entry(report, "s")
    assert entry["fix"] == "fixed"
    assert entry["synthesized"] == ["c1", "c3"]
    assert entry["appended_rows"] == 2
    assert report["dangling"] == "synthesize"
    assert _read(make, path) == expected(DAMAGED, "synthesize")
    # Nothing is left to do, with either option.
    for dangling in ("synthesize", "drop"):
        code, again = report_json(path, "--fix", "--dangling", dangling)
        assert code == 0, again
        assert again["backup"] is None
    # The restore gives back the original rows exactly (ids, text, created_at).
    code, _out, err = run_cli("--restore", report["backup"], path)
    assert code == 0, err
    assert _all_rows(path) == original
    assert _read(make, path) == DAMAGED


@SQLITE_MAKERS
def test_sqlite_drop_stays_the_default(tmp_path: Any, make: Callable[[str], Any]) -> None:
    path = os.path.join(tmp_path, "s.db")
    _write(make, path, DAMAGED)
    code, report = report_json(path, "--fix")
    assert code == 0
    assert report["dangling"] == "drop"
    entry = session_entry(report, "s")
    assert entry["synthesized"] == []
    assert entry["appended_rows"] == 0
    assert _read(make, path) == expected(DAMAGED, "drop")
    assert not any(i.get("output") == LOST_OUTPUT_TEXT for i in _read(make, path))


def test_dry_run_lists_what_would_be_inserted(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")
    write_store(path, {"s": DAMAGED})
    before = _all_rows(path)
    code, out, _ = run_cli(path, "--dry-run", "--dangling", "synthesize")
    assert code == 1
    assert "--fix would insert 2 synthesized output(s), for calls c1, c3" in out
    assert "appending 2 row(s)" in out
    code, report = report_json(path, "--dry-run", "--dangling", "synthesize")
    entry = session_entry(report, "s")
    assert entry["fix"] == "planned"
    assert entry["synthesized"] == ["c1", "c3"]
    assert _all_rows(path) == before


def test_dangling_needs_fix_and_takes_two_options(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "s.db")
    write_store(path, {"s": DAMAGED})
    code, _, err = run_cli(path, "--dangling", "synthesize")
    assert code == 2
    assert "--dangling needs --fix" in err
    with pytest.raises(SystemExit):
        run_cli(path, "--fix", "--dangling", "keep")


def test_advanced_store_refuses_synthesize_in_one_line(tmp_path: Any) -> None:
    from agents.extensions.memory import AdvancedSQLiteSession

    path = os.path.join(tmp_path, "advanced.db")

    async def write() -> None:
        session = AdvancedSQLiteSession(session_id="s", db_path=path, create_tables=True)
        try:
            await session.add_items(DAMAGED)
        finally:
            session.close()

    asyncio.run(write())
    before = _all_rows(path)
    code, _out, err = run_cli(path, "--fix", "--dangling", "synthesize")
    assert code == 2
    assert err.count("\n") == 1
    assert "message_structure" in err
    assert "--dangling drop" in err
    assert _all_rows(path) == before
    assert glob.glob(path + ".bak-*") == []


# --- PostgreSQL: histcore's layout, and the SDK's SQLAlchemySession layout --------------


def test_postgres_histcore_layout_synthesizes(pg: PgStore) -> None:  # noqa: F811
    from histcore.sessions.postgres import PostgresSession, close_pools

    async def session_call(work: Callable[[Any], Any]) -> Any:
        session = PostgresSession(
            "s", pg.dsn, sessions_table=pg.sessions, messages_table=pg.messages
        )
        try:
            return await work(session)
        finally:
            session.close()
            await close_pools()

    asyncio.run(session_call(lambda s: s.add_items(DAMAGED)))
    original = pg.rows("s")
    code, report = report_json(*pg.args, "--fix", "--dangling", "synthesize")
    assert code == 0, report
    assert session_entry(report, "s")["synthesized"] == ["c1", "c3"]
    assert asyncio.run(session_call(lambda s: s.get_items())) == expected(DAMAGED, "synthesize")
    # The jsonb copy holds each row's item, the new rows' too.
    assert all(json.loads(text) == data for _, text, data in pg.rows("s"))
    code, again = report_json(*pg.args, "--fix", "--dangling", "synthesize")
    assert code == 0
    assert again["backup"] is None
    # The backup table holds the original rows exactly.
    (backup,) = pg.backups()
    saved = pg.execute(f"SELECT id, message_text, message_data FROM {backup} ORDER BY id")
    assert [tuple(row) for row in saved] == original


@pytest.fixture
def sdk_tables() -> Iterator[Any]:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("asyncpg")
    from tests.sessions.test_postgres_sdk_layout import sdk_schema

    with sdk_schema() as made:
        yield made


def test_postgres_sdk_layout_synthesized_rows_sort_where_they_belong(sdk_tables: Any) -> None:
    async def write() -> None:
        try:
            await sdk_tables.sdk("s").add_items(DAMAGED)
            # Rows stamped in the future: new rows must still sort after them (the SDK
            # reads in created_at, id order).
            await sdk_tables.execute(
                "UPDATE agent_messages SET created_at = created_at + interval '1 day'"
            )
        finally:
            await sdk_tables.aclose()

    async def read() -> list[Any]:
        try:
            return list(await sdk_tables.sdk("s").get_items())
        finally:
            await sdk_tables.aclose()

    asyncio.run(write())
    dsn = ["--dsn", sdk_tables.dsn]
    code, report = report_json(*dsn, "--fix", "--dangling", "synthesize")
    assert code == 0, report
    assert session_entry(report, "s")["synthesized"] == ["c1", "c3"]
    assert asyncio.run(read()) == expected(DAMAGED, "synthesize")
    code, again = report_json(*dsn, "--fix", "--dangling", "synthesize")
    assert code == 0
    assert again["backup"] is None


# --- generated histories ------------------------------------------------------------


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(items=tool_histories(), dangling=st.sampled_from(["synthesize", "drop"]))
def test_fixed_store_reads_as_the_engines_answer(
    tmp_path: Any, items: list[dict[str, Any]], dangling: str
) -> None:
    # Ending with a user message: no call awaits its output, so the engine's answer is
    # plain repair_input of the deduped items (the doctor's first step).
    items = [*items, user("end")]
    path = os.path.join(tmp_path, f"h{abs(hash(json.dumps(items)))}{dangling}.db")
    for old in glob.glob(path + "*"):
        os.remove(old)
    write_store(path, {"s": items})
    original = _all_rows(path)
    code, report = report_json(path, "--fix", "--dangling", dangling)
    assert code == 0, report
    engine = histcore.items.repair_input(_tool_only_dedupe(items), history=items, dangling=dangling)
    assert _read(_histcore_sqlite, path) == engine
    assert [json.loads(row[2]) for row in _all_rows(path)] == engine
    synthesized = [i["call_id"] for i in engine if i.get("output") == LOST_OUTPUT_TEXT]
    assert session_entry(report, "s")["synthesized"] == synthesized
    code, again = report_json(path, "--fix", "--dangling", dangling)
    assert code == 0
    assert again["backup"] is None
    if report["backup"] is not None:
        assert run_cli("--restore", report["backup"], path)[0] == 0
        assert _all_rows(path) == original
