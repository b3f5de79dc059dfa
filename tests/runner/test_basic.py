"""Runner behaviour on both ``Runner.run`` and ``Runner.run_streamed``: turns, tools,
model input preparation, max turns, errors and argument checking."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from histcore import items
from histcore.exceptions import HistcoreError, MaxTurnsExceeded, ModelBehaviorError, UserError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import ModelResponse, Usage
from histcore.runner.run import Runner
from histcore.runner.run_config import (
    CallModelData,
    ModelInputData,
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
)
from histcore.runner.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from histcore.runner.tool import function_tool
from histcore.testing import (
    ScriptedModel,
    ScriptExhausted,
    function_call,
    function_call_output,
    text_message,
    user_message,
)
from tests.support.runner import drive


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
async def explode(reason: str) -> str:
    raise ValueError(f"secret detail: {reason}")


def make_agent(model: ScriptedModel, *tools: Any, **kwargs: Any) -> Agent:
    return Agent("assistant", instructions="Be brief.", model=model, tools=tools, **kwargs)


async def test_final_text_answer_ends_the_run(mode: str) -> None:
    model = ScriptedModel([[text_message("hello")]])
    result = await drive(mode, make_agent(model), "hi")
    assert result.final_output == "hello"
    assert result.new_items == [text_message("hello")]
    assert len(result.raw_responses) == 1
    assert result.interruptions == []
    assert result.to_input_list() == [user_message("hi"), text_message("hello")]
    call = model.calls[0]
    assert call.input == [user_message("hi")]
    assert call.instructions == "Be brief."
    assert call.tools == []


async def test_tool_call_then_answer(mode: str) -> None:
    model = ScriptedModel([[function_call("add", {"a": 2, "b": 3}, "c1")], [text_message("5")]])
    result = await drive(mode, make_agent(model, add), "2+3?")
    assert result.final_output == "5"
    assert result.new_items == [
        function_call("add", {"a": 2, "b": 3}, "c1"),
        function_call_output("c1", "5"),
        text_message("5"),
    ]
    assert model.calls[1].input == [user_message("2+3?"), *result.new_items[:2]]
    assert model.calls[0].tools == [add.to_model_tool()]
    assert result.current_turn == 2
    assert result.usage.requests == 2


async def test_message_and_calls_in_one_response_continue_the_run(mode: str) -> None:
    model = ScriptedModel(
        [
            [text_message("let me add"), function_call("add", {"a": 1, "b": 1}, "c1")],
            [text_message("2")],
        ]
    )
    result = await drive(mode, make_agent(model, add), "1+1")
    assert result.final_output == "2"
    assert len(model.calls) == 2


async def test_response_without_message_or_calls_runs_another_turn(mode: str) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    model = ScriptedModel([[reasoning], [text_message("done")]])
    result = await drive(mode, make_agent(model), "think")
    assert result.final_output == "done"
    # Reasoning without the item it produced never reaches the model (the API rejects it).
    assert model.calls[1].input == [user_message("think")]


async def test_async_tools_of_one_turn_run_concurrently(mode: str) -> None:
    first_started, second_started = asyncio.Event(), asyncio.Event()

    @function_tool
    async def first() -> str:
        first_started.set()
        await second_started.wait()  # deadlocks unless both calls run at once
        return "one"

    @function_tool
    async def second() -> str:
        second_started.set()
        await first_started.wait()
        return "two"

    model = ScriptedModel(
        [
            [function_call("first", {}, "c1"), function_call("second", {}, "c2")],
            [text_message("ok")],
        ]
    )
    result = await asyncio.wait_for(drive(mode, make_agent(model, first, second), "go"), 5)
    # Outputs are recorded in call order, whatever order the tools finished in.
    assert result.new_items[2:4] == [
        function_call_output("c1", "one"),
        function_call_output("c2", "two"),
    ]


async def test_sync_tools_run_in_threads_concurrently(mode: str) -> None:
    barrier = threading.Barrier(2, timeout=5)

    @function_tool
    def left() -> str:
        barrier.wait()
        return "l"

    @function_tool
    def right() -> str:
        barrier.wait()
        return "r"

    model = ScriptedModel(
        [[function_call("left", {}, "c1"), function_call("right", {}, "c2")], [text_message("ok")]]
    )
    result = await drive(mode, make_agent(model, left, right), "go")
    assert [item["output"] for item in result.new_items[2:4]] == ["l", "r"]


async def test_model_input_is_latest_value_deduped(mode: str) -> None:
    history = [
        user_message("start"),
        function_call("add", {"a": 1, "b": 1}, "c1"),
        function_call_output("c1", "stale"),
        function_call_output("c1", "fresh"),
    ]
    model = ScriptedModel([[text_message("ok")]])
    result = await drive(mode, make_agent(model, add), history)
    assert model.calls[0].input == items.deduplicate_input_items_preferring_latest(history)
    assert model.calls[0].input[-1]["output"] == "fresh"
    # The run's own record keeps the input as given.
    assert result.input == history


async def test_call_model_input_filter_runs_before_the_dedupe(mode: str) -> None:
    seen: list[CallModelData] = []

    async def keep_last_two(data: CallModelData) -> ModelInputData:
        seen.append(data)
        data.model_data.input.append(function_call("add", {"a": 0, "b": 0}, "c9"))
        data.model_data.input.append(function_call_output("c9", "dup-a"))
        data.model_data.input.append(function_call_output("c9", "dup-b"))
        data.model_data.input.append(function_call_output("c8", "no call"))
        return ModelInputData(data.model_data.input[-5:], instructions="filtered")

    model = ScriptedModel([[function_call("add", {"a": 1, "b": 2}, "c1")], [text_message("3")]])
    agent = make_agent(model, add)
    config = RunConfig(call_model_input_filter=keep_last_two)
    result = await drive(mode, agent, "sum", run_config=config)
    assert seen[0].agent is agent
    assert seen[0].model_data.instructions == "Be brief."
    # Two outputs with one call id collapse to the latest after the filter, and an
    # output without its call is dropped (the API would reject it).
    assert model.calls[0].input == [
        user_message("sum"),
        function_call("add", {"a": 0, "b": 0}, "c9"),
        function_call_output("c9", "dup-b"),
    ]
    assert model.calls[0].instructions == "filtered"
    # What the filter appended to its list never reaches the run's items.
    assert function_call_output("c9", "dup-a") not in result.to_input_list()
    assert result.final_output == "3"


async def test_filter_returning_the_wrong_type_is_a_user_error(mode: str) -> None:
    model = ScriptedModel([[text_message("x")]])
    config = RunConfig(call_model_input_filter=lambda data: data.model_data.input)  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="call_model_input_filter must return a ModelInputData"):
        await drive(mode, make_agent(model), "hi", run_config=config)


async def test_a_tool_that_raises_gives_the_model_an_error_output(mode: str) -> None:
    model = ScriptedModel(
        [[function_call("explode", {"reason": "disk"}, "c1")], [text_message("sorry")]]
    )
    result = await drive(mode, make_agent(model, explode), "go")
    output = result.new_items[1]
    assert output["type"] == "function_call_output"
    assert output["call_id"] == "c1"
    assert "ValueError" in output["output"]
    assert "secret detail" not in output["output"]  # the exception text is not leaked
    assert result.final_output == "sorry"


async def test_custom_failure_function_and_raising_tools(mode: str) -> None:
    @function_tool(failure_error_function=lambda name, exc: f"{name} broke: {exc}")
    def fragile() -> str:
        raise RuntimeError("boom")

    model = ScriptedModel([[function_call("fragile", {}, "c1")], [text_message("ok")]])
    result = await drive(mode, make_agent(model, fragile), "go")
    assert result.new_items[1]["output"] == "fragile broke: boom"

    @function_tool(failure_error_function=None)
    def strict() -> str:
        raise RuntimeError("propagates")

    model = ScriptedModel([[function_call("strict", {}, "c1")]])
    with pytest.raises(RuntimeError, match="propagates"):
        await drive(mode, make_agent(model, strict), "go")


async def test_bad_arguments_reach_the_model_as_an_error(mode: str) -> None:
    model = ScriptedModel(
        [[function_call("add", {"a": "one", "b": 2}, "c1")], [text_message("oops")]]
    )
    result = await drive(mode, make_agent(model, add), "go")
    assert result.new_items[1]["output"] == (
        "Invalid arguments for tool 'add': a: expected an integer, got a string"
    )


async def test_max_turns_without_a_handler_raises(mode: str) -> None:
    model = ScriptedModel([[function_call("add", {"a": 1, "b": 1})] for _ in range(3)])
    with pytest.raises(MaxTurnsExceeded, match=r"max_turns \(2\)"):
        await drive(mode, make_agent(model, add), "loop", max_turns=2)
    assert len(model.calls) == 2


@pytest.mark.parametrize("style", ["result", "bare", "async", "hidden"])
async def test_max_turns_handler_supplies_the_final_output(mode: str, style: str) -> None:
    model = ScriptedModel([[function_call("add", {"a": 1, "b": 1}, f"c{i}")] for i in range(2)])
    received: list[RunErrorHandlerInput] = []

    def handler(data: RunErrorHandlerInput) -> Any:
        received.append(data)
        if style == "result":
            return RunErrorHandlerResult("gave up")
        if style == "hidden":
            return RunErrorHandlerResult("gave up", include_in_history=False)
        return "gave up"

    async def async_handler(data: RunErrorHandlerInput) -> Any:
        return handler(data)

    chosen = async_handler if style == "async" else handler
    result = await drive(
        mode, make_agent(model, add), "loop", max_turns=2, error_handlers={"max_turns": chosen}
    )
    assert result.final_output == "gave up"
    assert isinstance(received[0].error, MaxTurnsExceeded)
    assert len(received[0].run_data.new_items) == 4
    assert len(received[0].run_data.raw_responses) == 2
    if style == "hidden":
        assert len(result.new_items) == 4
    else:
        assert result.new_items[-1] == text_message("gave up")


async def test_max_turns_handler_returning_none_reraises(mode: str) -> None:
    model = ScriptedModel([[function_call("add", {"a": 1, "b": 1})]])
    with pytest.raises(MaxTurnsExceeded):
        await drive(
            mode,
            make_agent(model, add),
            "x",
            max_turns=1,
            error_handlers={"max_turns": lambda data: None},
        )


async def test_a_fresh_run_reports_exactly_its_own_items(mode: str) -> None:
    model = ScriptedModel([[text_message("first")], [text_message("second")]])
    agent = make_agent(model)
    one = await drive(mode, agent, "a")
    two = await drive(mode, agent, "b")
    assert one.new_items == [text_message("first")]
    assert len(one.raw_responses) == 1
    assert two.new_items == [text_message("second")]
    assert len(two.raw_responses) == 1
    assert model.calls[1].input == [user_message("b")]
    assert one.new_items[0] is not two.new_items[0]


async def test_the_callers_input_is_copied_not_adopted(mode: str) -> None:
    given = [user_message("original")]
    model = ScriptedModel([[text_message("ok")]])
    result = await drive(mode, make_agent(model), given)
    given[0]["content"] = "changed later"
    given.append(user_message("appended later"))
    assert result.input == [user_message("original")]
    assert result.to_input_list() == [user_message("original"), text_message("ok")]


async def test_model_errors_propagate(mode: str) -> None:
    model = ScriptedModel([ConnectionError("network down")])
    with pytest.raises(ConnectionError, match="network down"):
        await drive(mode, make_agent(model), "hi")
    with pytest.raises(ScriptExhausted):
        await drive(mode, make_agent(model), "hi")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ([function_call("nope", {}, "c1")], "tool 'nope', which agent 'assistant' does not have"),
        ([{"type": "function_call", "name": "add", "arguments": "{}"}], "needs a string 'call_id'"),
        (["not an item"], r"output\[0\] is a str,"),
        ([7], r"output\[0\] is an int,"),
        ([{"type": "apply_patch_call", "call_id": "p1"}], "an 'apply_patch_call' without"),
        ([{"type": "shell_call", "call_id": "s1"}], "'shell_call' without its output"),
    ],
)
async def test_model_misbehaviour_is_a_clear_error(
    mode: str, output: list[Any], message: str
) -> None:
    model = ScriptedModel()
    model._queue.append(output)  # bypass set_next_output's own checks
    with pytest.raises(ModelBehaviorError, match=message):
        await drive(mode, make_agent(model, add), "hi")


async def test_hosted_items_are_recorded_without_running_anything(mode: str) -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    shell = {"type": "shell_call", "call_id": "s1", "status": "completed"}
    shell_out = {"type": "shell_call_output", "call_id": "s1", "output": []}
    model = ScriptedModel([[search, shell, shell_out, text_message("found")]])
    result = await drive(mode, make_agent(model), "search")
    assert result.new_items == [search, shell, shell_out, text_message("found")]


async def test_model_returning_something_else_is_an_error() -> None:
    class Broken(ScriptedModel):
        async def get_response(self, input: Any, *, instructions: Any, tools: Any) -> Any:
            return {"output": []}

    with pytest.raises(ModelBehaviorError, match="not a ModelResponse"):
        await Runner.run(make_agent(Broken()), "hi")


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([{"type": "x"}], "ended without a ModelResponse"),
        ([ModelResponse([]), {"type": "late"}], "after its ModelResponse"),
        ([42], "yielded an int;"),
        ([object()], "yielded an object;"),
    ],
)
async def test_stream_protocol_violations(events: list[Any], message: str) -> None:
    class Streamer(ScriptedModel):
        async def stream_response(self, input: Any, *, instructions: Any, tools: Any) -> Any:
            for event in events:
                yield event

    result = Runner.run_streamed(make_agent(Streamer()), "hi")
    with pytest.raises(ModelBehaviorError, match=message):
        async for _ in result.stream_events():
            pass


async def test_stream_events_arrive_in_order() -> None:
    model = ScriptedModel([[function_call("add", {"a": 1, "b": 2}, "c1")], [text_message("3")]])
    result = Runner.run_streamed(make_agent(model, add), "1+2")
    assert not result.is_complete
    events = [event async for event in result.stream_events()]
    item_events = [e for e in events if isinstance(e, RunItemStreamEvent)]
    assert [e.name for e in item_events] == ["tool_called", "tool_output", "message_output_created"]
    assert [e.item for e in item_events] == result.new_items
    raw = [e.data["type"] for e in events if isinstance(e, RawResponsesStreamEvent)]
    assert raw.count("response.completed") == 2
    assert "response.output_text.delta" in raw
    # The model's raw events of a turn precede the items recorded from that turn.
    assert events.index(item_events[0]) > raw.index("response.completed")
    assert result.is_complete
    assert result.final_output == "3"
    # Calling stream_events again after the end returns at once.
    assert [e async for e in result.stream_events()] == []


async def test_stream_errors_surface_after_the_earlier_events() -> None:
    model = ScriptedModel([[function_call("add", {"a": 1, "b": 2}, "c1")], RuntimeError("late")])
    result = Runner.run_streamed(make_agent(model, add), "x")
    seen: list[str] = []
    with pytest.raises(RuntimeError, match="late"):  # noqa: PT012
        async for event in result.stream_events():
            if isinstance(event, RunItemStreamEvent):
                seen.append(event.name)
    assert seen == ["tool_called", "tool_output"]
    assert not result.is_complete


def test_run_sync_outside_and_inside_a_loop() -> None:
    model = ScriptedModel([[text_message("sync ok")]])
    agent = make_agent(model)
    assert Runner.run_sync(agent, "hi").final_output == "sync ok"

    async def inside() -> None:
        with pytest.raises(UserError, match="inside an event loop"):
            Runner.run_sync(agent, "hi")

    asyncio.run(inside())


def test_run_streamed_needs_a_running_loop() -> None:
    with pytest.raises(UserError, match="running event loop"):
        Runner.run_streamed(make_agent(ScriptedModel()), "hi")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda agent: Runner.run("agent", "hi"), "agent must be an Agent"),  # type: ignore[arg-type]
        (lambda agent: Runner.run(agent, 42), "input must be a str, a list of items or a RunState"),  # type: ignore[arg-type]
        (lambda agent: Runner.run(agent, [1]), r"input\[0\] is an int,"),
        (lambda agent: Runner.run(agent, [object()]), r"input\[0\] is an object,"),
        (lambda agent: Runner.run(agent, ["hi"]), r"input\[0\] is a str,"),
        (lambda agent: Runner.run(agent, "hi", max_turns=0), "max_turns must be a positive int"),
        (lambda agent: Runner.run(agent, "hi", run_config={}), "run_config must be a RunConfig"),  # type: ignore[arg-type]
        (
            lambda agent: Runner.run(agent, "hi", error_handlers={"model_refusal": print}),
            "unknown kind 'model_refusal'",
        ),
        (lambda agent: Runner.run(Agent("bare"), "hi"), "agent 'bare' has no model"),
    ],
)
async def test_bad_arguments_are_clear_user_errors(call: Any, message: str) -> None:
    agent = make_agent(ScriptedModel([[text_message("x")]]))
    with pytest.raises(UserError, match=message):
        await call(agent)


def test_agent_checks_its_fields() -> None:
    with pytest.raises(UserError, match="non-empty str"):
        Agent("")
    with pytest.raises(UserError, match="decorate the function with @function_tool"):
        Agent("a", tools=[len])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"tools\[0\] is a builtin_function_or_method, not"):
        Agent("a", tools=[len])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"tools\[0\] is an int, not a FunctionTool"):
        Agent("a", tools=[1])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"tools\[1\] is an object, not a FunctionTool"):
        Agent("a", tools=[add, object()])  # type: ignore[list-item]
    with pytest.raises(UserError, match="two tools are named 'add'"):
        Agent("a", tools=[add, add])
    with pytest.raises(UserError, match="model must be a Model"):
        Agent("a", model=3)  # type: ignore[arg-type]
    agent = Agent("a", tools=[add])
    assert agent.tools == (add,)
    assert agent.get_tool("add") is add
    assert agent.get_tool("x") is None
    assert issubclass(UserError, HistcoreError)


async def test_run_config_model_overrides_the_agent_model() -> None:
    unused, used = ScriptedModel(), ScriptedModel([[text_message("from config")]])
    result = await Runner.run(make_agent(unused), "hi", run_config=RunConfig(model=used))
    assert result.final_output == "from config"
    assert unused.calls == []
    assert len(used.calls) == 1


async def test_usage_is_summed_over_responses() -> None:
    class Counting(ScriptedModel):
        async def get_response(self, input: Any, *, instructions: Any, tools: Any) -> Any:
            response = await super().get_response(input, instructions=instructions, tools=tools)
            return ModelResponse(response.output, Usage(1, 10, 5, 15), "r")

    model = Counting([[function_call("add", {"a": 1, "b": 1})], [text_message("2")]])
    result = await Runner.run(make_agent(model, add), "x")
    assert result.usage == Usage(requests=2, input_tokens=20, output_tokens=10, total_tokens=30)
