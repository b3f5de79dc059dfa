"""``histcore doctor --dsn`` and ``histcore bench --dsn`` on the OpenAI Agents SDK's
``SQLAlchemySession`` tables: the doctor's repair is read by a histcore
``PostgresSession`` that cached the damaged history, and the bench times histcore's
session on those tables without changing them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_bench_store import check_report
from tests.cli.test_bench_store import run_cli as bench_cli
from tests.cli.test_doctor import call, output, report_json, user
from tests.sessions.test_postgres_sdk_layout import SdkTables, sdk_schema

pytest.importorskip("agents")
pytest.importorskip("sqlalchemy")
pytest.importorskip("asyncpg")


@pytest.fixture
def tables() -> Iterator[SdkTables]:
    with sdk_schema() as made:
        yield made


async def _fill(tables: SdkTables, sessions: dict[str, list[Any]]) -> None:
    try:
        for session_id, items in sessions.items():
            await tables.sdk(session_id).add_items(items)
    finally:
        await tables.aclose()


def test_a_cached_session_on_the_sdk_tables_reads_the_doctors_repair(tables: SdkTables) -> None:
    asyncio.run(_fill(tables, {"s": [user("q"), call("c1", 1), output("c1"), call("c1", 2)]}))

    async def read_fix_read() -> tuple[list[Any], list[Any], list[Any]]:
        session = tables.histcore("s")
        try:
            first = await session.get_items()
            code, _ = await asyncio.to_thread(report_json, "--dsn", tables.dsn, "--fix")
            assert code == 0
            return first, await session.get_items(), await tables.sdk("s").get_items()
        finally:
            await tables.aclose()

    first, second, sdk = asyncio.run(read_fix_read())
    assert len(first) == 4
    assert second == sdk == [user("q"), call("c1", 2), output("c1")]
    # Fixed: a second check finds nothing to repair.
    code, report = report_json("--dsn", tables.dsn)
    assert code == 0, report


def test_bench_times_histcores_session_on_the_sdk_tables(
    tables: SdkTables, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histcore.testing_histories import generate_history

    sizes = {"alpha": 30, "beta": 20}
    asyncio.run(
        _fill(
            tables,
            {name: generate_history(size, n) for n, (name, size) in enumerate(sizes.items())},
        )
    )
    dump = "SELECT id, session_id, message_data, created_at FROM agent_messages ORDER BY id"
    before = asyncio.run(tables.execute(dump))
    out_json = tmp_path / "out.json"
    code, out, err = bench_cli(
        capsys, "--dsn", tables.dsn, "--repeat", "1", "--json", str(out_json)
    )
    assert code == 0, err
    report = check_report(out, out_json, sizes)
    assert report["store"]["kind"] == "postgresql"
    assert asyncio.run(tables.execute(dump)) == before
    assert json.loads(out_json.read_text(encoding="utf-8"))["sessions"]
