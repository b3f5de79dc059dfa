"""RunState under faults: every checkpoint that saves reloads exactly, and any damaged
text or JSON ends as a clean load or as histcore's own ``RunStateError`` naming the
field, never as another exception, and never as a state that loads but cannot be
written and read back again.

The fuzzing is deterministic (every field of a few real checkpoints deleted and
replaced by each value of a family of wrong ones, text cut and bytes changed with a
fixed seed) plus a small hypothesis run of a fixed size, so it takes a few seconds.
Run with ``-s`` to see how the cases ended.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import decimal
import enum
import json
import math
import os
import pickle
import random
import re
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.engine.items import MAX_DEPTH
from histcore.exceptions import RunStateError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import ModelResponse, Usage
from histcore.runner.run import Runner
from histcore.runner.run_state import RunState
from histcore.runner.tool import function_tool
from histcore.testing import ScriptedModel, function_call, text_message, user_message
from tests.support.examples import examples

FILE_NAME = os.fsdecode(b"report-\xe9.txt")  # 'report-\udce9.txt' on a UTF-8 system
LONE = "\udce9"


@function_tool
def list_files() -> list[str]:
    return [FILE_NAME]


@function_tool
def newest_file() -> str:
    return FILE_NAME


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    return f"deleted {path}"


def make_agent(model: ScriptedModel | None = None) -> Agent:
    return Agent("janitor", model=model, tools=[list_files, newest_file, delete_file])


AGENT = make_agent()


def paused_on_a_file_name() -> RunState:
    """A run whose tool returned a file name with a lone surrogate, paused on two
    approvals (one decided); the kind of checkpoint that could not be reloaded."""
    model = ScriptedModel(
        [
            [function_call("newest_file", {}, "c0"), function_call("list_files", {}, "cL")],
            [
                text_message(f"Deleting {FILE_NAME}."),
                function_call("delete_file", {"path": FILE_NAME}, "c1"),
                function_call("delete_file", {"path": "b.txt"}, "c2"),
            ],
        ]
    )
    result = Runner.run_sync(make_agent(model), [user_message(f"clean up {FILE_NAME}")])
    state = result.to_state()
    state.reject(state.interruptions[0], f"keep {FILE_NAME}")
    return state


def finished_state() -> RunState:
    model = ScriptedModel([[text_message("Nothing to do.")]])
    return Runner.run_sync(make_agent(model), "tidy up").to_state()


def approved_state() -> RunState:
    model = ScriptedModel([[function_call("delete_file", {"path": "x"}, "c9")]])
    state = Runner.run_sync(make_agent(model), [user_message("delete x")]).to_state()
    state.approve(state.interruptions[0])
    return state


def assert_reloads(state: RunState) -> None:
    """The state writes, and what it writes loads back as the same state."""
    data = state.to_json()
    text = state.to_string()
    again = RunState.from_string(AGENT, text)
    assert again.to_json() == data
    assert again.to_string() == text
    assert RunState.from_json(AGENT, data).to_json() == data


# --- defect: a lone surrogate saved a checkpoint that never reloaded -------------------


def test_a_tool_result_with_a_lone_surrogate_round_trips() -> None:
    state = paused_on_a_file_name()
    output = {"type": "function_call_output", "call_id": "c0", "output": FILE_NAME}
    assert output in state.generated_items
    text = state.to_string()
    loaded = RunState.from_string(AGENT, text)
    assert loaded.to_json() == state.to_json()
    assert loaded.generated_items == state.generated_items
    assert loaded.approvals["c1"].message == f"keep {FILE_NAME}"
    assert RunState.from_string(AGENT, text.encode()).to_json() == state.to_json()
    assert_reloads(loaded)


@pytest.mark.parametrize(
    "where",
    ["original_input", "item value", "item key", "approval message", "response id"],
)
def test_a_lone_surrogate_anywhere_round_trips(where: str) -> None:
    data = approved_state().to_json()
    if where == "original_input":
        data["original_input"] = f"see {LONE}"
    elif where == "item value":
        data["generated_items"][0]["arguments"] = '{"path": "' + LONE + '"}'
        data["interruptions"][0]["arguments"] = data["generated_items"][0]["arguments"]
    elif where == "item key":
        data["original_input"][0][f"k{LONE}"] = [LONE, {LONE: LONE}]
    elif where == "approval message":
        data["approvals"]["c9"] = {"approved": False, "message": LONE}
    else:
        data["model_responses"][0]["response_id"] = f"resp{LONE}"
    state = RunState.from_json(AGENT, data)
    assert state.to_json() == data
    assert_reloads(state)


def test_raw_surrogates_in_text_load_too() -> None:
    # json.dumps(ensure_ascii=False) leaves the surrogate itself in the str.
    text = json.dumps(paused_on_a_file_name().to_json(), ensure_ascii=False)
    assert LONE in text
    assert_reloads(RunState.from_string(AGENT, text))


# --- defect: silent type changes on write ----------------------------------------------


class Plain(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int


def _state_with(**changes: Any) -> RunState:
    base = approved_state()
    approvals = changes.pop("approvals", base.approvals)
    return RunState(dataclasses.replace(base._fields, **changes), approvals)


def _response(**changes: Any) -> tuple[ModelResponse, ...]:
    return (dataclasses.replace(approved_state().model_responses[0], **changes),)


def _item(value: Any) -> tuple[dict[str, Any], ...]:
    return ({"role": "user", "content": "x", "extra": value},)


NOT_JSON_ON_WRITE = [
    (
        {"model_responses": _response(response_id=uuid.UUID(int=1))},
        "model_responses[0].response_id",
    ),
    (
        {"model_responses": _response(usage=Usage(requests=1.5))},
        "model_responses[0].usage.requests",
    ),  # type: ignore[arg-type]
    (
        {"model_responses": _response(usage=Usage(total_tokens=decimal.Decimal(3)))},  # type: ignore[arg-type]
        "model_responses[0].usage.total_tokens",
    ),
    ({"current_turn": 1.0}, "current_turn"),
    ({"max_turns": "10"}, "max_turns"),
    ({"pending_turn_start": None}, "pending_turn_start"),
    ({"agent_name": uuid.UUID(int=2)}, "agent.name"),
    ({"original_input": _item(datetime.datetime(2024, 1, 2, 3, 4, 5))}, "original_input[0].extra"),
    ({"original_input": _item(datetime.date(2024, 1, 2))}, "original_input[0].extra"),
    ({"original_input": _item(uuid.UUID(int=3))}, "original_input[0].extra"),
    ({"original_input": _item(Plain.RED)}, "original_input[0].extra"),
    ({"original_input": _item(Point(1))}, "original_input[0].extra"),
    ({"original_input": _item({1: "a", "1": "b"})}, "original_input[0].extra"),
    ({"original_input": _item({1, 2})}, "original_input[0].extra"),
    ({"original_input": _item(b"bytes")}, "original_input[0].extra"),
]


@pytest.mark.parametrize(("changes", "field"), NOT_JSON_ON_WRITE)
def test_values_json_would_change_are_refused_when_written(
    changes: dict[str, Any], field: str
) -> None:
    state = _state_with(**changes)
    for write in (state.to_json, state.to_string):
        with pytest.raises(TypeError, match=re.escape(f"RunState field {field!r}")) as caught:
            write()
        assert isinstance(caught.value, RunStateError)


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        (
            {"model_responses": _response(usage=Usage(requests=-1))},
            "model_responses[0].usage.requests",
            "at least 0",
        ),
        ({"max_turns": 0}, "max_turns", "at least 1"),
        ({"original_input": _item(10**5000)}, "original_input[0].extra", "digits"),
        ({"original_input": _item(math.nan)}, "original_input[0].extra", "nan cannot be stored"),
        ({"generated_items": ({"id": "x"},)}, "generated_items[0]", "needs a string 'type'"),
        ({"pending_turn_start": 5}, "pending_turn_start", "past the end"),
        ({"interruptions": ()}, "approvals.c9", "no pending interruption"),
    ],
)
def test_values_that_would_never_load_are_refused_when_written(
    changes: dict[str, Any], field: str, problem: str
) -> None:
    state = _state_with(**changes)
    with pytest.raises(
        RunStateError, match=re.escape(f"RunState field {field!r}") + ".*" + problem
    ):
        state.to_string()


def test_a_run_whose_model_sent_an_item_that_would_not_load_is_refused_when_written() -> None:
    model = ScriptedModel([[{"id": "x"}, text_message("Hi.")]])
    state = Runner.run_sync(make_agent(model), "hello").to_state()
    with pytest.raises(RunStateError, match=re.escape("'generated_items[0]': an item needs")):
        state.to_string()


def test_scalar_subclasses_are_written_as_the_plain_values_json_writes() -> None:
    state = _state_with(
        current_turn=Level.HIGH, max_turns=Level.HIGH, original_input=_item(Level.HIGH)
    )
    data = state.to_json()
    assert type(data["current_turn"]) is int
    assert data["current_turn"] == 3
    assert type(data["original_input"][0]["extra"]) is int
    assert_reloads(state)


# --- defect: non-library exceptions and unclear rules when loading ---------------------


def _paused_json() -> dict[str, Any]:
    return paused_on_a_file_name().to_json()


def _pending_call_index(data: dict[str, Any]) -> int:
    return len(data["generated_items"]) - 1


MUTATIONS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # Unhashable and otherwise odd values where a string was assumed.
    (
        "call id of the paused call is a list",
        lambda d: d["generated_items"][-1].__setitem__("call_id", [1]),
        "interruptions[1].call_id",
    ),
    (
        "call id of the paused call is an object",
        lambda d: d["generated_items"][-1].__setitem__("call_id", {"a": 1}),
        "interruptions[1].call_id",
    ),
    (
        "call id of every paused call is a list",
        lambda d: [
            i.__setitem__("call_id", [1])
            for i in d["generated_items"][d["pending_turn_start"] :]
            if "call_id" in i
        ],
        "interruptions[0].call_id",
    ),
    (
        "approval key is a huge number text",
        lambda d: d["approvals"].__setitem__("9" * 5000, {"approved": True, "message": None}),
        "approvals." + "9" * 5000,
    ),
    (
        "schema version is a huge integer",
        lambda d: d.__setitem__("$schemaVersion", 10**5000),
        "$schemaVersion",
    ),
    (
        "schema version is a huge negative integer",
        lambda d: d.__setitem__("$schemaVersion", -(10**5000)),
        "$schemaVersion",
    ),
    (
        "current turn is a huge negative integer",
        lambda d: d.__setitem__("current_turn", -(10**5000)),
        "current_turn",
    ),
    (
        "current turn is a huge integer",
        lambda d: d.__setitem__("current_turn", 10**5000),
        "current_turn",
    ),
    (
        "pending turn start is a huge integer",
        lambda d: d.__setitem__("pending_turn_start", 10**5000),
        "pending_turn_start",
    ),
    (
        "usage is a huge integer",
        lambda d: d["model_responses"][0]["usage"].__setitem__("input_tokens", 10**5000),
        "model_responses[0].usage.input_tokens",
    ),
    (
        "an item holds a huge integer",
        lambda d: d["generated_items"][0].__setitem__("n", 10**5000),
        "generated_items[0].n",
    ),
    (
        "an item key is a huge integer",
        lambda d: d["generated_items"][0].__setitem__(10**5000, 1),
        "generated_items[0]",
    ),
    ("a top-level key is a huge integer", lambda d: d.__setitem__(10**5000, 1), "an integer of"),
    ("a top-level key is a tuple", lambda d: d.__setitem__((1, 2), 1), "a tuple"),
    ("agent holds another key", lambda d: d["agent"].__setitem__("model", "gpt"), "agent.model"),
    ("agent holds a non-str key", lambda d: d["agent"].__setitem__(7, "x"), "agent.7"),
    (
        "a model response holds another key",
        lambda d: d["model_responses"][0].__setitem__("extra", 1),
        "model_responses[0].extra",
    ),
    (
        "usage holds another key",
        lambda d: d["model_responses"][0]["usage"].__setitem__("cached_tokens", 1),
        "model_responses[0].usage.cached_tokens",
    ),
    (
        "an item nested too deep",
        lambda d: d["generated_items"][0].__setitem__("deep", _deep_list(100_000)),
        "generated_items[0].deep",
    ),
    (
        "an approval is an object with non-str keys",
        lambda d: d["approvals"].__setitem__("c1", {1: True, 2: None}),
        "approvals.c1",
    ),
    (
        "the tool name is a surrogate",
        lambda d: d["interruptions"][0].__setitem__("name", LONE),
        "interruptions[0].name",
    ),
]


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


DEEP = _deep_list(100_000)


@pytest.mark.parametrize(
    ("mutate", "field"), [(m, f) for _, m, f in MUTATIONS], ids=[n for n, _, _ in MUTATIONS]
)
def test_a_damaged_state_is_a_run_state_error_naming_the_field(
    mutate: Callable[[dict[str, Any]], None], field: str
) -> None:
    data = _paused_json()
    mutate(data)
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(AGENT, data)
    assert field in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "1" + "]" * 100_000,
        "[" * 100_000 + "1" * 30 + "]" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        '{"$schemaVersion": 1, "agent": ' + "[" * 50_000 + "]" * 50_000 + "}",
        '{"x": "\\udce9' + "[" * 5000,
        '{"$schemaVersion": ' + "9" * 5000 + "}",
    ],
    ids=[
        "deep-array",
        "deep-array-long-int",
        "deep-object",
        "deep-field",
        "surrogate-then-junk",
        "long-int",
    ],
)
def test_damaged_text_is_a_run_state_error(text: str) -> None:
    with pytest.raises(RunStateError):
        RunState.from_string(AGENT, text)


def test_only_known_fields_anywhere_in_the_format_but_items_keep_theirs() -> None:
    data = _paused_json()
    data["generated_items"][0]["provider_extra"] = {"anything": [1, LONE]}
    data["original_input"][0]["x"] = 1
    data["interruptions"][0]["status"] = "completed"
    assert RunState.from_json(AGENT, data).to_json() == data
    for target, path in [
        (data, "surprise"),
        (data["agent"], "agent.surprise"),
        (data["model_responses"][0], "model_responses[0].surprise"),
        (data["model_responses"][0]["usage"], "model_responses[0].usage.surprise"),
        (data["approvals"]["c1"], "approvals.c1"),
    ]:
        target["surprise"] = 1
        with pytest.raises(RunStateError, match=re.escape(repr(path))):
            RunState.from_json(AGENT, data)
        del target["surprise"]


# --- the fault suite ---------------------------------------------------------------------


def huge() -> int:
    return 10 ** (sys.get_int_max_str_digits() + 10)


WRONG_VALUES: list[tuple[str, Any]] = [
    ("null", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("minus one", -1),
    ("int64 max+1", 2**63),
    ("2**64+1", 2**64 + 1),
    ("huge int", huge()),
    ("huge negative int", -huge()),
    ("float", 1.5),
    ("integral float", 1.0),
    ("negative zero", -0.0),
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("tiny float", 5e-324),
    ("empty string", ""),
    ("string", "x"),
    ("lone low surrogate", LONE),
    ("lone high surrogate", "\ud800x"),
    ("surrogate pair escape text", "\\ud83d\\ude00"),
    ("NUL", "\x00"),
    ("empty list", []),
    ("list of int", [1]),
    ("list of list", [[1]]),
    ("list of surrogate", [LONE]),
    ("empty object", {}),
    ("object", {"a": 1}),
    ("message item", {"type": "message", "role": "user", "content": "hi"}),
    (
        "function call",
        {"type": "function_call", "name": "delete_file", "call_id": "c1", "arguments": "{}"},
    ),
    ("surrogate key", {LONE: LONE}),
    ("deep list (max depth)", _deep_list(MAX_DEPTH)),
    ("deep list (past max depth)", _deep_list(MAX_DEPTH + 5)),
    ("deep list (100000)", DEEP),
    ("list of deep", [_deep_list(MAX_DEPTH - 2)]),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a member of a JSON tree (dict keys and list indexes)."""
    if isinstance(value, dict):
        members: Any = value.items()
    elif isinstance(value, list):
        members = enumerate(value)
    else:
        return
    for key, member in members:
        path = (*prefix, key)
        yield path
        yield from _paths(member, path)


DELETED = object()


def _mutant(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` at ``path`` (``DELETED``: the member removed)."""
    copied = pickle.loads(pickle.dumps(data))  # deepcopy's result, many times faster
    parent: Any = copied
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETED:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copied


def _mutants(data: dict[str, Any]) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
    """``(name, path, value)`` of every case: each member deleted, then replaced by
    each wrong value."""
    for path in list(_paths(data)):
        yield f"{path} deleted", path, DELETED
        for name, value in WRONG_VALUES:
            yield f"{path} = {name}", path, value


@contextmanager
def _long_int_text() -> Iterator[None]:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def _as_text(data: Any) -> str:
    """``data`` as JSON text as ``json`` writes it (NaN tokens, any integer)."""
    with _long_int_text():
        return json.dumps(data)


def _mutant_text(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> str:
    """The text of ``_mutant(data, path, value)``; a value nested too deep for
    ``json`` to write is written by hand."""
    if value is not DEEP:
        return _as_text(_mutant(data, path, value))
    marker = "\u0001deep"
    text = _as_text(_mutant(data, path, marker))
    return text.replace(json.dumps(marker), "[" * 100_000 + "]" * 100_000, 1)


def _outcome(load: Callable[[], RunState]) -> str:
    """How one load ended: ``clean`` (and it reloads exactly), ``RunStateError``, or
    the unexpected exception's description."""
    try:
        state = load()
    except RunStateError:
        return "RunStateError"
    except Exception as exc:  # what the suite exists to find
        return f"{type(exc).__name__}: {str(exc)[:120]}"
    try:
        text = state.to_string()
        again = RunState.from_string(AGENT, text)
        if again.to_json() != state.to_json() or again.to_string() != text:
            return "reloads different"
    except Exception as exc:
        return f"cannot reload: {type(exc).__name__}: {str(exc)[:120]}"
    return "clean"


# The whole suite takes about half a minute: CI runs it whole once
# (HISTCORE_FAULT_SUITE=full), and every other run takes every fifth case.
_EVERY = 1 if os.environ.get("HISTCORE_FAULT_SUITE") == "full" else 5


def _run_cases(kind: str, cases: Iterator[tuple[str, Callable[[], RunState]]]) -> None:
    failures: list[str] = []
    counts: Counter[str] = Counter()
    for number, (name, load) in enumerate(cases):
        if number % _EVERY:
            continue
        outcome = _outcome(load)
        counts[outcome if outcome in ("clean", "RunStateError") else "other"] += 1
        if outcome not in ("clean", "RunStateError"):
            failures.append(f"{name}: {outcome}")
    print(f"\n{kind}: {sum(counts.values())} cases, {dict(counts)}")
    assert not failures, f"{len(failures)} cases ended otherwise:\n" + "\n".join(failures[:30])
    # Each kind of damage is refused somewhere and harmless somewhere else: a kind whose
    # cases all load, or all fail, damages nothing or everything, and proves little.
    assert counts["clean"], f"{kind}: {dict(counts)}"
    assert counts["RunStateError"], f"{kind}: {dict(counts)}"


BASES: list[tuple[str, Callable[[], RunState]]] = [
    ("paused", paused_on_a_file_name),
    ("approved", approved_state),
    ("finished", finished_state),
]


@pytest.mark.parametrize("base", [make for _, make in BASES], ids=[name for name, _ in BASES])
def test_every_field_damaged_as_json(base: Callable[[], RunState]) -> None:
    data = base().to_json()

    def cases() -> Iterator[tuple[str, Callable[[], RunState]]]:
        for name, path, value in _mutants(data):
            mutant = _mutant(data, path, value)
            yield name, lambda mutant=mutant: RunState.from_json(AGENT, mutant)

    _run_cases(f"json/{base.__name__}", cases())


@pytest.mark.parametrize("base", [make for _, make in BASES], ids=[name for name, _ in BASES])
def test_every_field_damaged_as_text(base: Callable[[], RunState]) -> None:
    data = base().to_json()

    def cases() -> Iterator[tuple[str, Callable[[], RunState]]]:
        for number, (name, path, value) in enumerate(_mutants(data)):
            text = _mutant_text(data, path, value)
            yield name, lambda text=text: RunState.from_string(AGENT, text)
            if number % 4 == 0:  # the same text as UTF-8 bytes, for a quarter of the cases
                yield (
                    f"{name} (bytes)",
                    lambda text=text: RunState.from_string(
                        AGENT, text.encode("utf-8", "surrogatepass")
                    ),
                )

    _run_cases(f"text/{base.__name__}", cases())


def test_text_cut_and_changed_byte_by_byte() -> None:
    rng = random.Random(20240601)
    texts = [make().to_string() for _, make in BASES]
    texts.append(json.dumps(paused_on_a_file_name().to_json(), ensure_ascii=False, indent=1))
    replacements = [
        '"',
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "0",
        "9" * 30,
        "-",
        "e",
        "n",
        "\\u",
        "\\ud800",
        LONE,
        "é",
        "\x00",
        " ",
        "NaN",
        "1e999",
    ]

    def cases() -> Iterator[tuple[str, Callable[[], RunState]]]:
        for number, text in enumerate(texts):
            for cut in range(0, len(text), max(1, len(text) // 60)):
                yield (
                    f"text {number} cut at {cut}",
                    lambda t=text[:cut]: RunState.from_string(AGENT, t),
                )
            for _ in range(250):
                at = rng.randrange(len(text))
                change = rng.choice(["delete", "replace", "insert"])
                new = rng.choice(replacements)
                if change == "delete":
                    damaged = text[:at] + text[at + 1 :]
                elif change == "replace":
                    damaged = text[:at] + new + text[at + 1 :]
                else:
                    damaged = text[:at] + new + text[at:]
                yield (
                    f"text {number} {change} {new!r} at {at}",
                    lambda t=damaged: RunState.from_string(AGENT, t),
                )
            raw = text.encode("utf-8", "surrogatepass")
            for _ in range(100):
                at = rng.randrange(len(raw))
                damaged_bytes = raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1 :]
                yield (
                    f"text {number} byte {at}",
                    lambda b=damaged_bytes: RunState.from_string(AGENT, b),
                )

    _run_cases("text/cut-and-changed", cases())


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(exclude_categories=()), max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
PAUSED_JSON = paused_on_a_file_name().to_json()
PAUSED_PATHS = list(_paths(PAUSED_JSON))


@settings(
    max_examples=examples(150),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(where=st.sampled_from(PAUSED_PATHS), value=json_values, as_text=st.booleans())
def test_any_value_anywhere(where: tuple[Any, ...], value: Any, as_text: bool) -> None:
    data = copy.deepcopy(PAUSED_JSON)
    parent: Any = data
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    if as_text:
        text = _as_text(data)

        def load() -> RunState:
            return RunState.from_string(AGENT, text)

    else:

        def load() -> RunState:
            return RunState.from_json(AGENT, data)

    outcome = _outcome(load)
    assert outcome in ("clean", "RunStateError"), f"{where} = {value!r}: {outcome}"
