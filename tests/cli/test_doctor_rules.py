"""``histcore doctor`` knows every rule: for each kind of damage, a store with it is
found (the right count, the row it is in) and repaired (``--fix``), and one store
holding every kind at once is repaired whole.

Rows are written as raw SQL into the SDK's tables, so damage no session API would
write can be stored exactly.
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cli.test_doctor import (
    PROBLEM_KEYS,
    answer,
    call,
    output,
    report_json,
    run_cli,
    session_entry,
    user,
)
from tests.support.sqlite import connected, query

#: The SDK's SQLiteSession tables, as it creates them.
SDK_SCHEMA = [
    """CREATE TABLE agent_sessions (
        session_id TEXT PRIMARY KEY,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""",
    """CREATE TABLE agent_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        message_data TEXT NOT NULL,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE)""",
    "CREATE INDEX idx_agent_messages_session_id ON agent_messages (session_id, id)",
]

#: A stored row: an item (stored as its JSON text) or a str stored exactly as given.
Stored = Any


def reasoning(item_id: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": []}


def with_id(item: dict[str, Any], item_id: str) -> dict[str, Any]:
    return dict(item, id=item_id)


def text_of(row: Stored) -> Any:
    return row if isinstance(row, (str, bytes)) else json.dumps(row)


def make_store(
    path: str, sessions: dict[str, list[Stored]], schema: list[str] = SDK_SCHEMA
) -> None:
    with connected(path) as connection:
        for statement in schema:
            connection.execute(statement)
        for session_id, rows in sessions.items():
            connection.execute("INSERT INTO agent_sessions (session_id) VALUES (?)", (session_id,))
            connection.executemany(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                [(session_id, text_of(row)) for row in rows],
            )


def stored(path: str, session_id: str) -> list[tuple[int, Any]]:
    return [
        (int(row_id), data)
        for row_id, data in query(
            path,
            "SELECT id, message_data FROM agent_messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
    ]


def decoded(path: str, session_id: str) -> list[Any]:
    return [json.loads(data) for _, data in stored(path, session_id)]


@dataclass(frozen=True)
class Damage:
    """A session with one kind of damage: what the doctor counts, what --fix leaves."""

    rows: list[Stored]
    #: the problem count that finds it, and how many it counts
    key: str
    count: int
    #: the session after --fix (None: --fix leaves it as it is)
    repaired: list[Any] | None
    #: with --fix --drop-invalid-rows
    dropped: list[Any] | None = None
    #: other counts the damage shows in (the duplicate behind a reasoning break)
    also: dict[str, int] = field(default_factory=dict)


DAMAGE = {
    "invalid_json": Damage(
        [user("q"), "{not json", answer("a")], "invalid_json", 1, None, [user("q"), answer("a")]
    ),
    **{
        f"not_item_{name}": Damage(
            [user("q"), text, answer("a")], "not_item", 1, None, [user("q"), answer("a")]
        )
        for name, text in [("int", "42"), ("null", "null"), ("list", "[1, 2]"), ("str", '"x"')]
    },
    "non_string_call_id": Damage(
        [user("q"), dict(output("c1"), call_id=7), answer("a")],
        "non_string_call_id",
        1,
        None,
        [user("q"), answer("a")],
    ),
    "null_call_id": Damage(
        [user("q"), dict(call("c1"), call_id=None), answer("a")],
        "non_string_call_id",
        1,
        None,
        [user("q"), answer("a")],
    ),
    "output_before_call": Damage(
        [user("q"), output("c1", "stale"), call("c1"), output("c1", "fresh")],
        "output_before_call",
        1,
        [user("q"), call("c1"), output("c1", "fresh")],
        also={"duplicate_outputs": 1},
    ),
    "output_without_call": Damage(
        [user("q"), output("c9"), answer("a")],
        "output_without_call",
        1,
        [user("q"), answer("a")],
    ),
    "duplicate_calls": Damage(
        [user("q"), call("c1", 1), output("c1"), call("c1", 2)],
        "duplicate_calls",
        1,
        [user("q"), call("c1", 2), output("c1")],
    ),
    "duplicate_outputs": Damage(
        [user("q"), call("c1"), output("c1", "old"), output("c1", "new")],
        "duplicate_outputs",
        1,
        [user("q"), call("c1"), output("c1", "new")],
    ),
    "calls_without_output": Damage(
        # A run that crashed between a call and its output: the call and its reasoning
        # go, as one unit.
        [user("q"), reasoning("rs_1"), with_id(call("c1"), "fc_1"), user("again"), answer("a")],
        "calls_without_output",
        1,
        [user("q"), user("again"), answer("a")],
    ),
    "duplicate_id": Damage(
        [user("q"), with_id(answer("a"), "msg_1"), user("r"), with_id(answer("b"), "msg_1")],
        "duplicate_id",
        1,
        [user("q"), with_id(answer("a"), "msg_1"), user("r")],
    ),
    "reasoning_without_item": Damage(
        [user("q"), reasoning("rs_1"), user("more"), answer("a")],
        "reasoning_without_item",
        1,
        [user("q"), user("more"), answer("a")],
    ),
    "item_without_reasoning": Damage(
        # The call fc_1 was stored again after reasoning rs_2: the dedupe keeps it at its
        # first place, behind rs_1, which is not the reasoning it was produced with; rs_2
        # is then followed by msg_1, not by fc_1, stored after it: rs_2 goes too.
        [
            user("q"),
            reasoning("rs_1"),
            with_id(call("c1", 1), "fc_1"),
            output("c1"),
            reasoning("rs_2"),
            with_id(call("c1", 2), "fc_1"),
            with_id(answer("a"), "msg_1"),
        ],
        "item_without_reasoning",
        1,
        [user("q"), with_id(answer("a"), "msg_1")],
        also={"duplicate_calls": 1, "reasoning_without_successor": 1},
    ),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_each_kind_of_damage_is_found_and_repaired(tmp_path: Any, name: str) -> None:
    damage = DAMAGE[name]
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": damage.rows, "fine": [user("q"), answer("a")]})
    before = stored(path, "s")

    code, report = report_json(path)
    entry = session_entry(report, "s")
    assert code == 1
    assert entry["problems"] == {
        key: (damage.count if key == damage.key else damage.also.get(key, 0))
        for key in PROBLEM_KEYS
    }
    assert session_entry(report, "fine")["clean"]

    code, report = report_json(path, "--fix")
    entry = session_entry(report, "s")
    if damage.repaired is None:
        # Rows the rules cannot place are left, and reported, without the flag.
        assert code == 1
        assert entry["fix"] == "left"
        assert "--drop-invalid-rows" in entry["reason"]
        assert stored(path, "s") == before
        code, report = report_json(path, "--fix", "--drop-invalid-rows")
        assert code == 0, report
        assert decoded(path, "s") == damage.dropped
        (backup,) = glob.glob(path + ".bak-*")
        assert stored(backup, "s") == before, "the backup keeps the dropped rows"
    else:
        assert code == 0
        assert entry["fix"] == "fixed"
        assert decoded(path, "s") == damage.repaired
        assert sum(entry["left"].values()) == 0
    assert report_json(path)[0] == 0, "the repaired store checks clean"


def test_a_store_with_every_kind_of_damage_is_repaired_whole(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {name: damage.rows for name, damage in DAMAGE.items()})
    code, report = report_json(path)
    assert code == 1
    for name, damage in DAMAGE.items():
        assert session_entry(report, name)["problems"][damage.key] == damage.count, name

    code, report = report_json(path, "--fix", "--drop-invalid-rows")
    assert code == 0
    for name, damage in DAMAGE.items():
        expected = damage.repaired if damage.repaired is not None else damage.dropped
        assert decoded(path, name) == expected, name
    assert len(glob.glob(path + ".bak-*")) == 1
    assert report_json(path)[0] == 0


def test_a_call_awaiting_approval_is_information_not_a_problem(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "store.db")
    paused = [user("q"), reasoning("rs_1"), with_id(call("c1"), "fc_1"), call("c2")]
    make_store(path, {"s": paused})
    code, out, _ = run_cli(path)
    assert code == 0
    assert "clean; 2 calls awaiting their output (paused for approval: kept)" in out
    code, report = report_json(path, "--fix")
    entry = session_entry(report, "s")
    assert code == 0
    assert entry["fix"] == "clean"
    assert report["backup"] is None
    assert entry["info"] == {"call_awaiting_output": 2}
    assert entry["details"]["call_awaiting_output"] == ["c1", "c2"]
    assert decoded(path, "s") == paused


def test_a_paused_call_survives_the_repair_of_its_session(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": [user("q"), output("c9"), user("go"), reasoning("rs_1"), call("c1")]})
    code, report = report_json(path, "--fix")
    assert code == 0
    assert session_entry(report, "s")["fix"] == "fixed"
    assert decoded(path, "s") == [user("q"), user("go"), reasoning("rs_1"), call("c1")]
    assert session_entry(report, "s")["info"] == {"call_awaiting_output": 1}


def test_an_output_without_a_call_is_not_clean(tmp_path: Any) -> None:
    # It used to be reported clean; the Responses API rejects it ("No tool call found").
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": [user("q"), output("c9")]})
    code, out, _ = run_cli(path)
    assert code == 1
    assert "1 tool output without a call" in out
    assert "output without a call: c9 (row 2)" in out


def test_json_details_name_the_rows(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": [user("q"), reasoning("rs_1"), "[1, 2]", user("more"), output("c3")]})
    _, report = report_json(path)
    details = session_entry(report, "s")["details"]
    assert details["not_item_rows"] == [3]
    assert details["reasoning_without_item"] == ["rs_1"]
    assert details["output_without_call"] == ["c3"]
    assert details["rows"]["reasoning_without_item"] == [2]
    assert details["rows"]["output_without_call"] == [5]


def test_the_rest_of_a_session_is_repaired_around_rows_it_cannot_place(tmp_path: Any) -> None:
    # One row that is not an item used to block every repair of its session.
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": [user("q"), "42", call("c1", 1), output("c1"), call("c1", 2)]})
    code, report = report_json(path, "--fix")
    entry = session_entry(report, "s")
    assert code == 1
    assert entry["fix"] == "fixed"
    assert entry["left"]["not_item"] == 1
    assert sum(entry["left"].values()) == 1
    assert [data for _, data in stored(path, "s")] == [
        json.dumps(user("q")),
        "42",
        json.dumps(call("c1", 2)),
        json.dumps(output("c1")),
    ]


def test_rows_without_a_session_are_reported(tmp_path: Any) -> None:
    # A table without NOT NULL, as other tools create it: NULL and BLOB session ids are
    # read by no session.
    path = os.path.join(tmp_path, "store.db")
    schema = [
        "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY)",
        "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,"
        " message_data TEXT, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
    ]
    make_store(path, {"s": [user("q")]}, schema)
    with connected(path) as connection:
        insert = "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)"
        connection.execute(insert, (None, json.dumps(user("lost"))))
        connection.execute(insert, (b"s", json.dumps(user("bytes"))))
        connection.execute(insert, (sqlite3.Binary(b"\xff"), json.dumps(user("x"))))
    code, report = report_json(path)
    assert code == 1
    assert report["rows_without_session"] == {"null": [2], "blob": [3, 4]}
    assert session_entry(report, "s")["clean"]
    code, out, _ = run_cli(path, "--fix")
    assert code == 1, "they are reported, never changed"
    assert "rows outside any session" in out
    assert "1 with a NULL session_id (row ids 2)" in out
    assert len(query(path, "SELECT id FROM agent_messages")) == 4
