"""save_turn_to_session: what a finished turn writes, and in which order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from histcore.exceptions import UserError
from histcore.items import input_problems
from histcore.sessions import MemorySession, SQLiteSession, save_turn_to_session
from tests.support.pg import ListSession


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str, arguments: str = "{}", kind: str = "function_call") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "name": "f", "arguments": arguments}


def output(call_id: str, text: str = "ok", kind: str = "function_call_output") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": text}


async def test_turn_input_then_new_items_in_order() -> None:
    session = MemorySession()
    written = await save_turn_to_session(
        session, [user("q")], [call("c1"), output("c1"), assistant("done")]
    )
    expected = [user("q"), call("c1"), output("c1"), assistant("done")]
    assert written == expected
    assert await session.get_items() == expected


async def test_str_turn_input_is_a_user_message() -> None:
    session = MemorySession()
    await save_turn_to_session(session, "hello", [assistant("hi")])
    assert await session.get_items() == [user("hello"), assistant("hi")]


async def test_empty_turn_writes_nothing() -> None:
    session = MemorySession()
    assert await save_turn_to_session(session, [], []) == []
    assert await session.get_items() == []


async def test_latest_value_dedupe_applies_to_the_batch() -> None:
    session = MemorySession()
    items = [call("c1", '{"v": 1}'), output("c1", "old"), call("c1", '{"v": 2}'), output("c1")]
    written = await save_turn_to_session(session, [user("q")], items)
    assert written == [user("q"), call("c1", '{"v": 2}'), output("c1")]
    assert await session.get_items() == written


async def test_outputs_are_stored_after_their_calls() -> None:
    session = MemorySession()
    shell_out = output("s1", kind="shell_call_output")
    items = [
        output("c2"),
        output("c1"),
        call("c1"),
        shell_out,
        assistant("between"),
        call("c2"),
        call("s1", kind="shell_call"),
    ]
    written = await save_turn_to_session(session, [], items)
    assert written == [
        call("c1"),
        output("c1"),
        assistant("between"),
        call("c2"),
        output("c2"),
        call("s1", kind="shell_call"),
        shell_out,
    ]
    # An output whose call is not in the batch but stored (an approval resume) stays
    # where it is; one whose call was never stored is not written.
    assert await save_turn_to_session(session, [user("q")], [call("old")]) == [
        user("q"),
        call("old"),
    ]
    assert await save_turn_to_session(session, [], [output("old"), assistant("x")]) == [
        output("old"),
        assistant("x"),
    ]
    assert await save_turn_to_session(session, [], [output("never"), assistant("y")]) == [
        assistant("y")
    ]


async def test_a_turn_never_stores_what_would_break_the_rules() -> None:
    session = MemorySession()
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    paused = [thought, call("c1") | {"id": "fc_1"}]
    # A turn paused for approval keeps its reasoning and its call: the resume completes it.
    assert await save_turn_to_session(session, [user("q")], paused) == [user("q"), *paused]
    # Reasoning without the item it produced is not stored; nor is a repeated id.
    dangling = {"type": "reasoning", "id": "rs_2", "summary": []}
    message = {"type": "message", "role": "assistant", "id": "msg_1", "content": []}
    again = message | {"type": "output_text"}  # another type, so the dedupe keeps both
    written = await save_turn_to_session(
        session, [], [output("c1"), message, dangling, user("q2"), again]
    )
    assert written == [output("c1"), message, user("q2")]
    assert input_problems(await session.get_items()) == []


async def test_a_turn_stores_its_reasoning_run_whole() -> None:
    # The turn is its own stored history: each reasoning item is followed by the item
    # stored after it, so rule (f), which finds a reasoning item followed by another
    # when no history says otherwise, drops nothing from it.
    session = MemorySession()
    run = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        call("c1") | {"id": "fc_1"},
        output("c1"),
    ]
    assert await save_turn_to_session(session, [user("q")], run) == [user("q"), *run]
    stored = await session.get_items()
    assert input_problems(stored, history=stored) == []


async def test_items_are_normalised_and_the_session_gets_copies() -> None:
    session = MemorySession()
    tagged = dict(call("c1"), _agents_tool_description="d")
    new_items = [tagged, output("c1")]
    written = await save_turn_to_session(session, [user("q")], new_items)
    assert written[1] == call("c1")
    assert tagged["_agents_tool_description"] == "d"
    assert await session.get_items() == [user("q"), call("c1"), output("c1")]


async def test_a_third_party_store_never_aliases_the_caller_objects() -> None:
    session = ListSession()
    message = {"role": "user", "content": [{"type": "input_text", "text": "q"}]}
    written = await save_turn_to_session(session, [message], [])
    message["content"][0]["text"] = "changed"
    written[0]["content"].append("x")
    assert session.items == [{"role": "user", "content": [{"type": "input_text", "text": "q"}]}]


async def test_bad_turns_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with SQLiteSession("s", tmp_path / "x.db") as session:
        with pytest.raises(UserError, match=r"new_items\[1\] is a str, not an input item"):
            await save_turn_to_session(session, "q", [assistant("a"), "oops"])
        with pytest.raises(UserError, match="new_items must be a list of input items, not dict"):
            await save_turn_to_session(session, "q", assistant("a"))  # type: ignore[arg-type]
        with pytest.raises(UserError, match="turn_input must be a str or a list"):
            await save_turn_to_session(session, 3, [])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"items\[1\] cannot be encoded as JSON"):
            await save_turn_to_session(session, "q", [{"role": "assistant", "content": {1}}])
        assert await session.get_items() == []
