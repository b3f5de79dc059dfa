"""Runs with a session: what is read, what is written and when, on ``Runner.run`` and
``Runner.run_streamed``, including paused, failed and cancelled runs (the session
only ever gets whole turns)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from histcore.exceptions import MaxTurnsExceeded, UserError
from histcore.runner.agent import Agent
from histcore.runner.result import RunResultStreaming
from histcore.runner.run import Runner
from histcore.runner.run_config import RunConfig
from histcore.runner.run_state import RunState
from histcore.runner.stream_events import RunItemStreamEvent
from histcore.runner.tool import function_tool
from histcore.sessions import MemorySession, Session, SessionSettings, SQLiteSession
from histcore.testing import (
    ScriptedModel,
    function_call,
    function_call_output,
    text_message,
    user_message,
)
from tests.support.runner import drive


@pytest.fixture(params=["memory", "sqlite"])
def session(request: pytest.FixtureRequest) -> Iterator[Session]:
    if request.param == "memory":
        yield MemorySession("s1")
    else:
        with SQLiteSession("s1") as store:
            yield store


@function_tool
def lookup(key: str) -> str:
    return f"value of {key}"


@function_tool(needs_approval=True)
def transfer(amount: int) -> str:
    return f"moved {amount}"


def agent_with(model: ScriptedModel, *tools: Any) -> Agent:
    return Agent("bank", model=model, tools=tools or (lookup, transfer))


def assert_whole_turns(stored: list[dict[str, Any]]) -> None:
    """Every stored call has its output after it, and every output its call before."""
    calls_seen: set[str] = set()
    outputs = {i["call_id"] for i in stored if i.get("type") == "function_call_output"}
    for item in stored:
        if item.get("type") == "function_call":
            assert item["call_id"] in outputs, f"call {item['call_id']} stored without output"
            calls_seen.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in calls_seen, f"output {item['call_id']} before its call"


async def test_each_turn_is_stored_and_read_back(mode: str, session: Session) -> None:
    model = ScriptedModel(
        [[function_call("lookup", {"key": "rate"}, "c1")], [text_message("It is 3%.")]]
    )
    agent = agent_with(model)
    first = await drive(mode, agent, "What is the rate?", session=session)
    stored = await session.get_items()
    assert stored == [
        user_message("What is the rate?"),
        function_call("lookup", {"key": "rate"}, "c1"),
        function_call_output("c1", "value of rate"),
        text_message("It is 3%."),
    ]
    model.set_next_output([text_message("You're welcome.")])
    second = await drive(mode, agent, "Thanks", session=session)
    assert model.last_input == [*stored, user_message("Thanks")]
    # With a session the run's input is the prepared input: history plus new input.
    assert second.input == [*stored, user_message("Thanks")]
    assert second.to_input_list() == [
        *stored,
        user_message("Thanks"),
        text_message("You're welcome."),
    ]
    assert first.new_items == stored[1:]
    assert await session.get_items() == [
        *stored,
        user_message("Thanks"),
        text_message("You're welcome."),
    ]


async def test_session_input_callback_and_settings_shape_the_model_input(
    mode: str, session: Session
) -> None:
    await session.add_items([user_message("u0"), text_message("a0"), user_message("u1")])
    model = ScriptedModel([[text_message("a1")], [text_message("a2")]])
    agent = agent_with(model)

    def repeat_first(history: list[Any], new: list[Any]) -> list[Any]:
        return [*history, history[0], *new]

    config = RunConfig(session_input_callback=repeat_first)
    await drive(mode, agent, "u2", session=session, run_config=config)
    assert model.last_input == [
        user_message("u0"),
        text_message("a0"),
        user_message("u1"),
        user_message("u0"),
        user_message("u2"),
    ]
    # Only the new input and the answer are stored, not the callback's repeat.
    assert len(await session.get_items()) == 5

    limited = RunConfig(session_settings=SessionSettings(limit=2))
    await drive(mode, agent, "u3", session=session, run_config=limited)
    assert model.last_input == [user_message("u2"), text_message("a1"), user_message("u3")]


async def test_a_paused_turn_is_held_until_it_completes(mode: str, session: Session) -> None:
    model = ScriptedModel(
        [
            [function_call("lookup", {"key": "balance"}, "c1")],
            [
                function_call("transfer", {"amount": 5}, "c2"),
                function_call("lookup", {"key": "fee"}, "c3"),
            ],
        ]
    )
    agent = agent_with(model)
    result = await drive(mode, agent, "Move 5", session=session)
    assert [i.call_id for i in result.interruptions] == ["c2"]
    # The input and the first (complete) turn are stored; the paused turn is not.
    stored = await session.get_items()
    assert stored == [user_message("Move 5"), *result.new_items[:2]]
    state = result.to_state()
    state.approve(state.interruptions[0])
    model.set_next_output([text_message("Moved.")])
    await drive(mode, agent, state, session=session)
    stored = await session.get_items()
    assert_whole_turns(stored)
    # The held turn is stored in the run's order once it completes.
    assert stored[3:] == [
        function_call("transfer", {"amount": 5}, "c2"),
        function_call("lookup", {"key": "fee"}, "c3"),
        function_call_output("c3", "value of fee"),
        function_call_output("c2", "moved 5"),
        text_message("Moved."),
    ]


async def test_a_resume_that_pauses_again_stores_the_finished_turn(
    mode: str, session: Session
) -> None:
    model = ScriptedModel(
        [
            [function_call("transfer", {"amount": 1}, "c1")],
            [function_call("transfer", {"amount": 2}, "c2")],
        ]
    )
    agent = agent_with(model)
    state = (await drive(mode, agent, "go", session=session)).to_state()
    state.approve(state.interruptions[0])
    again = await drive(mode, agent, state, session=session)
    assert [i.call_id for i in again.interruptions] == ["c2"]
    assert again.to_state().pending_turn_start == 2
    assert await session.get_items() == [
        user_message("go"),
        function_call("transfer", {"amount": 1}, "c1"),
        function_call_output("c1", "moved 1"),
    ]


async def test_still_undecided_calls_store_nothing(mode: str, session: Session) -> None:
    model = ScriptedModel([[function_call("transfer", {"amount": 1}, "c1")]])
    agent = agent_with(model)
    state = (await drive(mode, agent, "go", session=session)).to_state()
    again = await drive(mode, agent, state, session=session)
    assert again.interruptions
    assert await session.get_items() == [user_message("go")]


async def test_a_failed_resume_leaves_no_trace_and_can_be_retried(
    mode: str, session: Session
) -> None:
    model = ScriptedModel([[function_call("transfer", {"amount": 9}, "c1")]])
    agent = agent_with(model)
    state = (await drive(mode, agent, "Move 9", session=session)).to_state()
    state.approve(state.interruptions[0])
    checkpoint = state.to_string()
    model.add_multiple_turn_outputs([ConnectionError("network down"), [text_message("Moved 9.")]])
    with pytest.raises(ConnectionError):
        await drive(mode, agent, state, session=session)
    assert await session.get_items() == [user_message("Move 9")]
    assert state.to_string() == checkpoint
    retried = await drive(mode, agent, state, session=session)
    assert retried.final_output == "Moved 9."
    # The abandoned attempt's items appear neither in the model input nor the store.
    assert model.calls[-1].input == model.calls[-2].input
    assert await session.get_items() == [
        user_message("Move 9"),
        function_call("transfer", {"amount": 9}, "c1"),
        function_call_output("c1", "moved 9"),
        text_message("Moved 9."),
    ]


async def test_a_raising_tool_stores_only_the_turns_before_it(mode: str, session: Session) -> None:
    @function_tool(failure_error_function=None)
    def fails() -> str:
        raise RuntimeError("boom")

    model = ScriptedModel(
        [[function_call("lookup", {"key": "k"}, "c1")], [function_call("fails", {}, "c2")]]
    )
    with pytest.raises(RuntimeError, match="boom"):
        await drive(mode, agent_with(model, lookup, fails), "go", session=session)
    stored = await session.get_items()
    assert [i.get("call_id") for i in stored] == [None, "c1", "c1"]


async def test_max_turns_store_every_completed_turn(mode: str, session: Session) -> None:
    model = ScriptedModel([[function_call("lookup", {"key": str(i)}, f"c{i}")] for i in range(4)])
    agent = agent_with(model)
    with pytest.raises(MaxTurnsExceeded):
        await drive(mode, agent, "loop", session=session, max_turns=2)
    assert len(await session.get_items()) == 5
    await session.clear_session()
    result = await drive(
        mode,
        agent,
        "loop",
        session=session,
        max_turns=2,
        error_handlers={"max_turns": lambda data: "Stopped after two turns."},
    )
    stored = await session.get_items()
    assert stored[-1] == text_message("Stopped after two turns.") == result.new_items[-1]
    assert_whole_turns(stored)


async def test_a_session_must_be_a_session() -> None:
    with pytest.raises(UserError, match="session must be a Session"):
        await Runner.run(agent_with(ScriptedModel()), "x", session=[])  # type: ignore[arg-type]


# --- cancellation ---------------------------------------------------------------------


class StallingModel(ScriptedModel):
    """Scripted, but its call number ``stall_at`` hangs mid-stream until cancelled."""

    def __init__(self, outputs: list[Any], stall_at: int) -> None:
        super().__init__(outputs)
        self.stall_at = stall_at
        self.stalled = asyncio.Event()

    async def _stall_if_due(self) -> None:
        if len(self.calls) == self.stall_at:
            self.stalled.set()
            await asyncio.Event().wait()

    async def get_response(self, input: Any, *, instructions: Any, tools: Any) -> Any:
        response = await super().get_response(input, instructions=instructions, tools=tools)
        await self._stall_if_due()
        return response

    async def stream_response(
        self, input: Any, *, instructions: Any, tools: Any
    ) -> AsyncIterator[Any]:
        async for event in super().stream_response(input, instructions=instructions, tools=tools):
            yield event
            await self._stall_if_due()


TWO_TURNS = [
    [function_call("lookup", {"key": "a"}, "c1")],
    [function_call("lookup", {"key": "b"}, "c2")],
    [text_message("never")],
]
TURN_ONE = [
    user_message("go"),
    function_call("lookup", {"key": "a"}, "c1"),
    function_call_output("c1", "value of a"),
]


@pytest.mark.parametrize("how", ["result.cancel", "consumer task", "leave early"])
async def test_cancelling_a_streamed_run_mid_model_call(session: Session, how: str) -> None:
    model = StallingModel(TWO_TURNS, stall_at=2)
    result = Runner.run_streamed(agent_with(model), "go", session=session)

    async def consume() -> None:
        async for _ in result.stream_events():
            if how == "leave early" and model.stalled.is_set():
                break

    consumer = asyncio.ensure_future(consume())
    await asyncio.wait_for(model.stalled.wait(), 5)
    if how == "result.cancel":
        result.cancel()
        await asyncio.wait_for(consumer, 5)  # the stream ends after a cancel
    elif how == "consumer task":
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
    else:
        await asyncio.wait_for(consumer, 5)
    async for _ in result.stream_events():  # waits for the run to wind down
        pass
    assert not result.is_complete
    assert await session.get_items() == TURN_ONE
    with pytest.raises(UserError, match="was cancelled"):
        result.to_state()


async def test_cancelling_while_tools_run(mode: str, session: Session) -> None:
    started = asyncio.Event()

    @function_tool
    async def slow(key: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel(
        [
            [function_call("lookup", {"key": "a"}, "c1")],
            [
                function_call("slow", {"key": "b"}, "c2"),
                function_call("lookup", {"key": "c"}, "c3"),
            ],
        ]
    )
    agent = agent_with(model, lookup, slow)
    if mode == "run":
        task = asyncio.ensure_future(Runner.run(agent, "go", session=session))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        result = Runner.run_streamed(agent, "go", session=session)
        await asyncio.wait_for(started.wait(), 5)
        result.cancel()
        async for _ in result.stream_events():
            pass
    assert await session.get_items() == TURN_ONE


class GatedSession(MemorySession):
    """A session whose writes wait for ``gate`` (to cancel a run mid-write)."""

    def __init__(self) -> None:
        super().__init__("gated")
        self.writing = asyncio.Event()
        self.gate = asyncio.Event()

    async def add_items(self, items: list[Any]) -> None:
        self.writing.set()
        await self.gate.wait()
        await super().add_items(items)


async def test_a_cancelled_run_finishes_the_turn_it_is_writing(mode: str) -> None:
    session = GatedSession()
    model = ScriptedModel(TWO_TURNS)
    agent = agent_with(model)
    if mode == "run":
        task = asyncio.ensure_future(Runner.run(agent, "go", session=session))
    else:
        result = Runner.run_streamed(agent, "go", session=session)
        task = asyncio.ensure_future(_drain(result))
    await asyncio.wait_for(session.writing.wait(), 5)
    task.cancel()
    await asyncio.sleep(0)
    session.gate.set()  # the write goes on although its run was cancelled
    with pytest.raises(asyncio.CancelledError):
        await task
    if mode == "streamed":
        async for _ in result.stream_events():
            pass
    assert await session.get_items() == TURN_ONE
    assert len(model.calls) == 1  # and the run stopped there


async def test_a_run_cancelled_twice_still_finishes_the_turn_it_is_writing() -> None:
    session = GatedSession()
    model = ScriptedModel(TWO_TURNS)
    task = asyncio.ensure_future(Runner.run(agent_with(model), "go", session=session))
    await asyncio.wait_for(session.writing.wait(), 5)
    for _ in range(2):  # the second cancellation arrives while the run waits for the write
        task.cancel()
        await asyncio.sleep(0)
    session.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await session.get_items() == TURN_ONE


async def _drain(result: RunResultStreaming) -> None:
    async for event in result.stream_events():
        assert isinstance(event, object)


async def test_streamed_events_report_tool_approval_requests(session: Session) -> None:
    model = ScriptedModel([[function_call("transfer", {"amount": 3}, "c1")]])
    result = Runner.run_streamed(agent_with(model), "go", session=session)
    names = [e.name async for e in result.stream_events() if isinstance(e, RunItemStreamEvent)]
    assert names == ["tool_called", "tool_approval_requested"]
    state = RunState.from_string(agent_with(model), result.to_state().to_string())
    assert state.interruptions[0].call_id == "c1"
