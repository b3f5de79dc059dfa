"""``histcore bench --transactions``: each store's compaction write and transcript read
timed at small sizes, checked as it runs, and nothing left behind on PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from histcore.cli.bench.transactions import (
    REPLACED,
    SUMMARY,
    render_transactions,
    run_transactions,
)
from histcore.cli.main import main
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


def test_the_command_prints_the_table_and_writes_the_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_psycopg()
    server = require_pg()
    out = tmp_path / "transactions.json"
    argv = ["bench", "--transactions", "--sizes", "100", "--repeat", "1", "--allow-debug"]
    assert main([*argv, "--scratch-dsn", server.dsn, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("History transactions:")
    assert [row.split("|")[1].strip() for row in printed.splitlines() if row.startswith("| ")][
        1:
    ] == ["memory", "SQLite", "PostgreSQL"]
    samples = json.loads(out.read_text(encoding="utf-8"))["transactions"]
    assert [(sample["store"], sample["size"]) for sample in samples] == [
        ("memory", 100),
        ("SQLite", 100),
        ("PostgreSQL", 100),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--openai-agents"], "separate runs"),
        (["--stores", "sqlite"], "--stores goes with --openai-agents"),
        (["--sizes", "20"], "at least 40 items"),
    ],
)
def test_the_command_refuses_what_does_not_go_with_it(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--transactions", "--allow-debug", *extra]) == 2
    assert message in capsys.readouterr().err


def test_the_pure_package_times_its_sessions_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The pure wheel has no histcore._core: its sessions are timed as they are.
    monkeypatch.setattr("histcore.cli.bench.command.load_rust_engine", lambda: None)
    argv = ["bench", "--transactions", "--sizes", "100", "--repeat", "1"]
    assert main([*argv, "--scratch-dsn", require_pg().dsn]) == 0
    assert "| SQLite | 10^2 |" in capsys.readouterr().out
    assert main(["bench", "--stores", "sqlite"]) == 2
    assert "go with --openai-agents or --transactions" in capsys.readouterr().err
