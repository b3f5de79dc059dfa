"""``histcore bench --transactions``: each store's compaction write and transcript read
timed at small sizes, checked as it runs, and nothing left behind on PostgreSQL."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from histcore.cli.bench.transactions import (
    REPLACED,
    SUMMARY,
    render_transactions,
    run_transactions,
)
from tests.support.pg import pg_execute, require_pg, require_psycopg


def test_every_store_and_size_is_timed_and_rendered(tmp_path: Path) -> None:
    progress = io.StringIO()
    results = run_transactions([100, 300], 2, str(tmp_path), None, progress)
    assert [(timing.store, timing.size) for timing in results] == [
        ("memory", 100),
        ("memory", 300),
        ("SQLite", 100),
        ("SQLite", 300),
    ]
    for timing in results:
        for seconds in (
            timing.replace_suffix,
            timing.clear_and_add,
            timing.transcript,
            timing.get_items,
        ):
            assert 0 < seconds < 30
    assert progress.getvalue().splitlines()[0] == "memory, 10^2 items"
    table = render_transactions(results)
    assert f"replacing the last {REPLACED} items by {SUMMARY}" in table
    assert table.count("\n| SQLite | ") == 2
    assert "| memory | 10^2 |" in table


def test_postgres_is_timed_and_its_tables_dropped(tmp_path: Path) -> None:
    require_psycopg()
    server = require_pg()
    count = "SELECT count(*) FROM pg_tables WHERE tablename LIKE %s"
    pattern = ("histcore\\_bench\\_%",)
    before = asyncio.run(pg_execute(count, pattern))
    results = run_transactions([100], 1, str(tmp_path), server.dsn, io.StringIO())
    assert [timing.store for timing in results] == ["memory", "SQLite", "PostgreSQL"]
    assert asyncio.run(pg_execute(count, pattern)) == before


def test_a_size_smaller_than_the_replaced_part_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least"):
        run_transactions([REPLACED - 1], 1, str(tmp_path), None, io.StringIO())
