"""``histcore.openai_agents.testing.SDKScriptedModel`` on the installed SDK release."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.models.fake_id import FAKE_RESPONSES_ID
from agents.models.interface import Model

import histcore.openai_agents as accelerator
import histcore.openai_agents.testing as sdk_testing
import histcore.testing
from histcore.cli.bench import sdk_conversation
from histcore.openai_agents.testing import SDKScriptedModel

CONFIG = RunConfig(tracing_disabled=True)


@function_tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"sunny in {city}"


def agent(model: SDKScriptedModel) -> Agent[Any]:
    return Agent(name="assistant", instructions="Answer briefly.", model=model, tools=[lookup])


def test_is_the_sdk_model_interface_and_the_one_the_bench_uses() -> None:
    assert issubclass(SDKScriptedModel, Model)
    assert sdk_conversation.SDKScriptedModel is SDKScriptedModel


def test_one_name_one_model() -> None:
    """``ScriptedModel`` names histcore's Runner model alone; the drop-in's former name
    still gives its model, with a DeprecationWarning on each use."""
    assert SDKScriptedModel is not histcore.testing.ScriptedModel
    assert "ScriptedModel" not in sdk_testing.__all__
    with pytest.warns(DeprecationWarning, match="use SDKScriptedModel"):
        assert sdk_testing.ScriptedModel is SDKScriptedModel
    with pytest.warns(DeprecationWarning, match="use SDKScriptedModel"):
        from histcore.openai_agents.testing import ScriptedModel
    assert ScriptedModel is SDKScriptedModel
    with pytest.raises(AttributeError, match="no attribute 'ScriptedModels'"):
        sdk_testing.ScriptedModels  # type: ignore[attr-defined]  # noqa: B018


def test_calls_the_tool_once_per_part_then_answers() -> None:
    model = SDKScriptedModel()
    result = asyncio.run(Runner.run(agent(model), "Paris and Rome", run_config=CONFIG))
    assert result.final_output == "answer 2: saw 6 items, last call call_1_1"
    assert model.responses == 2
    first, second = (json.loads(text) for text in model.inputs)
    assert first == [{"role": "user", "content": "Paris and Rome"}]
    outputs = [item["output"] for item in second if item.get("type") == "function_call_output"]
    assert outputs == ["sunny in Paris", "sunny in Rome"]
    calls = [item for item in second if item.get("type") == "function_call"]
    arguments = [json.loads(call["arguments"]) for call in calls]
    assert arguments == [{"city": "Paris"}, {"city": "Rome"}]


def test_streamed_run_gives_the_same_conversation() -> None:
    plain, streamed = SDKScriptedModel(), SDKScriptedModel()
    expected = asyncio.run(Runner.run(agent(plain), "Oslo and Lima", run_config=CONFIG))

    async def stream() -> Any:
        run = Runner.run_streamed(agent(streamed), "Oslo and Lima", run_config=CONFIG)
        kinds = [event.type async for event in run.stream_events()]
        return run.final_output, kinds

    final_output, kinds = asyncio.run(stream())
    assert final_output == expected.final_output
    assert streamed.inputs == plain.inputs
    assert "run_item_stream_event" in kinds


def test_placeholder_ids_and_options() -> None:
    model = SDKScriptedModel(record=False, tool_name="search", argument="q", placeholder_every=1)
    output = model.output_for("a and b")
    assert [item.type for item in output] == ["reasoning", "function_call", "function_call"]
    assert [getattr(item, "name", None) for item in output[1:]] == ["search", "search"]
    assert json.loads(getattr(output[2], "arguments", "")) == {"q": "b"}
    answer = model.output_for([{"type": "function_call_output", "call_id": "c", "output": "x"}])
    assert answer[0].id == FAKE_RESPONSES_ID
    assert model.inputs == []
    assert model.responses == 2
    never = SDKScriptedModel(placeholder_every=0)
    reply = never.output_for([{"type": "function_call_output", "call_id": "c", "output": "x"}])
    assert reply[0].id == "msg_1"
    with pytest.raises(ValueError, match="placeholder_every"):
        SDKScriptedModel(placeholder_every=-1)


def test_plain_and_installed_runs_match_on_a_session(tmp_path: Any) -> None:
    """The use it is made for: one conversation without and with install()."""

    def converse(path: str) -> tuple[list[str], list[str], list[Any]]:
        async def run() -> tuple[list[str], list[str], list[Any]]:
            model = SDKScriptedModel()
            session = SQLiteSession("s", path)
            try:
                outputs = [
                    str((await Runner.run(agent(model), text, session=session)).final_output)
                    for text in ("Paris", "Rome and Oslo", "Lima")
                ]
                return outputs, model.inputs, await session.get_items()
            finally:
                session.close()

        return asyncio.run(run())

    accelerator.uninstall()
    plain = converse(str(tmp_path / "plain.db"))
    with accelerator.installed():
        installed = converse(str(tmp_path / "installed.db"))
    assert installed == plain
    assert plain[0][-1].startswith("answer 6:")


def test_id_prefix_keeps_the_ids_of_several_models_apart() -> None:
    first, second = SDKScriptedModel(record=False), SDKScriptedModel(record=False, id_prefix="b_")
    assert [item.id for item in first.output_for("x and y")] == ["rs_1", "fc_1_0", "fc_1_1"]
    output = second.output_for("x and y")
    assert [item.id for item in output] == ["rs_b_1", "fc_b_1_0", "fc_b_1_1"]
    assert [getattr(item, "call_id", None) for item in output[1:]] == ["call_b_1_0", "call_b_1_1"]
    with pytest.raises(TypeError, match="id_prefix must be a str"):
        SDKScriptedModel(id_prefix=3)  # type: ignore[arg-type]


def test_the_bench_conversation_gives_the_guard_nothing_to_repair(tmp_path: Any) -> None:
    """The bench times the guard's check: its store and turns are an input the API takes."""
    store = str(tmp_path / "bench.db")
    sdk_conversation.build_store(store, 600)
    accelerator.uninstall()
    with accelerator.installed(guard=True) as installation:
        for turn in range(3):
            model = SDKScriptedModel(record=False, id_prefix=f"t{turn}_")
            asyncio.run(sdk_conversation.run_turn(store, f"Paris and Rome, round {turn}", model))
        counts = installation.guard
        assert counts is not None
        assert counts.checked == 6
        assert counts.repaired == 0
