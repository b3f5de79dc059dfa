"""``histcore doctor`` on damaged and busy stores: rows it cannot read are reported, not
fatal; a full disk reports itself; a lock held by another process says so quickly; a
fix holds the write lock one session at a time, so live writers keep going."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from histcore.cli.doctor import check, read, sqlite
from histcore.cli.doctor.command import EXIT_LOCKED
from histcore.sessions._store_readers import sqlite as store_sqlite
from tests.cli.test_doctor import (
    call,
    output,
    report_json,
    run_cli,
    session_entry,
    user,
)
from tests.cli.test_doctor_rules import decoded, make_store, stored
from tests.support.sqlite import connected, query


@pytest.fixture
def path(tmp_path: Any) -> str:
    return os.path.join(tmp_path, "store.db")


# --- rows it cannot read ---------------------------------------------------------------


def test_a_row_nested_too_deeply_is_reported_not_a_crash(path: str) -> None:
    deep = "[" * 100000 + "]" * 100000
    make_store(path, {"s": [user("q"), deep, call("c1"), call("c1")], "t": [user("x")]})
    code, report = report_json(path)
    entry = session_entry(report, "s")
    assert code == 1
    assert entry["problems"]["invalid_json"] == 1
    assert entry["problems"]["duplicate_calls"] == 1
    assert entry["details"]["invalid_json_reasons"] == {"2": "nested deeper than 256 levels"}
    code, out, err = run_cli(path, "--fix")
    assert code == 1
    assert err == ""
    assert "not valid JSON (nested deeper than 256 levels): row ids 2" in out
    assert [data for _, data in stored(path, "s")][1] == deep, "left as it was"
    assert decoded_valid(path, "s") == [user("q"), call("c1")]


def decoded_valid(path: str, session_id: str) -> list[Any]:
    found = []
    for _, data in stored(path, session_id):
        try:
            found.append(json.loads(data))
        except (ValueError, RecursionError):
            continue
    return found


def test_an_item_deeper_than_the_sessions_read_is_not_an_item(path: str) -> None:
    # json.loads reads 400 levels, but no session does (MAX_DEPTH, 256): the doctor
    # follows the sessions, so the rows are not valid JSON here either.
    nested: Any = "leaf"
    for _ in range(400):
        nested = [nested]
    deep_output = output("c1", "x") | {"output": nested}
    make_store(path, {"s": [user("q"), call("c1"), deep_output, deep_output]})
    code, report = report_json(path, "--fix")
    assert code == 1
    entry = session_entry(report, "s")
    assert entry["details"]["invalid_json_reasons"] == {
        "3": "nested deeper than 256 levels",
        "4": "nested deeper than 256 levels",
    }
    assert entry["fix"] == "left"
    assert len(stored(path, "s")) == 4, "the deep rows are left where they are"


def test_a_row_that_is_not_utf8_is_reported_and_the_store_checked(path: str) -> None:
    make_store(path, {"s": [user("q"), call("c1"), call("c1")], "t": [user("x"), output("c9")]})
    with connected(path) as connection:
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', CAST(? AS TEXT))",
            (b'{"role": "user", "content": "\xff\xfe"}',),
        )
    code, report = report_json(path)
    assert code == 1, "one bad row no longer refuses the whole store"
    entry = session_entry(report, "s")
    assert entry["problems"]["invalid_json"] == 1
    assert entry["problems"]["duplicate_calls"] == 1
    assert entry["details"]["invalid_json_reasons"] == {"6": "not valid UTF-8"}
    assert session_entry(report, "t")["problems"]["output_without_call"] == 1
    code, report = report_json(path, "--fix")
    assert code == 1
    assert session_entry(report, "s")["fix"] == "fixed"
    assert query(path, "SELECT CAST(message_data AS BLOB) FROM agent_messages WHERE id = 6") == [
        (b'{"role": "user", "content": "\xff\xfe"}',)
    ], "the row is left byte for byte"
    code, report = report_json(path, "--fix", "--drop-invalid-rows")
    assert code == 0
    assert stored(path, "s") == [
        (1, json.dumps(user("q"))),
        (2, json.dumps(call("c1"))),
    ]


def test_a_session_id_that_is_not_utf8_is_reported(path: str) -> None:
    make_store(path, {"s": [user("q")]})
    with connected(path) as connection:
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (CAST(? AS TEXT), ?)",
            (b"\xff", json.dumps(user("x"))),
        )
    code, report = report_json(path)
    assert code == 1
    assert report["rows_without_session"] == {"not_utf8": [2]}
    assert [s["session_id"] for s in report["sessions"]] == ["s"]


def test_a_blob_row_is_read_and_written_back_as_a_blob(path: str) -> None:
    make_store(path, {"s": [user("q"), call("c1", 1), output("c1")]})
    with connected(path) as connection:
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (json.dumps(call("c1", 2)).encode(),),
        )
    code, _report = report_json(path, "--fix")
    assert code == 0
    assert query(path, "SELECT typeof(message_data) FROM agent_messages ORDER BY id") == [
        ("text",),
        ("blob",),
        ("text",),
    ], "the call's first row took the latest row's text, storage class and all"
    assert decoded(path, "s") == [user("q"), call("c1", 2), output("c1")]


# --- errors ----------------------------------------------------------------------------


def test_a_directory_is_not_a_missing_file(tmp_path: Any) -> None:
    code, _, err = run_cli(str(tmp_path))
    assert code == 2
    assert "is a directory, not a SQLite database file" in err
    assert "no such file" not in err


def test_drop_invalid_rows_needs_fix(path: str) -> None:
    make_store(path, {"s": [user("q")]})
    code, _, err = run_cli(path, "--drop-invalid-rows")
    assert code == 2
    assert "--drop-invalid-rows needs --fix" in err


def test_a_full_disk_is_reported_as_such(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    big = call("c1", 2) | {"arguments": json.dumps({"text": "x" * 50000})}
    make_store(path, {"a": [user("q"), call("c1", 1), output("c1"), big]})
    before = stored(path, "a")
    pages = query(path, "PRAGMA page_count")[0][0]
    real_connect = sqlite3.connect

    def full_disk(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        # The doctor's own read-write connection finds the disk full at today's size.
        connection = real_connect(database, *args, **kwargs)
        if "mode=rw" in str(database):
            connection.execute(f"PRAGMA max_page_count = {pages}")
        return connection

    monkeypatch.setattr(sqlite3, "connect", full_disk)
    code, out, err = run_cli(path, "--fix", "--json")
    monkeypatch.undo()
    assert code == 2
    assert "database or disk is full" in err
    assert "cannot rollback" not in err
    assert "database or disk is full" in json.loads(out)["error"]
    assert stored(path, "a") == before


# --- locks and live writers -------------------------------------------------------------


@pytest.fixture
def journal_store(path: str) -> str:
    make_store(path, {"s": [user("q"), call("c1"), output("c1"), output("c1")]})
    query(path, "PRAGMA journal_mode = DELETE")
    return path


@pytest.fixture
def wal_store(path: str) -> str:
    make_store(path, {"s": [user("q"), call("c1"), output("c1"), output("c1")]})
    query(path, "PRAGMA journal_mode = WAL")
    return path


@contextmanager
def hold(path: str, how: str) -> Iterator[None]:
    """Another process's connection holding a lock (``BEGIN EXCLUSIVE`` / ``IMMEDIATE``)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(how)
        yield
    finally:
        connection.execute("ROLLBACK")
        connection.close()


def test_a_store_locked_by_a_writer_says_so_within_a_second(journal_store: str) -> None:
    with hold(journal_store, "BEGIN EXCLUSIVE"):
        started = time.monotonic()
        code, out, err = run_cli(journal_store, "--json")
        elapsed = time.monotonic() - started
    assert code == 3
    assert elapsed < 1.0
    assert "locked by another process" in err
    assert json.loads(out) | {"error": ""} == {
        "path": journal_store,
        "error": "",
        "exit_code": 3,
        "locked": True,
    }


def test_a_fix_waits_a_second_at_most_for_a_writer(wal_store: str) -> None:
    before = stored(wal_store, "s")
    with hold(wal_store, "BEGIN IMMEDIATE"):
        assert run_cli(wal_store)[0] == 1, "a WAL store is checked while a writer writes"
        started = time.monotonic()
        code, _, err = run_cli(wal_store, "--fix")
        elapsed = time.monotonic() - started
    assert code == 3
    assert elapsed < 1.0
    assert "locked by another process" in err
    assert stored(wal_store, "s") == before


def test_busy_timeout_waits_longer(journal_store: str) -> None:
    holder = sqlite3.connect(journal_store, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.8, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        code, _, _ = run_cli(journal_store, "--fix", "--busy-timeout", "5")
    finally:
        release.join()
        holder.close()
    assert code == 0
    assert decoded(journal_store, "s") == [user("q"), call("c1"), output("c1")]


def test_each_session_is_repaired_in_its_own_transaction(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store(path, {"a": [call("c1"), call("c1")], "b": [call("c2"), call("c2")]})
    before_b = stored(path, "b")
    real_stored = sqlite.SQLiteStore._stored
    reads: list[str] = []

    def stored_then_fail(self: sqlite.SQLiteStore, session_id: str) -> list[tuple[int, Any]]:
        # b's repair re-reads b under the write lock, applies, reads back: fail there.
        if session_id == "b":
            reads.append(json.dumps(decoded(path, "a")))  # another process reads a
            if len(reads) == 2:
                raise read.DoctorError("disk on fire")
        return real_stored(self, session_id)

    monkeypatch.setattr(sqlite.SQLiteStore, "_stored", stored_then_fail)
    monkeypatch.setattr(check, "BATCH_SECONDS", 0.0)  # one session per transaction
    code, out, err = run_cli(path, "--fix", "--json")
    assert code == 2
    assert "disk on fire" in err
    assert "sessions repaired before the error: 'a'" in err
    assert reads == [json.dumps([call("c1")])] * 2, "a was committed before b's repair"
    assert decoded(path, "a") == [call("c1")]
    assert stored(path, "b") == before_b, "b's own repair was rolled back"
    error = json.loads(out)
    assert error["repaired"] == ["a"]
    assert error["backup"]


def test_a_lock_that_stops_a_later_repair_exits_locked_with_what_was_repaired(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = path + ".2"
    for where in (path, other):
        make_store(where, {"a": [call("c1"), call("c1")], "b": [call("c2"), call("c2")]})
    real_stored = sqlite.SQLiteStore._stored

    def stored_then_locked(self: sqlite.SQLiteStore, session_id: str) -> list[tuple[int, Any]]:
        # b's repair, once a's is committed, waits in vain for a lock.
        if session_id == "b" and decoded(self.name, "a") == [call("c1")]:
            raise read.StoreLocked("database is locked (waited 0.0 s)")
        return real_stored(self, session_id)

    monkeypatch.setattr(sqlite.SQLiteStore, "_stored", stored_then_locked)
    monkeypatch.setattr(check, "BATCH_SECONDS", 0.0)
    code, out, err = run_cli(path, "--fix", "--json")
    assert code == EXIT_LOCKED
    assert "sessions repaired before the error: 'a'" in err
    error = json.loads(out)
    assert error["locked"] is True
    assert error["repaired"] == ["a"]
    assert error["backup"]
    with pytest.raises(read.RepairStopped) as stopped:
        check.check_store(other, fix=True)
    assert isinstance(stopped.value, read.StoreLocked), "a lock stays a lock"
    assert isinstance(stopped.value.error, read.StoreLocked)
    assert stopped.value.repaired == ["a"]
    assert stopped.value.backup


def test_a_repair_that_does_not_read_back_as_planned_is_rolled_back(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store(path, {"s": [user("q"), call("c1"), call("c1"), output("c1")]})
    before = stored(path, "s")
    real_stored = sqlite.SQLiteStore._stored
    reads: list[str] = []

    def stored_with_a_row_too_many(
        self: sqlite.SQLiteStore, session_id: str
    ) -> list[tuple[int, Any]]:
        # The repair reads the session under the write lock, applies, reads back: the
        # read-back shows one row more than the repair left.
        rows = list(real_stored(self, session_id))
        reads.append(session_id)
        return rows + rows[-1:] if len(reads) == 2 else rows

    monkeypatch.setattr(sqlite.SQLiteStore, "_stored", stored_with_a_row_too_many)
    code, _, err = run_cli(path, "--fix")
    assert code == 2
    assert "session 's' did not read back as its repair planned" in err
    assert stored(path, "s") == before, "the repair's transaction was rolled back"


def test_a_session_written_during_the_fix_is_left_for_the_next_run(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store(path, {"a": [call("c1"), call("c1")], "b": [call("c2"), call("c2")]})
    real_backup = sqlite.SQLiteStore.write_backup

    def backup_then_write(self: sqlite.SQLiteStore, session_ids: Any) -> str:
        written = real_backup(self, session_ids)
        with connected(path) as connection:  # a live writer appends to b
            connection.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('b', ?)",
                (json.dumps(user("new")),),
            )
        return written

    monkeypatch.setattr(sqlite.SQLiteStore, "write_backup", backup_then_write)
    code, report = report_json(path, "--fix")
    assert code == 1
    assert session_entry(report, "a")["fix"] == "fixed"
    entry = session_entry(report, "b")
    assert entry["fix"] == "skipped"
    assert "changed while the doctor ran" in entry["reason"]
    assert decoded(path, "b") == [call("c2"), call("c2"), user("new")]
    monkeypatch.undo()
    assert report_json(path, "--fix")[0] == 0, "the next run repairs it"


@pytest.mark.parametrize("journal", ["WAL", "DELETE"])
def test_a_live_writer_is_never_blocked_for_long(path: str, journal: str) -> None:
    # 300 sessions of 100 rows, each with duplicates to fix. Held for the whole fix,
    # the write lock would stall the writer for seconds; held one session at a time,
    # the writer waits milliseconds.
    sessions = {
        f"s{n}": [user("q"), *[x for i in range(33) for x in (call(f"c{i}"), output(f"c{i}"))]]
        + [output("c0")] * 33
        for n in range(300)
    }
    make_store(path, sessions)
    query(path, f"PRAGMA journal_mode = {journal}")
    waits: list[float] = []
    done = threading.Event()

    def writer() -> None:
        connection = sqlite3.connect(path, isolation_level=None, timeout=30)
        try:
            while not done.is_set():
                started = time.monotonic()
                connection.execute(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('live', ?)",
                    (json.dumps(user("hello")),),
                )
                waits.append(time.monotonic() - started)
                time.sleep(0.02)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.monotonic()
    try:
        code, report = report_json(path, "--fix", "--busy-timeout", "10")
    finally:
        done.set()
        thread.join()
    took = time.monotonic() - started
    assert code == 0, report
    assert sum(1 for s in report["sessions"] if s["fix"] == "fixed") == 300
    assert waits and max(waits) < max(0.5, took / 4), (max(waits), took)  # noqa: PT018


def test_reads_in_short_statements_see_every_row(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Session ids and sessions are read a few rows a statement; far apart ids (one near
    # the top of the id range) cost nothing.
    sessions = {f"s{n}": [user("q"), call("c1"), call("c1"), output("c1")] for n in range(5)}
    make_store(path, sessions)
    with connected(path) as connection:
        connection.execute(
            "INSERT INTO agent_messages (id, session_id, message_data) VALUES (?, 's2', ?)",
            (2**62, json.dumps(user("last"))),
        )
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
            (b"blob", json.dumps(user("x"))),
        )
    expected = report_json(path)
    monkeypatch.setattr(store_sqlite, "_CHUNK", 3)
    assert report_json(path) == expected
    code, report = report_json(path, "--fix")
    assert code == 1
    assert report["rows_without_session"] == {"blob": [2**62 + 1]}
    assert decoded(path, "s2") == [user("q"), call("c1"), output("c1"), user("last")]
