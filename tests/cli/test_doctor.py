"""``histcore doctor``: findings, ``--fix``, the backup, and exit codes.

Stores are written through the sessions' own APIs (the OpenAI Agents SDK's
``SQLiteSession``, histcore's ``SQLiteSession``), with raw SQL only for what no API
can write (rows that are not JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import io
import json
import os
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import histcore
import histcore.items
from histcore.cli.doctor import check as doctor_check
from histcore.cli.doctor import command as doctor_command
from histcore.cli.doctor import read as doctor_read
from histcore.cli.main import main
from histcore.sessions import SQLiteSession as HistcoreSQLiteSession
from tests.support.examples import examples
from tests.support.sqlite import connected, no_file_left_open, query, write_junk


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str, version: int = 0, kind: str = "function_call") -> dict[str, Any]:
    return {
        "type": kind,
        "call_id": call_id,
        "name": "lookup",
        "arguments": json.dumps({"v": version}),
    }


def output(call_id: str, text: str = "ok", kind: str = "function_call_output") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": text}


def answer(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def write_store(path: str, sessions: dict[str, list[Any]]) -> None:
    """Write each session's items with histcore's SQLiteSession (the SDK's tables)."""

    async def write() -> None:
        for session_id, items in sessions.items():
            session = HistcoreSQLiteSession(session_id, path)
            try:
                if items:
                    await session.add_items(items)
            finally:
                session.close()

    asyncio.run(write())


def add_raw_row(path: str, session_id: str, data: str) -> int:
    with connected(path) as connection:
        cursor = connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
            (session_id, data),
        )
        return int(cursor.lastrowid or 0)


def rows(path: str, session_id: str | None = None) -> list[tuple[int, str, str]]:
    sql = "SELECT id, session_id, message_data FROM agent_messages"
    params: tuple[Any, ...] = ()
    if session_id is not None:
        sql += " WHERE session_id = ?"
        params = (session_id,)
    return query(path, sql + " ORDER BY id", params)


def items_of(path: str, session_id: str) -> list[Any]:
    return [json.loads(data) for _, _, data in rows(path, session_id)]


def run_cli(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    doctor_command.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    code = doctor_command.run(parser.parse_args(list(argv)), out, err)
    return code, out.getvalue(), err.getvalue()


def report_json(*argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run_cli(*argv, "--json")
    return code, json.loads(out)


def session_entry(report: dict[str, Any], session_id: str) -> dict[str, Any]:
    (entry,) = [s for s in report["sessions"] if s["session_id"] == session_id]
    return entry


@pytest.fixture
def store(tmp_path: Any) -> str:
    return os.path.join(tmp_path, "store.db")


# --- findings ------------------------------------------------------------------------


PROBLEM_KEYS = [
    "invalid_json",
    "not_item",
    "non_string_call_id",
    "output_before_call",
    "output_without_call",
    "duplicate_calls",
    "duplicate_outputs",
    "calls_without_output",
    "duplicate_id",
    "reasoning_without_item",
    "item_without_reasoning",
    "reasoning_without_successor",
]


def test_clean_store_exits_zero(store: str) -> None:
    write_store(
        store, {"a": [user("hi"), call("c1"), output("c1"), answer("done")], "b": [user("x")]}
    )
    code, report = report_json(store)
    assert code == 0
    assert [s["clean"] for s in report["sessions"]] == [True, True]
    assert report["sessions"][0]["problems"] == dict.fromkeys(PROBLEM_KEYS, 0)
    assert report["sessions"][0]["info"] == {"call_awaiting_output": 0}
    assert report["rows_without_session"] == {}


def test_each_defect_is_counted_per_session(store: str) -> None:
    write_store(
        store,
        {
            "dup_calls": [user("q"), call("c1", 1), output("c1"), call("c1", 2), call("c1", 3)],
            "dup_outputs": [
                user("q"),
                call("c2"),
                output("c2", "old"),
                user("more"),
                output("c2", "new"),
            ],
            "early_output": [user("q"), output("c3"), call("c3")],
            "dangling": [user("q"), call("c4"), output("c4"), call("c5"), user("again")],
            "paused": [user("q"), call("c4"), output("c4"), user("again"), call("c6")],
            "clean": [user("q"), answer("a")],
        },
    )
    bad_row = add_raw_row(store, "corrupt", "{not json")
    add_raw_row(store, "corrupt", json.dumps(user("fine")))
    code, report = report_json(store)
    assert code == 1
    problems = {s["session_id"]: s["problems"] for s in report["sessions"]}
    assert problems["dup_calls"]["duplicate_calls"] == 2
    assert problems["dup_outputs"]["duplicate_outputs"] == 1
    assert problems["early_output"]["output_before_call"] == 1
    assert problems["dangling"]["calls_without_output"] == 1
    assert problems["corrupt"]["invalid_json"] == 1
    assert session_entry(report, "corrupt")["details"]["invalid_json_rows"] == [bad_row]
    assert session_entry(report, "dangling")["details"]["calls_without_output"] == ["c5"]
    assert session_entry(report, "clean")["clean"]
    # A call at the end awaiting its output is information, not a problem.
    paused = session_entry(report, "paused")
    assert paused["clean"]
    assert paused["info"] == {"call_awaiting_output": 1}
    assert paused["details"]["call_awaiting_output"] == ["c6"]
    # Every other count of each session is zero: one defect, one finding.
    for session_id, counts in problems.items():
        expected = 0 if session_id in ("clean", "paused") else 1
        assert sum(1 for v in counts.values() if v) == expected, session_id


def test_text_report_names_the_problems(store: str) -> None:
    write_store(store, {"s": [user("q"), call("c1"), output("c1"), call("c1", 2)]})
    code, out, _ = run_cli(store)
    assert code == 1
    assert "session 's'" in out
    assert "1 duplicate tool call" in out
    assert "duplicate calls: c1 (+1)" in out
    assert "run with --fix" in out


def test_text_report_lines_name_the_first_eight_and_count_the_rest(store: str) -> None:
    # A large store can repeat hundreds of thousands of calls: each line stays short,
    # and --json still lists every one.
    items = [user("q")]
    for n in range(10):
        items += [call(f"c{n}"), output(f"c{n}"), call(f"c{n}", 2), output(f"c{n}")]
    write_store(store, {"s": items})
    code, out, _ = run_cli(store)
    assert code == 1
    line = next(line for line in out.splitlines() if "duplicate calls:" in line)
    assert line == "  duplicate calls: " + ", ".join(f"c{n} (+1)" for n in range(8)) + (
        ", ... (10 in all)"
    )
    code, out, _ = run_cli(store, "--json")
    assert code == 1
    details = session_entry(json.loads(out), "s")["details"]
    assert details["duplicate_calls"] == {f"c{n}": 1 for n in range(10)}


def test_session_option_checks_only_that_session(store: str) -> None:
    write_store(store, {"bad": [call("c1"), call("c1")], "good": [user("x")]})
    code, report = report_json(store, "--session", "good")
    assert code == 0
    assert [s["session_id"] for s in report["sessions"]] == ["good"]
    code, _, err = run_cli(store, "--session", "missing")
    assert code == 2
    assert "no session 'missing'" in err


@pytest.mark.parametrize("kind", ["missing", "not_sqlite", "no_tables"])
def test_unreadable_stores_exit_two(store: str, kind: str) -> None:
    if kind == "not_sqlite":
        write_junk(store)
    elif kind == "no_tables":
        query(store, "CREATE TABLE other (x)")
    code, out, err = run_cli(store, "--json")
    assert code == 2
    assert json.loads(out)["error"]
    assert "histcore doctor: error" in err
    if kind == "missing":
        assert not os.path.exists(store), "checking must never create a database"


@pytest.mark.parametrize("fix", [False, True])
@pytest.mark.parametrize("kind", ["not_sqlite", "no_tables"])
def test_unreadable_stores_leave_no_file_open(store: str, kind: str, fix: bool) -> None:
    if kind == "not_sqlite":
        write_junk(store)
    else:
        query(store, "CREATE TABLE other (x)")
    with no_file_left_open(), pytest.raises(doctor_read.DoctorError):
        doctor_check.check_store(store, fix=fix)


# --- --fix ---------------------------------------------------------------------------


def test_fix_dedupes_calls_keeping_first_row_with_latest_content(store: str) -> None:
    write_store(store, {"s": [user("q"), call("c1", 1), output("c1"), call("c1", 2), answer("a")]})
    before = rows(store, "s")
    code, report = report_json(store, "--fix")
    assert code == 0
    entry = session_entry(report, "s")
    assert entry["fix"] == "fixed"
    assert entry["removed_rows"] == [before[3][0]]
    assert entry["rewritten_rows"] == [before[1][0]]
    after = rows(store, "s")
    assert [r[0] for r in after] == [before[0][0], before[1][0], before[2][0], before[4][0]]
    assert after[1][2] == before[3][2], "the call's first row holds its latest stored text"
    assert items_of(store, "s") == [user("q"), call("c1", 2), output("c1"), answer("a")]
    assert report_json(store)[0] == 0


def test_fix_keeps_the_last_output(store: str) -> None:
    write_store(store, {"s": [call("c1"), output("c1", "old"), user("later"), output("c1", "new")]})
    assert report_json(store, "--fix")[0] == 0
    assert items_of(store, "s") == [call("c1"), user("later"), output("c1", "new")]


def test_fix_repairs_a_stale_output_before_its_call(store: str) -> None:
    write_store(store, {"s": [output("c1", "stale"), call("c1"), output("c1", "fresh")]})
    code, report = report_json(store)
    assert code == 1
    assert session_entry(report, "s")["problems"]["output_before_call"] == 1
    assert report_json(store, "--fix")[0] == 0
    assert items_of(store, "s") == [call("c1"), output("c1", "fresh")]


def test_fix_drops_an_output_stored_before_its_only_call(store: str) -> None:
    # The dedupe rules cannot place it after the call; the unit rules drop it (moving it
    # would rewrite the conversation). The calls at the end await their outputs: kept.
    write_store(store, {"s": [user("q"), output("c1"), call("c1"), call("c2"), call("c2")]})
    code, report = report_json(store)
    entry = session_entry(report, "s")
    assert code == 1
    assert entry["problems"]["output_before_call"] == 1
    assert entry["problems"]["output_without_call"] == 0, "one defect, one finding"
    code, report = report_json(store, "--fix")
    assert code == 0
    assert session_entry(report, "s")["fix"] == "fixed"
    assert items_of(store, "s") == [user("q"), call("c1"), call("c2")]
    assert session_entry(report, "s")["left"] == dict.fromkeys(PROBLEM_KEYS, 0)


def test_fix_repairs_around_rows_that_are_not_json(store: str) -> None:
    write_store(store, {"s": [user("q"), call("c1"), call("c1")], "t": [call("c2"), call("c2")]})
    bad = add_raw_row(store, "s", "\x00 garbage")
    code, out, _ = run_cli(store, "--fix")
    assert code == 1, "the row that is not JSON is left, and reported"
    assert "left as they are" in out
    assert "not valid JSON" in out
    after = rows(store, "s")
    assert [json.loads(r[2]) for r in after[:-1]] == [user("q"), call("c1")]
    assert after[-1][0] == bad and after[-1][2] == "\x00 garbage", "left as it was"  # noqa: PT018
    assert items_of(store, "t") == [call("c2")], "other sessions are repaired too"


def test_fix_writes_a_backup_of_the_sessions_it_changes(store: str) -> None:
    write_store(store, {"s": [call("c1", 1), output("c1"), call("c1", 2)], "t": [user("x")]})
    before = rows(store, "s")
    code, report = report_json(store, "--fix")
    assert code == 0
    backup = report["backup"]
    assert backup
    assert os.path.dirname(backup) == os.path.dirname(store)
    assert os.path.basename(backup).startswith("store.db.bak-")
    assert rows(backup) == before, "every row of the session it changed, ids and all"
    assert query(backup, "SELECT session_id FROM agent_sessions") == [("s",)]
    # The backup is a session store of its own: the doctor finds the damage in it.
    code, found = report_json(backup)
    assert code == 1
    assert session_entry(found, "s")["problems"]["duplicate_calls"] == 1
    # A second fix in the same second gets its own backup, never overwriting the first.
    write_store(store, {"s": [output("c1")]})
    code, report = report_json(store, "--fix")
    assert code == 0
    assert report["backup"] != backup
    assert os.path.exists(backup)


def test_no_backup_when_nothing_needs_fixing(store: str) -> None:
    write_store(store, {"s": [user("q"), call("c1")]})
    code, report = report_json(store, "--fix")
    # The call at the end awaits approval: information, kept, and no problem.
    assert code == 0
    assert report["backup"] is None
    entry = session_entry(report, "s")
    assert entry["fix"] == "clean"
    assert entry["left"] == dict.fromkeys(PROBLEM_KEYS, 0)
    assert entry["info"] == {"call_awaiting_output": 1}
    assert glob.glob(store + ".bak-*") == []
    assert len(rows(store)) == 2


def test_check_without_fix_never_writes(store: str) -> None:
    write_store(store, {"s": [call("c1"), call("c1")]})
    os.chmod(store, 0o444)
    try:
        code, report = report_json(store)
    finally:
        os.chmod(store, 0o644)
    assert code == 1
    assert report["backup"] is None


# --- stores written by the sessions themselves ----------------------------------------


def test_store_written_by_the_sdk(tmp_path: Any) -> None:
    agents = pytest.importorskip("agents")
    from histcore.cli.bench.sdk_turn import SDKScriptedModel, lookup_tool

    path = os.path.join(tmp_path, "sdk.db")

    @agents.function_tool(needs_approval=True)
    def delete_file(name: str) -> str:
        """Delete a file."""
        return f"deleted {name}"

    class PausingModel(SDKScriptedModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            response = await super().get_response(*args, **kwargs)
            items = kwargs["input"]
            if isinstance(items, list) and items[-1].get("content") == "delete it":
                response.output = [response.output[-1].model_copy(update={"name": "delete_file"})]
            return response

    async def converse() -> None:
        session = agents.SQLiteSession("sdk", path)
        agent = agents.Agent(name="a", model=PausingModel(), tools=[lookup_tool(), delete_file])
        config = agents.RunConfig(tracing_disabled=True)
        try:
            await agents.Runner.run(agent, "Paris and Rome", session=session, run_config=config)
            # The SDK itself writing a duplicate call and a duplicate output.
            stored = await session.get_items()
            call_item = next(i for i in stored if i.get("type") == "function_call")
            output_item = next(i for i in stored if i.get("type") == "function_call_output")
            await session.add_items([dict(call_item, arguments='{"city": "Lyon"}'), output_item])
            # A run paused for approval: its pending call is stored without an output.
            paused = await agents.Runner.run(agent, "delete it", session=session, run_config=config)
            assert paused.interruptions
        finally:
            session.close()

    asyncio.run(converse())
    code, report = report_json(path)
    entry = session_entry(report, "sdk")
    assert code == 1
    assert entry["problems"]["duplicate_calls"] == 1
    assert entry["problems"]["duplicate_outputs"] == 1
    assert entry["problems"]["calls_without_output"] == 0
    assert entry["info"]["call_awaiting_output"] == 1, "the paused call is information"

    code, report = report_json(path, "--fix")
    entry = session_entry(report, "sdk")
    assert entry["fix"] == "fixed"
    assert code == 0
    assert sum(entry["left"].values()) == 0
    assert entry["info"]["call_awaiting_output"] == 1

    async def read_back() -> list[Any]:
        session = agents.SQLiteSession("sdk", path)
        try:
            return await session.get_items()
        finally:
            session.close()

    repaired = asyncio.run(read_back())
    assert repaired == items_of(path, "sdk")
    calls = [i for i in repaired if i.get("type") == "function_call"]
    assert len({c["call_id"] for c in calls}) == len(calls)
    assert any(c["arguments"] == '{"city": "Lyon"}' for c in calls), "latest call content kept"


def test_store_written_by_histcore_reads_back_repaired(store: str) -> None:
    write_store(
        store,
        {"s": [user("q"), call("c1", 1), output("c1", "a"), call("c1", 2), output("c1", "b")]},
    )
    assert report_json(store, "--fix")[0] == 0

    async def read() -> list[Any]:
        with HistcoreSQLiteSession("s", store) as session:
            return await session.get_items()

    assert asyncio.run(read()) == [user("q"), call("c1", 2), output("c1", "b")]


# --- the repair: histcore's dedupe, then the model-input units ----------------------


@st.composite
def tool_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for position in range(draw(st.integers(1, 12))):
        what = draw(st.sampled_from(["call", "output", "user", "reasoning", "answer"]))
        call_id = draw(st.sampled_from(["c0", "c1", "c2"]))
        kind = draw(st.sampled_from(["function_call", "shell_call"]))
        if what == "call":
            items.append(call(call_id, position, kind))
        elif what == "output":
            items.append(output(call_id, f"v{position}", kind + "_output"))
        elif what == "reasoning":
            reasoning_id = draw(st.sampled_from(["rs_same", f"rs_{position}"]))
            items.append({"type": "reasoning", "id": reasoning_id, "summary": [], "v": position})
        elif what == "answer":
            items.append(dict(answer(f"a{position}"), id=draw(st.sampled_from(["m1", "m2"]))))
        else:
            items.append(user(f"u{position}"))
    return items


def _tool_only_dedupe(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """histcore's latest-value dedupe, applied to tool calls and outputs only."""
    tagged = [item if "call_id" in item else {"role": "x", "i": i} for i, item in enumerate(items)]
    result = histcore.deduplicate_input_items_preferring_latest(tagged)
    return [items[r["i"]] if r.get("role") == "x" else r for r in result]


def _is_subsequence(small: Sequence[Any], big: Sequence[Any]) -> bool:
    rest = iter(big)
    return all(any(item == other for other in rest) for item in small)


@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(items=tool_histories())
def test_fix_is_the_dedupe_then_whole_units_dropped(
    tmp_path: Any, items: list[dict[str, Any]]
) -> None:
    path = os.path.join(tmp_path, f"h{abs(hash(json.dumps(items)))}.db")
    for old in glob.glob(path + "*"):
        os.remove(old)
    write_store(path, {"s": items})
    code, report = report_json(path, "--fix")
    entry = session_entry(report, "s")
    assert entry["fix"] in ("fixed", "clean"), entry["reason"]
    repaired = items_of(path, "s")
    deduped = _tool_only_dedupe(items)
    # The units step only removes, and never a user message.
    assert _is_subsequence(repaired, deduped)
    assert [i for i in repaired if "role" in i and i["role"] == "user"] == [
        i for i in deduped if "role" in i and i["role"] == "user"
    ]
    # The dedupe result is kept as it is when it breaks no model-input rule (calls
    # awaiting approval are no break).
    kinds = {p.kind for p in histcore.items.input_problems(deduped, history=items)}
    if kinds <= {"call_awaiting_output"}:
        assert repaired == deduped
    # What is left breaks no rule, and a second fix finds nothing to do.
    left = {p.kind for p in histcore.items.input_problems(repaired, history=repaired)}
    assert left <= {"call_awaiting_output"}
    assert code == 0
    assert sum(entry["left"].values()) == 0
    code, again = report_json(path, "--fix")
    assert code == 0
    assert again["backup"] is None
    assert items_of(path, "s") == repaired


# --- the command line --------------------------------------------------------------


def test_registered_once_through_the_histcore_command(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_store(store, {"s": [user("q")]})
    assert main(["doctor", store]) == 0
    assert "1 session(s) checked" in capsys.readouterr().out
    assert main(["doctor", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exit_code"] == 0
    with pytest.raises(SystemExit) as exited:
        main(["doctor", "--help"])
    assert exited.value.code == 0
    usage = capsys.readouterr().out
    assert usage.startswith("usage: histcore doctor [-h] [--dsn DSN] [--session ID] [--fix]")
    assert "[--drop-invalid-rows]" in usage
    assert "[PATH]" in usage
    assert "Exit status: 0 nothing found" in usage
    assert "3 the store is locked by another process" in usage
