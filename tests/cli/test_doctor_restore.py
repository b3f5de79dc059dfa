"""``histcore doctor --restore BACKUP PATH``: a fix undone, row for row.

Round trips: a store is fixed, its backup restored, and every row of every table
(ids, values and storage classes) compared with the store before the fix.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

import pytest

from tests.cli.test_doctor import (
    add_raw_row,
    answer,
    call,
    output,
    report_json,
    run_cli,
    user,
    write_store,
)
from tests.support.sqlite import connected, query

#: Every kind of change a fix makes: a duplicate call (its first row takes the latest
#: content, the other goes), an output without a call, a row that is not JSON.
DAMAGED = {
    "broken": [
        user("q1"),
        call("c1", 1),
        output("c1", "a"),
        call("c1", 2),
        output("c1", "b"),
        output("c9", "no call"),
        answer("done"),
    ],
    "clean": [user("hello"), answer("hi")],
}
#: Tables of the stores here: the SDK's two, and AdvancedSQLiteSession's two.
TABLES = ("agent_sessions", "agent_messages", "message_structure", "turn_usage")


def everything(path: str) -> dict[str, list[Any]]:
    """Every row of the store's session tables, with each value's storage class."""
    found: dict[str, list[Any]] = {}
    present = {name for (name,) in query(path, "SELECT name FROM sqlite_master")}
    for table in TABLES:
        if table not in present:
            continue
        columns = [row[1] for row in query(path, f"PRAGMA table_info({table})")]
        typed = ", ".join(f'"{c}", typeof("{c}")' for c in columns)
        found[table] = query(path, f"SELECT {typed} FROM {table} ORDER BY rowid")
    return found


def backups(path: str) -> list[str]:
    return sorted(glob.glob(glob.escape(path) + ".bak-*"))


@pytest.fixture
def damaged(tmp_path: Any) -> str:
    path = os.path.join(tmp_path, "app.db")
    write_store(path, DAMAGED)
    add_raw_row(path, "broken", "{not json")
    return path


def test_a_fix_is_undone_exactly_and_the_restore_too(damaged: str) -> None:
    original = everything(damaged)
    code, out, _ = run_cli(damaged, "--fix", "--drop-invalid-rows")
    assert code == 0, out
    (backup,) = backups(damaged)
    # --fix says how to put the backup back: the command, runnable as printed.
    command = f"histcore doctor --restore {backup} {damaged}"
    assert f"(to put it back: {command})" in out
    fixed = everything(damaged)
    assert fixed != original

    code, out, err = run_cli("--restore", backup, damaged)
    assert code == 0, err
    assert everything(damaged) == original
    assert "restored 1 session(s)" in out
    assert "'broken' (8 rows, replacing 4)" in out, out
    (undo,) = [b for b in backups(damaged) if b != backup]
    assert f"histcore doctor --restore {undo} {damaged}" in out

    # The restore's own backup undoes it: back to the store as the fix left it.
    assert run_cli("--restore", undo, damaged)[0] == 0
    assert everything(damaged) == fixed


def test_a_restore_as_json_and_rows_written_since_the_backup(damaged: str) -> None:
    original = everything(damaged)
    code, report = report_json(damaged, "--fix")
    assert code == 1  # the row that is not JSON stays
    backup = report["backup"]
    assert report["restore_command"] == f"histcore doctor --restore {backup} {damaged}"
    later = add_raw_row(damaged, "broken", json.dumps(user("written after the fix")))
    code, restored = report_json("--restore", backup, damaged)
    assert code == 0, restored
    assert restored["restored_from"] == backup
    (entry,) = restored["sessions"]
    assert entry["session_id"] == "broken"
    assert entry["not_in_backup"] == [later]
    assert everything(damaged) == original
    # The row written since is not lost: the restore's backup holds it.
    assert query(restored["backup"], "SELECT id FROM agent_messages WHERE id = ?", (later,)) == [
        (later,)
    ]


def test_an_advanced_store_is_restored_with_its_structure(tmp_path: Any) -> None:
    pytest.importorskip("agents")
    from tests.cli.test_doctor_sdk_stores import _structure_consistent, _write_advanced

    path = os.path.join(tmp_path, "advanced.db")
    _write_advanced(path)
    original = everything(path)
    assert {"message_structure", "turn_usage"} <= set(original)
    assert run_cli(path, "--fix")[0] == 0
    assert everything(path) != original
    (backup,) = backups(path)
    code, _, err = run_cli("--restore", backup, path)
    assert code == 0, err
    assert everything(path) == original
    _structure_consistent(path)


def test_a_restore_that_cannot_be_whole_changes_nothing(damaged: str) -> None:
    run_cli(damaged, "--fix", "--drop-invalid-rows")
    (backup,) = backups(damaged)
    # A row id of the backup's session now held by another session (a store whose
    # ids are reused): the restore refuses, in one line, and changes nothing.
    # (the last row of the session, the one that is not JSON, was deleted by the fix)
    ((deleted,),) = query(backup, "SELECT MAX(id) FROM agent_messages")
    with connected(damaged) as conn:
        conn.execute(
            "INSERT INTO agent_messages (id, session_id, message_data) VALUES (?, 'clean', ?)",
            (deleted, json.dumps(user("mine now"))),
        )
    before = everything(damaged)
    code, out, err = run_cli("--restore", backup, damaged)
    assert code == 2, out
    assert f"row ids {deleted} of session 'broken' in the backup now belong to session " in err
    assert "'clean'; nothing was changed" in err
    assert everything(damaged) == before


def test_restore_arguments(damaged: str, tmp_path: Any) -> None:
    run_cli(damaged, "--fix")
    (backup,) = backups(damaged)
    code, _, err = run_cli("--restore", backup, damaged, "--fix")
    assert code == 2
    assert "cannot go with --fix" in err
    code, _, err = run_cli("--restore", damaged, damaged)
    assert code == 2
    assert "the backup to restore is the store itself" in err
    code, _, err = run_cli("--restore", os.path.join(tmp_path, "nowhere.db"), damaged)
    assert code == 2
    assert "the backup:" in err
    assert "no such file" in err
