"""RunState serialisation: ``$schemaVersion``, exact round trips, and clear errors
naming the field for every malformed input, with nothing half-loaded."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.exceptions import RunStateError, UserError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import ModelResponse
from histcore.runner.run import Runner
from histcore.runner.run_state import SCHEMA_VERSION, RunState
from histcore.runner.run_state_json import StateFields
from histcore.runner.tool import ToolApprovalItem, function_tool
from histcore.testing import ScriptedModel, function_call, text_message, user_message
from tests.support.examples import examples


@function_tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    return f"sent to {to}"


AGENT = Agent("mailer", tools=[send_email])


def paused_state() -> RunState:
    model = ScriptedModel(
        [
            [
                text_message("Sending."),
                function_call("send_email", {"to": "a@b.c", "body": "hi"}, "c1"),
            ]
        ]
    )
    agent = Agent("mailer", model=model, tools=[send_email])
    state = Runner.run_sync(agent, [user_message("mail Bob")]).to_state()
    state.reject(state.interruptions[0], "not now")
    return state


def valid_json() -> dict[str, Any]:
    return paused_state().to_json()


def test_to_json_carries_the_schema_version_and_every_field() -> None:
    data = valid_json()
    assert data["$schemaVersion"] == SCHEMA_VERSION == 1
    assert data["agent"] == {"name": "mailer"}
    assert data["original_input"] == [user_message("mail Bob")]
    assert data["generated_items"][0] == text_message("Sending.")
    assert data["current_turn"] == 1
    assert data["max_turns"] == 10
    assert data["pending_turn_start"] == 0
    assert data["interruptions"] == [data["generated_items"][1]]
    assert data["approvals"] == {"c1": {"approved": False, "message": "not now"}}
    assert data["model_responses"][0]["response_id"] == "resp_scripted_1"
    assert set(data["model_responses"][0]["usage"]) == {
        "requests",
        "input_tokens",
        "output_tokens",
        "total_tokens",
    }


def test_round_trips_are_exact() -> None:
    state = paused_state()
    data = state.to_json()
    text = state.to_string()
    assert orjson.loads(text) == data
    loaded = RunState.from_json(AGENT, data)
    assert loaded.to_json() == data
    assert RunState.from_string(AGENT, text).to_string() == text
    assert RunState.from_string(AGENT, text.encode()).to_json() == data
    assert loaded.generated_items == state.generated_items
    assert loaded.model_responses == state.model_responses
    assert loaded.interruptions == state.interruptions
    assert dict(loaded.approvals) == dict(state.approvals)


def test_to_json_and_from_json_share_nothing_with_their_data() -> None:
    state = paused_state()
    data = state.to_json()
    data["generated_items"][0]["content"][0]["text"] = "edited"
    data["approvals"]["c1"]["message"] = "edited"
    assert state.to_json()["generated_items"][0] == text_message("Sending.")
    assert state.to_json()["approvals"]["c1"]["message"] == "not now"
    source = valid_json()
    loaded = RunState.from_json(AGENT, source)
    source["generated_items"][0]["role"] = "edited"
    source["original_input"].clear()
    assert loaded.generated_items[0] == text_message("Sending.")
    assert loaded.original_input == (user_message("mail Bob"),)


def test_tuples_and_scalar_subclasses_become_plain_json() -> None:
    import enum

    class Color(str, enum.Enum):
        RED = "red"

    data = valid_json()
    data["generated_items"][0]["extra"] = (1, (2.5, Color.RED), {"k": True})
    loaded = RunState.from_json(AGENT, data)
    assert loaded.to_json()["generated_items"][0]["extra"] == [1, [2.5, "red"], {"k": True}]
    again = RunState.from_string(AGENT, loaded.to_string())
    assert again.to_json() == loaded.to_json()


def test_string_original_input_round_trips() -> None:
    data = valid_json()
    data["original_input"] = "just text"
    assert RunState.from_json(AGENT, data).to_json() == data


# --- malformed input -------------------------------------------------------------------


class Opaque:
    """A value JSON cannot hold that compares equal to its deep copy."""

    def __deepcopy__(self, memo: Any) -> Opaque:
        return self


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(key: str) -> Any:
    return lambda data: data.pop(key)


MALFORMED = [
    (_delete("$schemaVersion"), "'$schemaVersion': missing"),
    (_set(("$schemaVersion",), 2), "'$schemaVersion': version 2 was written by a newer histcore"),
    (_set(("$schemaVersion",), 0), "'$schemaVersion': unsupported version 0"),
    (_set(("$schemaVersion",), "1"), "'$schemaVersion': expected an integer, got a string"),
    (_set(("$schemaVersion",), True), "'$schemaVersion': expected an integer, got a boolean"),
    (_delete("generated_items"), "'generated_items': missing"),
    (_set(("surprise",), 1), "'surprise': unknown field"),
    (_set(("agent",), "mailer"), "'agent': expected an object with a string 'name'"),
    (_set(("agent", "name"), "other"), "'agent.name': the state belongs to agent 'other'"),
    (_set(("original_input",), 5), "'original_input': expected an array, got a number"),
    (_set(("generated_items",), {}), "'generated_items': expected an array, got an object"),
    (_set(("generated_items", 1), "item"), "'generated_items[1]': expected an object"),
    (_set(("generated_items", 0), {"content": "x"}), "'generated_items[0]': an item needs"),
    (
        _set(("generated_items", 0, "content", 0, "text"), math.nan),
        "'generated_items[0].content[0].text': nan cannot be stored in JSON",
    ),
    (
        _set(("generated_items", 0, "content", 0, "annotations"), [{1: "x"}]),
        "'generated_items[0].content[0].annotations[0]': key 1 is not a string",
    ),
    (
        _set(("generated_items", 0, "extra"), Opaque()),
        "'generated_items[0].extra': an Opaque is not JSON data",
    ),
    (_set(("model_responses", 0), []), "'model_responses[0]': expected an object"),
    (_set(("model_responses", 0, "usage", "requests"), -1), "usage.requests': must be at least 0"),
    (_set(("model_responses", 0, "response_id"), 7), "response_id': expected a string or null"),
    (
        lambda data: data["model_responses"][0]["usage"].pop("total_tokens"),
        "'model_responses[0].usage.total_tokens': missing",
    ),
    (_set(("model_responses", 0, "output"), None), "'model_responses[0].output': expected an"),
    (_set(("current_turn",), -1), "'current_turn': must be at least 0"),
    (_set(("current_turn",), 1.0), "'current_turn': expected an integer, got a number"),
    (_set(("max_turns",), 0), "'max_turns': must be at least 1"),
    (_set(("pending_turn_start",), 9), "'pending_turn_start': 9 is past the end"),
    (_set(("interruptions",), None), "'interruptions': expected an array, got null"),
    (_set(("interruptions", 0, "type"), "message"), "'interruptions[0].type'"),
    (_set(("interruptions", 0, "name"), "rm_rf"), "agent 'mailer' has no tool 'rm_rf'"),
    (_set(("interruptions", 0, "call_id"), 3), "'interruptions[0].call_id': expected a string"),
    (_set(("interruptions", 0, "call_id"), "c9"), "call 'c9' is not a function call of the"),
    (_set(("pending_turn_start",), 2), "call 'c1' is not a function call of the paused turn"),
    (_set(("approvals",), []), "'approvals': expected an object"),
    (_set(("approvals", "c7"), {"approved": True, "message": None}), "'approvals.c7': no pending"),
    (_set(("approvals", "c1"), {"approved": True}), "'approvals.c1': expected an object with"),
    (
        _set(("approvals", "c1"), {"approved": "yes", "message": None}),
        "'approvals.c1.approved': expected a boolean",
    ),
    (
        _set(("approvals", "c1"), {"approved": False, "message": 3}),
        "'approvals.c1.message': expected a string or null",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), MALFORMED)
def test_malformed_fields_are_named(mutate: Any, message: str) -> None:
    data = valid_json()
    mutate(data)
    untouched = copy.deepcopy(data)
    with pytest.raises(RunStateError, match=re.escape(message)) as caught:
        RunState.from_json(AGENT, data)
    assert str(caught.value).startswith("RunState field '")
    assert isinstance(caught.value, ValueError)
    # Nothing half-loaded: the input is left exactly as it was.
    assert data == untouched


def test_add_interruption_twice_is_an_error() -> None:
    data = valid_json()
    data["interruptions"].append(copy.deepcopy(data["interruptions"][0]))
    with pytest.raises(RunStateError, match=r"'interruptions\[1\].call_id': call 'c1' is listed"):
        RunState.from_json(AGENT, data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "RunState text is not valid JSON"),
        ("[1, 2]", "RunState JSON must be an object, not an array"),
        ("{}", "'\\$schemaVersion': missing"),
    ],
)
def test_from_string_errors(text: str, message: str) -> None:
    with pytest.raises(RunStateError, match=message):
        RunState.from_string(AGENT, text)


def test_argument_types_are_checked() -> None:
    with pytest.raises(RunStateError, match="text must be a str"):
        RunState.from_string(AGENT, 3)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="needs the Agent"):
        RunState.from_json("mailer", valid_json())  # type: ignore[arg-type]


def test_to_json_names_values_json_cannot_hold() -> None:
    state = paused_state()
    broken = RunState(
        StateFields(
            agent_name="mailer",
            original_input=({"role": "user", "content": "x", "score": math.inf},),
            generated_items=state.generated_items,
            model_responses=state.model_responses,
            current_turn=1,
            max_turns=10,
            pending_turn_start=0,
            interruptions=state.interruptions,
        )
    )
    with pytest.raises(RunStateError, match=r"'original_input\[0\].score': inf cannot be stored"):
        broken.to_string()


# --- property: any JSON items round-trip exactly ---------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
json_items = st.builds(
    lambda kind, extra: {**extra, "type": kind},
    st.sampled_from(["message", "reasoning", "function_call_output", "web_search_call"]),
    st.dictionaries(st.text(max_size=6), json_values, max_size=4),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    original=st.lists(json_items, max_size=4) | st.text(max_size=10),
    generated=st.lists(json_items, max_size=5),
    turn=st.integers(min_value=0, max_value=50),
)
def test_any_json_state_round_trips(original: Any, generated: list[Any], turn: int) -> None:
    call = function_call("send_email", {"to": "x", "body": "y"}, "cX")
    state = RunState(
        StateFields(
            agent_name="mailer",
            original_input=original if isinstance(original, str) else tuple(original),
            generated_items=(*generated, call),
            model_responses=(ModelResponse([*generated, call], response_id=None),),
            current_turn=turn,
            max_turns=turn + 1,
            pending_turn_start=len(generated),
            interruptions=(ToolApprovalItem(call),),
        )
    )
    state.approve(state.interruptions[0])
    data = state.to_json()
    text = state.to_string()
    loaded = RunState.from_string(AGENT, text)
    assert loaded.to_json() == data
    assert loaded.to_string() == text
    assert RunState.from_json(AGENT, data).to_json() == data
