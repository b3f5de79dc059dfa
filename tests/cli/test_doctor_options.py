"""``histcore doctor`` at scale and when things fail: ``--dry-run``, ``--quiet``,
progress on stderr, the summary's advice, argument checks, ``--help``, and a
PostgreSQL server that does not answer."""

from __future__ import annotations

import asyncio
import glob
import logging
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from histcore.cli.main import main
from tests.cli.test_doctor import (
    add_raw_row,
    call,
    output,
    report_json,
    rows,
    run_cli,
    session_entry,
    user,
    write_store,
)


@pytest.fixture
def store(tmp_path: Any) -> str:
    return os.path.join(tmp_path, "store.db")


# --- --dry-run ---------------------------------------------------------------------------


def test_dry_run_lists_the_rows_each_repair_would_delete_and_changes_nothing(
    store: str,
) -> None:
    write_store(
        store,
        {
            "a": [user("q"), call("c1", 1), output("c1", "x"), call("c1", 2), output("c1", "y")],
            "b": [user("q"), output("c9"), output("c8"), output("c7"), user("r")],
            "c": [user("fine")],
        },
    )
    before = rows(store)
    code, out, err = run_cli(store, "--dry-run")
    assert code == 1
    assert err == ""
    assert "  --fix would remove 2 row(s) (2 duplicate(s)): row ids 3-4" in out
    assert "  --fix would give 1 row(s) their latest content: row ids 2" in out
    assert "  --fix would remove 3 row(s) (3 in broken units): row ids 7-9" in out
    assert "nothing was changed" in out.splitlines()[-1]
    assert rows(store) == before
    assert glob.glob(store + ".bak-*") == [], "no backup either"

    code, report = report_json(store, "--dry-run")
    assert report["dry_run"] is True
    assert report["backup"] is None
    entry = session_entry(report, "a")
    assert (entry["fix"], entry["removed_rows"], entry["rewritten_rows"]) == (
        "planned",
        [3, 4],
        [2],
    )
    assert session_entry(report, "c")["fix"] == "clean"
    # What it listed is what --fix then does.
    code, report = report_json(store, "--fix")
    assert session_entry(report, "a")["removed_rows"] == [3, 4]
    assert session_entry(report, "b")["removed_rows"] == [7, 8, 9]


# --- --quiet and progress ---------------------------------------------------------------


def test_quiet_prints_problems_only(store: str) -> None:
    write_store(store, {"a": [user("q")], "b": [user("q"), output("c9")], "c": [user("x")]})
    code, out, err = run_cli(store, "--quiet")
    assert code == 1
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("session 'b' (2 rows): 1 tool output without a call")
    assert not any("'a'" in line or "'c'" in line or "checked" in line for line in lines)
    assert lines[-1].startswith("1 of 3 session(s) with problems")
    assert run_cli(store, "--quiet", "--session", "a") == (0, "", "")


def test_a_large_store_reports_progress_on_stderr(store: str) -> None:
    write_store(store, {"big": [user(f"m{n}") for n in range(100_001)], "small": [user("q")]})
    code, out, err = run_cli(store)
    assert code == 0
    lines = err.splitlines()
    assert lines[0] == "histcore doctor: checking 100002 rows in 2 session(s)"
    assert lines[-1].startswith("histcore doctor: done: 100002 rows in 2 session(s), ")
    assert "checking" not in out, "progress stays off stdout"
    assert run_cli(store, "--quiet")[2] == "", "--quiet: no progress"


def test_a_small_store_reports_no_progress(store: str) -> None:
    write_store(store, {"s": [user("q")]})
    assert run_cli(store)[2] == ""


# --- the summary's advice ------------------------------------------------------------------


def test_when_only_invalid_rows_are_left_the_summary_names_drop_invalid_rows(
    store: str,
) -> None:
    write_store(store, {"s": [user("q"), call("c1"), output("c1")]})
    add_raw_row(store, "s", "{not json")
    code, out, _ = run_cli(store)
    summary = out.splitlines()[-1]
    assert code == 1
    assert "--fix --drop-invalid-rows" in summary
    assert "run with --fix to repair" not in summary
    code, out, _ = run_cli(store, "--fix")
    assert code == 1
    assert "--drop-invalid-rows deletes them" in out.splitlines()[-1]
    assert run_cli(store, "--fix", "--drop-invalid-rows")[0] == 0


# --- arguments and --help -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan", "inf", "soon"])
def test_a_busy_timeout_that_is_no_wait_is_refused(
    store: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_store(store, {"s": [user("q")]})
    with pytest.raises(SystemExit) as exited:
        main(["doctor", store, "--busy-timeout", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --busy-timeout" in err
    assert "seconds" in err


def test_help_has_no_markup_and_names_no_file_the_wheel_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = capsys.readouterr().out
    assert "``" not in text
    assert "docs/" not in text  # no path: the documentation is not installed
    assert "--dry-run" in text
    assert "--quiet" in text
    assert "--restore BACKUP" in text


def test_help_starts_with_examples_and_points_to_the_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = capsys.readouterr().out
    description = text.split("\n\n", 2)[1].splitlines()
    assert description[:3] == [
        "examples:",
        "  histcore doctor app.db         check a SQLite session store; nothing is written",
        "  histcore doctor app.db --fix   repair it, after writing a backup (app.db.bak-<time>);",
    ]
    # The rules themselves are in docs/doctor.md: one line points there.
    assert "doctor.md in histcore's docs" in text
    assert "tool outputs stored before their call" not in text
    assert len(text.splitlines()) < 55


# --- a PostgreSQL server that does not answer -------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_the_doctor_gives_up_on_a_silent_server_within_5_seconds(silent_server: int) -> None:
    pytest.importorskip("psycopg")
    started = time.monotonic()
    code, out, err = run_cli("--dsn", f"postgresql://someone@127.0.0.1:{silent_server}/db")
    assert time.monotonic() - started < 6.5
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert "cannot connect to PostgreSQL" in err


def test_a_postgres_session_gives_up_within_5_seconds_in_one_line(
    silent_server: int, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("psycopg_pool")
    from histcore.exceptions import SessionError
    from histcore.sessions.postgres import PostgresSession, close_pools

    async def attempt() -> str:
        session = PostgresSession("s", f"postgresql://someone@127.0.0.1:{silent_server}/db")
        try:
            await session.get_items()
        except SessionError as exc:
            return str(exc)
        finally:
            await close_pools()
        raise AssertionError("no error")

    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        message = asyncio.run(attempt())
    assert time.monotonic() - started < 6.5
    assert "\n" not in message, message
    assert "within 5s" in message
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
