"""``histcore bench --store PATH`` / ``--dsn DSN``: the user's own sessions, timed
read-only, one line per session, with clear errors for bad input."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from histcore.cli.bench import store_plan
from histcore.cli.main import main
from histcore.sessions import SQLiteSession
from histcore.testing_histories import generate_history
from tests.support.pg import require_pg, require_psycopg, unique

SIZES = {"alpha": 60, "beta": 40}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    # A debug build (--quick CI, maturin develop) times too, labelled as such.
    code = main(["bench", "--allow-debug", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def sdk_store(path: Path, sizes: dict[str, int] = SIZES) -> Path:
    """An SDK SQLiteSession store holding a generated history per session of ``sizes``."""
    agents = pytest.importorskip("agents")

    async def fill() -> None:
        for seed, (session_id, size) in enumerate(sizes.items()):
            session = agents.SQLiteSession(session_id, str(path))
            try:
                await session.add_items(generate_history(size, seed))
            finally:
                session.close()

    asyncio.run(fill())
    return path


def histcore_store(path: Path) -> Path:
    async def fill() -> None:
        for seed, (session_id, size) in enumerate(SIZES.items()):
            session = SQLiteSession(session_id, path)
            try:
                await session.add_items(generate_history(size, seed))
            finally:
                session.close()

    asyncio.run(fill())
    return path


def session_lines(out: str) -> dict[str, list[str]]:
    """The table's rows: session id -> its cells."""
    found = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] in SIZES:
            found[cells[0]] = cells
    return found


def check_report(out: str, json_path: Path, sessions: dict[str, int]) -> dict[str, Any]:
    lines = session_lines(out)
    assert sorted(lines) == sorted(sessions)
    for session_id, size in sessions.items():
        assert lines[session_id][1] == str(size)
    report = json.loads(json_path.read_text(encoding="utf-8"))
    assert report["format"] == "histcore-bench-store/1"
    assert report["environment"]["histcore"]
    assert report["environment"]["python_implementation"]
    assert [(s["session_id"], s["items"]) for s in report["sessions"]] == list(sessions.items())
    for entry in report["sessions"]:
        assert entry["read"]["histcore"]["median_s"] > 0
        assert entry["read"]["fresh_full_read"] is True
        assert entry["reread_cached"]["histcore"]["median_s"] > 0
        assert entry["prepare_input"]["histcore"]["median_s"] > 0
        assert sorted(entry["passes"]) == sorted(store_plan.PASSES)
    return dict(report)


def test_an_sdk_store_is_timed_per_session_and_left_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = sdk_store(tmp_path / "sdk.db")
    before = fingerprint(path)
    out_json = tmp_path / "out.json"
    code, out, err = run_cli(capsys, "--store", str(path), "--repeat", "1", "--json", str(out_json))
    assert code == 0, err
    report = check_report(out, out_json, SIZES)
    for entry in report["sessions"]:
        assert entry["read"]["sdk"]["median_s"] > 0
        assert entry["prepare_input"]["sdk"]["median_s"] > 0
        assert entry["turn"] is None
    assert report["store"]["kind"] == "sqlite"
    assert "read (fresh, full)" in out
    assert fingerprint(path) == before


def test_a_histcore_store_with_chosen_sessions_and_an_sdk_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("agents")
    path = histcore_store(tmp_path / "histcore.db")
    before = fingerprint(path)
    out_json = tmp_path / "out.json"
    code, out, err = run_cli(
        capsys,
        *("--store", str(path), "--session", "beta", "--repeat", "1"),
        *("--openai-agents", "--json", str(out_json)),
    )
    assert code == 0, err
    report = check_report(out, out_json, {"beta": SIZES["beta"]})
    (entry,) = report["sessions"]
    assert entry["turn"]["plain"]["median_s"] > 0
    assert entry["turn"]["installed"]["median_s"] > 0
    assert "SDK turn" in out
    assert fingerprint(path) == before


def test_sessions_as_a_comma_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = histcore_store(tmp_path / "histcore.db")
    code, out, err = run_cli(
        capsys, "--store", str(path), "--session", "beta,alpha", "--repeat", "1", "--no-reference"
    )
    assert code == 0, err
    assert sorted(session_lines(out)) == ["alpha", "beta"]
    assert "SDK columns empty" in out


def error_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (out, err)
    assert out == ""
    return err


def test_bad_stores_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.db"
    assert "no such file" in error_of(capsys, "--store", str(missing))
    assert not missing.exists()
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, just some text\n" * 100)
    assert "not a readable SQLite database" in error_of(capsys, "--store", str(text))
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE things (x)")
    conn.close()
    assert "not a session store (it has no agent_messages table)" in error_of(
        capsys, "--store", str(other)
    )
    empty = tmp_path / "empty.db"
    asyncio.run(_touch(empty))
    assert "holds no sessions" in error_of(capsys, "--store", str(empty))


async def _touch(path: Path) -> None:
    session = SQLiteSession("nobody", path)
    try:
        await session.get_items()  # makes the tables, writes no row
    finally:
        session.close()


def test_an_unknown_session_is_named_with_those_that_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = histcore_store(tmp_path / "histcore.db")
    before = fingerprint(path)
    err = error_of(capsys, "--store", str(path), "--session", "alpha,gamma")
    assert "no session 'gamma'" in err
    assert "'alpha', 'beta'" in err
    assert fingerprint(path) == before


def test_options_that_do_not_go_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = histcore_store(tmp_path / "histcore.db")
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--store", str(path), "--dsn", "postgresql://localhost/x"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    err = error_of(capsys, "--store", str(path), "--openai-agents", "--sizes", "1000")
    assert "--sizes cannot be used with --store/--dsn" in err
    assert "--functions" in error_of(capsys, "--store", str(path), "--functions", "dedupe_keys")
    assert "need --store PATH or --dsn DSN" in error_of(capsys, "--session", "alpha")
    err = error_of(capsys, "--store", str(path), "--json", str(tmp_path / "nowhere" / "x.json"))
    assert "--json: directory" in err


def test_a_postgres_store_is_only_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_psycopg()
    server = require_pg()
    prefix = unique("bench_store")
    tables = (f"{prefix}_sessions", f"{prefix}_messages")
    asyncio.run(_fill_postgres(server.dsn, tables))
    try:
        before = _pg_rows(server.dsn, tables)
        out_json = tmp_path / "out.json"
        code, out, err = run_cli(
            capsys,
            *("--dsn", server.dsn, "--sessions-table", tables[0], "--messages-table", tables[1]),
            *("--repeat", "1", "--json", str(out_json)),
        )
        assert code == 0, err
        report = check_report(out, out_json, SIZES)
        assert report["store"]["kind"] == "postgresql"
        assert all(entry["read"]["sdk"] is None for entry in report["sessions"])
        assert _pg_rows(server.dsn, tables) == before
        err = error_of(
            capsys,
            *("--dsn", server.dsn, "--sessions-table", tables[0], "--messages-table", tables[1]),
            *("--session", "nobody"),
        )
        assert "no session 'nobody'" in err
    finally:
        _pg_execute(server.dsn, f"DROP TABLE IF EXISTS {tables[1]}, {tables[0]}")


async def _fill_postgres(
    dsn: str, tables: tuple[str, str], sizes: dict[str, int] | None = None
) -> None:
    from histcore.sessions.postgres import PostgresSession, close_pools

    try:
        for seed, (session_id, size) in enumerate((sizes or SIZES).items()):
            session = PostgresSession(
                session_id, dsn, sessions_table=tables[0], messages_table=tables[1]
            )
            try:
                await session.add_items(generate_history(size, seed))
            finally:
                session.close()
    finally:
        await close_pools()


def _pg_execute(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def _pg_rows(dsn: str, tables: tuple[str, str]) -> list[Any]:
    sessions = _pg_execute(dsn, f"SELECT * FROM {tables[0]} ORDER BY session_id")
    messages = _pg_execute(dsn, f"SELECT id, session_id, message_text FROM {tables[1]} ORDER BY id")
    return [sessions, messages, os.environ.get("CI")]


# --- live and hostile stores ------------------------------------------------------------


def _append_after_reads(monkeypatch: pytest.MonkeyPatch, path: Path, times: int) -> list[int]:
    """After each of the store's first ``times`` reads of a session, the application
    appends a message to it (as a live writer between the bench's two reads would)."""
    from histcore.sessions._store_readers.sqlite import SQLiteReader

    read_rows = SQLiteReader.read_rows
    appended: list[int] = []

    def reading(self: SQLiteReader, session_id: str) -> Any:
        rows = read_rows(self, session_id)
        if len(appended) < times:
            with sqlite3.connect(path) as conn:
                cursor = conn.execute(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                    (session_id, json.dumps({"role": "user", "content": "meanwhile"})),
                )
                appended.append(int(cursor.lastrowid or 0))
            conn.close()
        return rows

    monkeypatch.setattr(SQLiteReader, "read_rows", reading)
    return appended


def test_a_session_appended_to_while_it_is_read_is_timed_not_a_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sdk_store(tmp_path / "sdk.db")
    appended = _append_after_reads(monkeypatch, path, times=1)
    out_json = tmp_path / "out.json"
    code, _, err = run_cli(
        capsys, "--store", str(path), "--session", "alpha", "--repeat", "1", "--json", str(out_json)
    )
    assert code == 0, err
    assert len(appended) == 1
    # Timed on the session as it was once it stopped changing: the message appended too.
    (entry,) = json.loads(out_json.read_text(encoding="utf-8"))["sessions"]
    assert entry["items"] == SIZES["alpha"] + 1
    assert not any("changed" in note for note in entry["notes"])


def test_a_session_that_keeps_changing_is_noted_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sdk_store(tmp_path / "sdk.db")
    appended = _append_after_reads(monkeypatch, path, times=100)
    code, out, err = run_cli(capsys, "--store", str(path), "--session", "alpha", "--repeat", "1")
    assert code == 0, err
    assert "differs" not in err
    (note,) = [line for line in out.splitlines() if "changed while it was read" in line]
    assert note.startswith("note: session 'alpha': the session changed while it was read, 3 ")
    assert f"rows: {SIZES['alpha']} -> {SIZES['alpha'] + 1} -> " in note
    assert len(appended) == 4


def test_a_histcore_read_that_differs_from_a_still_store_is_a_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check that the live-writer tolerance must not lose: a wrong read still fails.
    path = histcore_store(tmp_path / "histcore.db")
    original = SQLiteSession.get_items

    async def one_short(self: SQLiteSession, limit: int | None = None) -> Any:
        return (await original(self, limit))[:-1]

    monkeypatch.setattr(SQLiteSession, "get_items", one_short)
    code, out, err = run_cli(capsys, "--store", str(path), "--session", "alpha", "--repeat", "1")
    assert code == 1, (out, err)
    assert "histcore's session read differs from the rows as stored (59 items read, 60" in err


HOSTILE = {
    # message_data as bytes no UTF-8 decoder takes, stored as TEXT
    "not_utf8": ["CAST(X'7b2278223affff7d' AS TEXT)", "'12'"],
    # valid JSON, not objects: the SDK reads them as items, histcore's session skips them
    "not_objects": ["'12'", "'1.5'"],
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_rows_that_are_not_items_are_named_and_the_rest_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = sdk_store(tmp_path / "sdk.db")
    with sqlite3.connect(path) as conn:
        for value in HOSTILE[kind]:
            conn.execute(
                f"INSERT INTO agent_messages (session_id, message_data) VALUES ('alpha', {value})"
            )
        hostile = [
            row_id
            for (row_id,) in conn.execute(
                "SELECT id FROM agent_messages ORDER BY id DESC LIMIT ?", (len(HOSTILE[kind]),)
            )
        ][::-1]
    conn.close()
    before = fingerprint(path)
    out_json = tmp_path / "out.json"
    code, out, err = run_cli(capsys, "--store", str(path), "--repeat", "1", "--json", str(out_json))
    assert code == 0, err
    report = check_report(out, out_json, SIZES)
    alpha = report["sessions"][0]
    assert alpha["rows"] == SIZES["alpha"] + len(hostile)
    assert [row["row_id"] for row in alpha["skipped_rows"]] == hostile
    problems = [row["problem"] for row in alpha["skipped_rows"]]
    if kind == "not_utf8":
        assert problems[0].startswith("not valid JSON (not valid UTF-8")
    assert problems[-1] == "JSON but not an item (a number, not an object)"
    assert alpha["read"]["sdk"]["median_s"] > 0
    (note,) = [line for line in out.splitlines() if "skips" in line]
    assert note.startswith(f"note: session 'alpha': {len(hostile)} row(s) histcore's session skips")
    assert f"row {hostile[0]}: " in note or f"rows {hostile[0]}, {hostile[1]}: " in note
    assert report["sessions"][1]["skipped_rows"] == []
    assert fingerprint(path) == before
