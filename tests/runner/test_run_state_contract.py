"""The RunState contract (docs/design.md "RunState and resume") on ``Runner.run`` and
``Runner.run_streamed``: resuming never changes the state, resumes are independent,
results and states share no lists, approvals survive serialisation, and a resume
copies the history once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import histcore.runner.run_input
import histcore.runner.run_state
from histcore.exceptions import UserError
from histcore.runner.agent import Agent
from histcore.runner.run import Runner, rejection_text
from histcore.runner.run_state import ApprovalDecision, RunState
from histcore.runner.tool import ToolApprovalItem, function_tool
from histcore.testing import (
    ScriptedModel,
    function_call,
    function_call_output,
    text_message,
    user_message,
)
from tests.support.runner import Result, drive

deleted: list[str] = []


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@function_tool
def list_files() -> list[str]:
    return ["a.txt", "b.txt"]


@function_tool(needs_approval=lambda args: args["path"].startswith("/etc"))
async def guarded_delete(path: str) -> str:
    return f"removed {path}"


def agent_with(model: ScriptedModel) -> Agent:
    return Agent("files", model=model, tools=[delete_file, list_files, guarded_delete])


async def paused(mode: str, model: ScriptedModel) -> tuple[Agent, Result]:
    """A run paused on one approval, after a tool that needed none ran in that turn."""
    model.add_multiple_turn_outputs(
        [
            [function_call("list_files", {}, "c0")],
            [
                text_message("Deleting."),
                function_call("delete_file", {"path": "a.txt"}, "c1"),
                function_call("list_files", {}, "c2"),
            ],
        ]
    )
    agent = agent_with(model)
    result = await drive(mode, agent, [user_message("clean up")])
    assert result.final_output is None
    assert [item.call_id for item in result.interruptions] == ["c1"]
    return agent, result


def public_fields(state: RunState) -> dict[str, Any]:
    """Deep copies of everything a caller can read from a state."""
    return copy.deepcopy(
        {
            "json": state.to_json(),
            "string": state.to_string(),
            "agent_name": state.agent_name,
            "original_input": state.original_input,
            "generated_items": state.generated_items,
            "model_responses": state.model_responses,
            "current_turn": state.current_turn,
            "max_turns": state.max_turns,
            "pending_turn_start": state.pending_turn_start,
            "interruptions": state.interruptions,
            "approvals": dict(state.approvals),
        }
    )


def containers(*roots: Any) -> dict[int, Any]:
    """Every list, tuple and dict reachable from ``roots`` (through responses and
    approval items too), by id."""
    found: dict[int, Any] = {}
    stack = list(roots)
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple, dict)):
            if id(value) in found:
                continue
            found[id(value)] = value
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif isinstance(value, ToolApprovalItem):
            stack.append(value.raw_item)
        elif hasattr(value, "output") and hasattr(value, "usage"):
            stack.append(value.output)
    return found


def state_containers(state: RunState) -> dict[int, Any]:
    return containers(
        state.original_input, state.generated_items, state.model_responses, state.interruptions
    )


def result_containers(result: Result) -> dict[int, Any]:
    return containers(result.input, result.new_items, result.raw_responses, result.interruptions)


async def test_resuming_never_changes_the_state(mode: str) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    state = result.to_state()
    state.approve(state.interruptions[0])
    before = public_fields(state)
    ids_before = set(state_containers(state))
    model.set_next_output([text_message("Done.")])
    resumed = await drive(mode, agent, state)
    assert resumed.final_output == "Done."
    assert public_fields(state) == before
    assert set(state_containers(state)) == ids_before
    # Nothing of the state is reachable from the resumed result.
    assert not set(state_containers(state)) & set(result_containers(resumed))


async def test_two_resumes_from_one_state_are_independent(mode: str) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    state = result.to_state()
    state.approve(state.interruptions[0])
    model.add_multiple_turn_outputs([[text_message("first answer")], [text_message("second")]])
    first = await drive(mode, agent, state)
    second = await drive(mode, agent, state)
    assert (first.final_output, second.final_output) == ("first answer", "second")
    # The second resume saw exactly what the first saw: none of the first's items.
    assert model.calls[-1].input == model.calls[-2].input
    assert text_message("first answer") not in model.calls[-1].input
    assert text_message("first answer") not in second.new_items
    assert len(first.new_items) == len(second.new_items)
    assert len(second.raw_responses) == len(state.model_responses) + 1
    assert not set(result_containers(first)) & set(result_containers(second))


async def test_to_state_never_aliases_the_result(mode: str) -> None:
    model = ScriptedModel()
    _, result = await paused(mode, model)
    state = result.to_state()
    assert not set(state_containers(state)) & set(result_containers(result))
    snapshot = state.to_json()
    result.new_items[0]["arguments"] = "tampered"
    result.new_items.append(user_message("tampered"))
    result.raw_responses[0].output.clear()
    result.interruptions[0].raw_item["name"] = "tampered"
    assert state.to_json() == snapshot
    # Two states of one result are independent of each other too.
    assert not set(state_containers(state)) & set(state_containers(result.to_state()))


async def test_a_resumed_run_continues_the_original_run(mode: str) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    state = result.to_state()
    state.approve(state.interruptions[0])
    model.set_next_output([text_message("Done.")])
    deleted.clear()
    resumed = await drive(mode, agent, state)
    assert deleted == ["a.txt"]
    assert resumed.new_items == [
        *result.new_items,
        function_call_output("c1", "deleted a.txt"),
        text_message("Done."),
    ]
    assert resumed.to_input_list() == [user_message("clean up"), *resumed.new_items]
    assert model.last_input == [user_message("clean up"), *resumed.new_items[:-1]]
    assert resumed.interruptions == []
    assert resumed.current_turn == 3


@pytest.mark.parametrize("message", [None, "Not that file.", ""])
async def test_rejection_across_a_string_round_trip(mode: str, message: str | None) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    text = result.to_state().to_string()
    loaded = RunState.from_string(agent, text)
    loaded.reject(loaded.interruptions[0], message)
    reloaded = RunState.from_string(agent, loaded.to_string())
    assert dict(reloaded.approvals) == {"c1": ApprovalDecision(False, message)}
    model.set_next_output([text_message("Skipped.")])
    deleted.clear()
    resumed = await drive(mode, agent, reloaded)
    expected = rejection_text("delete_file") if message is None else message
    assert function_call_output("c1", expected) in model.last_input
    assert deleted == []
    assert resumed.final_output == "Skipped."


async def test_approval_across_a_string_round_trip(mode: str) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    loaded = RunState.from_string(agent, result.to_state().to_string())
    loaded.approve(loaded.interruptions[0])
    reloaded = RunState.from_string(agent, loaded.to_string())
    model.set_next_output([text_message("Deleted.")])
    resumed = await drive(mode, agent, reloaded)
    assert function_call_output("c1", "deleted a.txt") in model.last_input
    assert resumed.final_output == "Deleted."


async def test_undecided_calls_pause_the_run_again(mode: str) -> None:
    model = ScriptedModel(
        [
            [
                function_call("delete_file", {"path": "x"}, "c1"),
                function_call("guarded_delete", {"path": "/etc/passwd"}, "c2"),
                function_call("guarded_delete", {"path": "notes/y"}, "c3"),
            ]
        ]
    )
    agent = agent_with(model)
    result = await drive(mode, agent, "go")
    # The predicate asked for approval of /etc only; notes/y ran in the first turn.
    assert [i.call_id for i in result.interruptions] == ["c1", "c2"]
    assert result.new_items[-1] == function_call_output("c3", "removed notes/y")
    state = result.to_state()
    state.approve(state.interruptions[1])
    again = await drive(mode, agent, state)
    assert [i.call_id for i in again.interruptions] == ["c1"]
    assert again.new_items[-1] == function_call_output("c2", "removed /etc/passwd")
    assert len(model.calls) == 1  # no model call while a call is pending
    second_state = again.to_state()
    assert second_state.pending_turn_start == state.pending_turn_start == 0
    second_state.reject(second_state.interruptions[0])
    model.set_next_output([text_message("ok")])
    final = await drive(mode, agent, second_state)
    assert final.final_output == "ok"
    outputs = [i["call_id"] for i in final.new_items if i["type"] == "function_call_output"]
    assert outputs == ["c3", "c2", "c1"]


async def test_a_finished_state_resumes_with_a_new_turn(mode: str) -> None:
    model = ScriptedModel([[text_message("one")], [text_message("two")]])
    agent = agent_with(model)
    result = await drive(mode, agent, "hi")
    state = result.to_state()
    assert state.interruptions == ()
    assert state.pending_turn_start == 1
    more = await drive(mode, agent, state)
    assert more.final_output == "two"
    assert model.last_input == [user_message("hi"), text_message("one")]


async def test_max_turns_come_from_the_state_unless_given(mode: str) -> None:
    model = ScriptedModel()
    agent, result = await paused(mode, model)
    state = result.to_state()
    assert state.max_turns == 10
    loaded = RunState.from_json(agent, {**state.to_json(), "max_turns": 2})
    loaded.approve(loaded.interruptions[0])
    model.set_next_output([function_call("list_files", {}, "c5")])
    resumed = await drive(mode, agent, loaded, error_handlers={"max_turns": lambda data: "stopped"})
    assert resumed.final_output == "stopped"
    model.add_multiple_turn_outputs([[function_call("list_files", {})], [text_message("ok")]])
    longer = await drive(mode, agent, loaded, max_turns=5)
    assert longer.final_output == "ok"


async def test_a_resume_copies_the_history_once(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    history = [user_message(f"message {i}") for i in range(5_000)]
    model = ScriptedModel([[function_call("delete_file", {"path": "p"}, "c1")]])
    agent = agent_with(model)
    state = (await drive(mode, agent, history)).to_state()
    state.approve(state.interruptions[0])
    copied: list[int] = []
    real = histcore.runner.run_state.deep_copy_items

    def counting(items: Any) -> list[Any]:
        items = list(items)
        copied.append(len(items))
        return real(items)

    monkeypatch.setattr(histcore.runner.run_state, "deep_copy_items", counting)
    monkeypatch.setattr(histcore.runner.run_input, "deep_copy_items", counting)
    # Several turns after the resume: the copy count must not grow with them.
    model.add_multiple_turn_outputs(
        [[function_call("list_files", {})] for _ in range(3)] + [[text_message("done")]]
    )
    resumed = await drive(mode, agent, state)
    assert resumed.final_output == "done"
    state_items = len(history) + len(state.generated_items)
    response_items = sum(len(r.output) for r in state.model_responses)
    assert sum(copied) == state_items + response_items + len(state.interruptions)
    assert copied.count(len(history)) == 1


async def test_approve_and_reject_check_their_arguments() -> None:
    model = ScriptedModel()
    _, result = await paused("run", model)
    state = result.to_state()
    stranger = ToolApprovalItem(function_call("delete_file", {"path": "z"}, "c-other"))
    with pytest.raises(UserError, match=r"call 'c-other' .* is not pending"):
        state.approve(stranger)
    with pytest.raises(UserError, match="takes a ToolApprovalItem"):
        state.approve("c1")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="message must be a str or None"):
        state.reject(state.interruptions[0], 42)  # type: ignore[arg-type]
    # The interruption object of the result works on its state (matched by call id),
    # and a later decision replaces an earlier one.
    state.approve(result.interruptions[0])
    state.reject(result.interruptions[0], "changed my mind")
    assert dict(state.approvals) == {"c1": ApprovalDecision(False, "changed my mind")}
    with pytest.raises(TypeError):
        state.approvals["c1"] = ApprovalDecision(True)  # type: ignore[index]


async def test_resuming_with_another_agent_is_refused() -> None:
    model = ScriptedModel()
    _, result = await paused("run", model)
    state = result.to_state()
    with pytest.raises(UserError, match="belongs to agent 'files', not 'other'"):
        await Runner.run(Agent("other", model=model), state)
    lacking = Agent("files", model=model, tools=[list_files])
    with pytest.raises(UserError, match="pending call to tool 'delete_file'"):
        await Runner.run(lacking, state)


async def test_streamed_state_waits_for_the_end() -> None:
    model = ScriptedModel([[text_message("hi")]])
    result = Runner.run_streamed(agent_with(model), "x")
    with pytest.raises(UserError, match="has not finished"):
        result.to_state()
    async for _ in result.stream_events():
        pass
    assert result.to_state().generated_items == (text_message("hi"),)


async def test_state_changes_made_after_run_streamed_do_not_leak_in() -> None:
    model = ScriptedModel()
    agent, result = await paused("run", model)
    state = result.to_state()
    model.set_next_output([text_message("unused")])
    streamed = Runner.run_streamed(agent, state)
    state.approve(state.interruptions[0])  # after the run took its copy
    async for _ in streamed.stream_events():
        pass
    assert [i.call_id for i in streamed.interruptions] == ["c1"]
    assert model.remaining == 1
