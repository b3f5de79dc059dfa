"""The model-input rules: ``input_problems`` and ``repair_input`` on both engines.

Histories of reasoning models (reasoning runs before calls and messages, parallel
calls, programs, calls paused for approval) are cut by random windows and edited the
way session callbacks do (slice, drop, reorder, repeat) and the way a
``call_model_input_filter`` does (every tool call and output removed). Then: the repair leaves no
problem, a valid list comes back as the same objects, nothing outside a broken unit
is dropped, and the engines agree, exceptions included.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore import items as public
from histcore.engine.input_rules import window_start
from histcore.engine.pure import input_rules
from tests.support.examples import examples
from tests.support.strategies import (
    FAKE_ID,
    FunctionCallModel,
    histories,
    history_items,
    positions,
    sdk_histories,
)

PROPERTY = settings(max_examples=examples(200), deadline=None)


# --- generated histories -------------------------------------------------------------


class _Maker:
    def __init__(self) -> None:
        self.count = 0

    def next_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"


@st.composite
def reasoning_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Whole turns of a reasoning model; the last may end with calls paused for approval."""
    maker = _Maker()
    items: list[dict[str, Any]] = []
    turns = draw(st.integers(1, 5))
    for turn in range(turns):
        items.append({"role": "user", "content": f"q{turn}"})
        for _ in range(draw(st.integers(0, 2))):
            items.extend(
                {"type": "reasoning", "id": maker.next_id("rs"), "summary": []}
                for _ in range(draw(st.integers(0, 2)))
            )
            calls = [maker.next_id("call") for _ in range(draw(st.integers(1, 3)))]
            for call_id in calls:
                items.append(
                    {"type": "function_call", "id": "fc" + call_id[4:], "call_id": call_id}
                    | {"name": "f", "arguments": "{}"}
                )
            if turn == turns - 1 and draw(st.booleans()):
                return items  # paused for approval
            items.extend(
                {"type": "function_call_output", "call_id": call_id, "output": "ok"}
                for call_id in draw(st.permutations(calls))
            )
        if draw(st.booleans()):
            program_id = maker.next_id("prog")
            items.append({"type": "program", "call_id": program_id, "code": "x"})
            items.append(
                {"type": "web_search_call", "id": maker.next_id("ws")}
                | {"caller": {"type": "program", "caller_id": program_id}}
            )
            items.append({"type": "program_output", "call_id": program_id, "output": "done"})
        if draw(st.booleans()):
            items.append({"type": "reasoning", "id": maker.next_id("rs"), "summary": []})
        items.append({"type": "message", "role": "assistant", "id": maker.next_id("msg")})
    return items


_TOOL_TYPES = frozenset(
    {"function_call", "function_call_output", "program", "program_output", "web_search_call"}
)


def without_tools(items: list[Any]) -> list[Any]:
    """What a ``call_model_input_filter`` that removes tool calls and outputs keeps."""
    return [item for item in items if item.get("type") not in _TOOL_TYPES]


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """(stored history, model input cut from it by a window, callback and filter edits)."""
    history = draw(reasoning_histories())
    items = history[-draw(st.integers(1, len(history))) :]
    edits = ["slice", "drop", "swap", "repeat", "filter"]
    for edit in draw(st.lists(st.sampled_from(edits), max_size=3)):
        if not items:
            break
        at = draw(st.integers(0, len(items) - 1))
        if edit == "filter":
            items = without_tools(items)
        elif edit == "slice":
            items = items[at:]
        elif edit == "drop":
            items = items[:at] + items[at + 1 :]
        elif edit == "swap":
            other = draw(st.integers(0, len(items) - 1))
            items = list(items)
            items[at], items[other] = items[other], items[at]
        else:
            # An equal copy, as a callback rebuilding items makes: a repeated id.
            items = [*items[: at + 1], dict(items[at]), *items[at + 1 :]]
    return history, items


@PROPERTY
@given(case=edited(), with_history=st.booleans())
def test_repair_leaves_no_problem(
    engine: ModuleType, case: tuple[list[Any], list[Any]], with_history: bool
) -> None:
    history, items = case
    stored = history if with_history else None
    repaired = engine.repair_input(items, history=stored)
    assert engine.input_problems(repaired, history=stored) == []
    # The result keeps order and identity: a subsequence of the input's objects.
    kept = iter(items)
    assert all(any(item is candidate for candidate in kept) for item in repaired)


@PROPERTY
@given(history=reasoning_histories())
def test_a_whole_history_without_pauses_is_valid_and_comes_back_unchanged(
    engine: ModuleType, history: list[Any]
) -> None:
    awaiting = [p for p in engine.input_problems(history) if p[1] == "call_awaiting_output"]
    problems = engine.input_problems(history, history=history)
    assert [p for p in problems if p[1] != "call_awaiting_output"] == []
    if not awaiting:
        repaired = engine.repair_input(history, history=history)
        assert len(repaired) == len(history)
        assert all(a is b for a, b in zip(repaired, history, strict=True))


@PROPERTY
@given(case=edited(), with_history=st.booleans())
def test_exactly_the_broken_units_are_dropped(
    engine: ModuleType, case: tuple[list[Any], list[Any]], with_history: bool
) -> None:
    history, items = case
    stored = history if with_history else None
    problems = input_rules.input_problems(items, history=stored)
    roots = input_rules.repair_unit_roots(items, history=stored)
    broken = {roots[position] for position, _, _ in problems}

    def droppable(position: int) -> bool:
        item = items[position]
        return roots[position] in broken and not (
            isinstance(item, dict) and item.get("role") == "user"
        )

    expected = [position for position in range(len(items)) if not droppable(position)]
    first_round = [items[position] for position in expected]
    repaired = engine.repair_input(items, history=stored)
    if not input_rules.input_problems(first_round, history=stored):
        # One round suffices (the common case): exactly the broken units went.
        assert positions(repaired, items) == expected
    else:
        # A drop uncovered a new problem: later rounds only remove more.
        assert set(positions(repaired, items)) <= set(expected)
    users = [p for p, item in enumerate(items) if item.get("role") == "user"]
    assert set(users) <= set(positions(repaired, items))


@PROPERTY
@given(case=edited(), with_history=st.booleans())
def test_engines_agree(
    core: ModuleType, pure: ModuleType, case: tuple[list[Any], list[Any]], with_history: bool
) -> None:
    # The Rust engine against the twin (skipped, saying why, when Rust is not under test).
    history, items = case
    stored = history if with_history else None
    assert core.input_problems(items, history=stored) == pure.input_problems(items, history=stored)
    assert positions(core.repair_input(items, history=stored), items) == positions(
        pure.repair_input(items, history=stored), items
    )
    synthesized = core.repair_input(items, history=stored, dangling="synthesize")
    assert synthesized == pure.repair_input(items, history=stored, dangling="synthesize")


@PROPERTY
@given(history=reasoning_histories(), data=st.data())
def test_synthesize_keeps_every_call_whose_output_went(
    engine: ModuleType, history: list[Any], data: st.DataObject
) -> None:
    # A whole history whose outputs a store lost: under "drop" their calls go, under
    # "synthesize" nothing goes and each such call is followed by a marked output.
    problems = engine.input_problems(history, history=history)
    outputs = [p for p, item in enumerate(history) if item.get("type") == "function_call_output"]
    if problems or not outputs:
        return  # calls paused for approval at the end, or no output to lose
    lost = data.draw(st.sets(st.sampled_from(outputs), min_size=1))
    items = [item for position, item in enumerate(history) if position not in lost]
    lost_calls = {history[position]["call_id"] for position in lost}
    repaired = engine.repair_input(items, history=history, dangling="synthesize")
    assert engine.input_problems(repaired, history=history) == []
    originals = [item for item in repaired if any(item is other for other in items)]
    assert len(originals) == len(items)
    assert all(a is b for a, b in zip(originals, items, strict=True))
    made = [(at, item) for at, item in enumerate(repaired) if item not in originals]
    assert {item["call_id"] for _, item in made} == lost_calls
    for at, item in made:
        assert item == {
            "type": "function_call_output",
            "call_id": item["call_id"],
            "output": public.LOST_OUTPUT_TEXT,
        }
        assert repaired[at - 1].get("type") == "function_call"
        assert repaired[at - 1]["call_id"] == item["call_id"]
    dropped = engine.repair_input(items, history=history)
    kept_calls = {item["call_id"] for item in dropped if item.get("type") == "function_call"}
    assert kept_calls.isdisjoint(lost_calls)


@pytest.mark.parametrize("bad", [None, "", "Drop", "synthesise", 1, ["drop"], b"drop"])
def test_dangling_takes_drop_or_synthesize(pure: ModuleType, core: ModuleType, bad: Any) -> None:
    # Checked before the items are read: the items here are not a list.
    expected = f"dangling must be 'drop' or 'synthesize', not {bad!r}"
    for engine in (pure, core, public):
        with pytest.raises(ValueError, match="^" + re.escape(expected) + "$"):
            engine.repair_input(5, dangling=bad)


def test_synthesize_marks_text_calls_and_drops_others(engine: ModuleType) -> None:
    screenshot = {"type": "computer_call", "call_id": "c3", "action": {"type": "screenshot"}}
    items = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "c1", "name": "pay", "arguments": "{}"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "mail", "input": "x"},
        screenshot,
        {"role": "user", "content": "next"},
        {"type": "function_call", "call_id": "c4", "name": "pay", "arguments": "{}"},
    ]
    repaired = engine.repair_input(items, dangling="synthesize")
    lost = public.LOST_OUTPUT_TEXT
    assert repaired == [
        items[0],
        items[1],
        {"type": "function_call_output", "call_id": "c1", "output": lost},
        items[2],
        {"type": "custom_tool_call_output", "call_id": "c2", "output": lost},
        items[4],  # the screenshot output cannot say so: the computer call goes
    ]  # and a last call awaiting its output goes as under "drop"
    assert engine.repair_input(items) == [items[0], items[4]]


@PROPERTY
@given(history=reasoning_histories(), with_history=st.booleans())
def test_a_filter_that_removes_tools_costs_only_reasoning(
    engine: ModuleType, history: list[Any], with_history: bool
) -> None:
    # Rule (f): what the filter left of a turn loses only the reasoning items whose
    # successor it removed. With the history, every kept reasoning item is directly
    # followed by the very item stored after it.
    items = without_tools(history)
    stored = history if with_history else None
    repaired = engine.repair_input(items, history=stored)
    assert engine.input_problems(repaired, history=stored) == []
    kept = {id(item) for item in repaired}
    assert all(item["type"] == "reasoning" for item in items if id(item) not in kept)
    if with_history:
        after = {id(item): history[at + 1] for at, item in enumerate(history[:-1])}
        for item, following in zip(repaired, [*repaired[1:], None], strict=True):
            if item.get("type") == "reasoning":
                assert following is after[id(item)]


def test_the_filtered_example(engine: ModuleType) -> None:
    # Stored [rs_1, fc_1, out_1, rs_2, msg_2], sent as [rs_1, rs_2, msg_2]: rs_1 lost the
    # call stored after it, with or without the history (then: reasoning follows it).
    stored: list[Any] = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"type": "message", "role": "assistant", "id": "msg_2", "content": []},
    ]
    items = [stored[0], stored[3], stored[4]]
    for history in (None, stored, engine.StoredHistory(stored)):
        expected = [(0, "reasoning_without_successor", "rs_1")]
        assert engine.input_problems(items, history=history) == expected
        assert positions(engine.repair_input(items, history=history), items) == [1, 2]
    (problem,) = public.input_problems(items)
    assert (problem.rule, problem.message) == (
        "f",
        "input[0]: reasoning item 'rs_1' is not directly followed by the item stored after it"
        " (without a history that knows it: is followed by another reasoning item)",
    )


# --- arguments, models, odd values ---------------------------------------------------


@pytest.mark.parametrize("bad", [None, 42, "items", b"x", {"type": "reasoning"}])
def test_items_must_be_a_list(engine: ModuleType, bad: Any) -> None:
    with pytest.raises(TypeError, match="items must be a list"):
        engine.input_problems(bad)
    with pytest.raises(TypeError, match="items must be a list"):
        engine.repair_input(bad)
    if bad is not None:  # history=None means no history
        with pytest.raises(TypeError, match="history must be a list"):
            engine.input_problems([], history=bad)


class Hiding(list[Any]):
    """A list subclass whose own iteration hides its items."""

    def __iter__(self) -> Iterator[Any]:
        return iter(())


class HidingTuple(tuple[Any, ...]):
    def __iter__(self) -> Iterator[Any]:
        return iter(())


@pytest.mark.parametrize("kind", [Hiding, HidingTuple])
def test_list_and_tuple_subclasses_are_read_by_what_they_hold(
    engine: ModuleType, kind: type
) -> None:
    # Both engines read such arguments as the other engine functions do (the twin's
    # as_list, Rust's Items::of): the stored items, not the subclass's own iteration.
    items = [{"role": "user", "content": "q"}, {"type": "function_call", "call_id": "c1"}]
    wrapped = kind(items)
    assert engine.input_problems(wrapped) == [(1, "call_awaiting_output", "c1")]
    assert positions(engine.repair_input(wrapped), items) == [0]
    assert engine.input_problems(items, history=kind(items)) == [(1, "call_awaiting_output", "c1")]


def test_models_are_read_through_model_dump(engine: ModuleType) -> None:
    dangling = FunctionCallModel(type="function_call", call_id="c1")
    items: list[Any] = [{"role": "user", "content": "q"}, dangling]
    assert engine.input_problems(items) == [(1, "call_awaiting_output", "c1")]
    assert positions(engine.repair_input(items), items) == [0]


class LoudStatus:
    """A status whose comparison raises: reading it is visible."""

    def __eq__(self, other: object) -> bool:
        raise AssertionError("the status of a stored item was compared")

    __hash__ = None  # type: ignore[assignment]


class CountingModel:
    """A model whose dump is counted."""

    dumps = 0

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    def model_dump(self, **_: Any) -> dict[str, Any]:
        CountingModel.dumps += 1
        return self.payload


def test_the_history_is_read_only_for_rule_e(engine: ModuleType) -> None:
    # Rule (e) needs each stored item's type (and role), and the ids next to reasoning:
    # a stored call's status is never compared, yet every item is dumped once.
    history: list[Any] = [
        {"role": "user", "content": "q", "id": "m1"},
        {"type": "shell_call", "call_id": "s1", "status": LoudStatus(), "caller": {"x": 1}},
        {"type": "shell_call_output", "call_id": "s1"},
        CountingModel({"type": "reasoning", "id": "rs_1"}),
        CountingModel({"type": "message", "role": "assistant", "id": "msg_1"}),
    ]
    items = [history[0], {"type": "message", "role": "assistant", "id": "msg_1"}]
    CountingModel.dumps = 0
    assert engine.input_problems(items, history=history) == [(1, "item_without_reasoning", "msg_1")]
    assert CountingModel.dumps == 2
    assert positions(engine.repair_input(items, history=history), items) == [0]
    assert CountingModel.dumps == 4


def test_tuples_and_iterators_are_accepted(engine: ModuleType) -> None:
    items = ({"role": "user", "content": "q"}, {"type": "reasoning", "id": "rs_1"})
    assert engine.input_problems(items) == engine.input_problems(iter(items))
    assert positions(engine.repair_input(iter(items)), list(items)) == [0]


def test_public_problems_name_position_rule_and_message() -> None:
    items = [{"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "c7"}]
    (problem,) = public.input_problems(items)
    assert problem.position == 1
    assert problem.rule == "a"
    assert problem.kind == "output_without_call"
    assert problem.detail == "c7"
    assert problem.message == (
        "input[1]: tool output for call_id 'c7' has no call of its type before it"
    )
    assert public.repair_input(items) == [items[0]]


# --- the engines agree on anything -------------------------------------------------

Outcome = tuple[str, Any]


def _outcome(engine: ModuleType, name: str, items: Any, history: Any) -> Outcome:
    """What a call gave: problems, kept objects (by identity; a synthesized output by
    value), or the exception raised."""
    given = list.__iter__(items) if isinstance(items, list) else ()
    originals = {id(item) for item in given}
    try:
        if name == "repair_input synthesize":
            result = engine.repair_input(items, history=history, dangling="synthesize")
        else:
            result = getattr(engine, name)(items, history=history)
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))
    if name.startswith("repair_input"):
        return ("returned", [id(item) if id(item) in originals else item for item in result])
    return ("returned", result)


_OUTCOMES = ("input_problems", "repair_input", "repair_input synthesize")


def _assert_same(pure: ModuleType, core: ModuleType, items: Any, history: Any = None) -> None:
    for name in _OUTCOMES:
        expected = _outcome(pure, name, items, history)
        assert _outcome(core, name, items, history) == expected, name


@PROPERTY
@given(
    items=st.one_of(histories(), sdk_histories(max_size=24)),
    history=st.one_of(st.none(), histories(), sdk_histories()),
)
def test_engines_agree_on_odd_histories(
    pure: ModuleType, core: ModuleType, items: list[Any], history: list[Any] | None
) -> None:
    # Junk items, models, wrong-typed fields, placeholder ids, None roles.
    _assert_same(pure, core, items, history)


@PROPERTY
@given(data=st.data())
def test_engines_agree_when_the_history_shares_objects(
    pure: ModuleType, core: ModuleType, data: st.DataObject
) -> None:
    history = data.draw(st.lists(history_items(), max_size=12))
    items = data.draw(st.lists(st.sampled_from([*history, {"role": "user"}]), max_size=12))
    _assert_same(pure, core, items, history)
    _assert_same(pure, core, history, history)


@PROPERTY
@given(
    history=st.one_of(histories(), reasoning_histories()),
    cut=st.integers(0, 30),
    how=st.sampled_from(["same list", "copied list", "tail", "tail with a copy"]),
)
def test_engines_agree_on_windows_of_the_history(
    pure: ModuleType, core: ModuleType, history: list[Any], cut: int, how: str
) -> None:
    # The model input as a tail of its stored history: the very same objects, which the
    # Rust engine reads once while no Python code has run.
    if how == "same list":
        items = history
    elif how == "copied list":
        items = list(history)
    else:
        items = history[min(cut, len(history)) :]
        if how == "tail with a copy" and items and isinstance(items[0], dict):
            items = [dict(items[0]), *items[1:]]
    _assert_same(pure, core, items, history)


LOG: list[str] = []


class Text(str):
    """A str subclass: compared by its characters, whatever it says of itself."""

    def __eq__(self, other: object) -> bool:
        LOG.append(f"Text.__eq__ {other!r}")
        return False

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return "not my characters"


class Verdict:
    """A comparison result that is not a bool."""

    def __init__(self, name: str, value: bool | Exception) -> None:
        self.name, self.value = name, value

    def __bool__(self) -> bool:
        LOG.append(f"bool {self.name}")
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


class Loud:
    """A field value whose comparisons are logged (and may answer anything)."""

    def __init__(self, name: str, answer: Any) -> None:
        self.name, self.answer = name, answer

    def __eq__(self, other: object) -> Any:
        LOG.append(f"{self.name} == {other!r}")
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    __hash__ = object.__hash__


class LoggingDict(dict[str, Any]):
    """A dict subclass read through its own ``get``."""

    def get(self, key: str, default: Any = None) -> Any:
        LOG.append(f"get {key}")
        return super().get(key, default)


class Model:
    """A model read through ``model_dump(exclude_unset=True)``."""

    def __init__(self, name: str, dump: Any) -> None:
        self.name, self.dump = name, dump

    def model_dump(self, **kwargs: Any) -> Any:
        LOG.append(f"model_dump {self.name} {kwargs}")
        if isinstance(self.dump, Exception):
            raise self.dump
        return self.dump


def _program_turn(status: Any, caller_type: Any) -> list[Any]:
    return [
        {"type": "program", "call_id": "p1"},
        {"type": "shell_call", "call_id": "s1", "status": status} | _owned("p1"),
        {
            "type": "web_search_call",
            "id": "ws1",
            "caller": {"type": caller_type, "caller_id": "p1"},
        },
        {"type": "program_output", "call_id": "p1"},
    ]


def _owned(program_id: str) -> dict[str, Any]:
    return {"caller": {"type": "program", "caller_id": program_id}}


def _tail_after_python_code() -> tuple[list[Any], list[Any]]:
    history = [
        {"type": "reasoning", "id": "r1"},
        LoggingDict(type="message", id="m1"),
        {"type": "reasoning", "id": "r2"},
        {"type": "function_call", "id": "fc2", "call_id": "c2"},
        {"type": "function_call_output", "call_id": "c2"},
    ]
    return [history[3], history[4]], history


ODD_CASES: dict[str, tuple[list[Any], list[Any] | None]] = {
    "str subclasses compare by their characters": (
        [
            {"type": Text("function_call"), "call_id": Text("c1"), "id": Text("fc")},
            {"type": "function_call_output", "call_id": "c1", "id": Text("fc")},
            {"role": Text("user"), "id": Text(FAKE_ID)},
            {"type": "program", "call_id": "p"},
            {"type": "mcp_call", "caller": {"type": Text("program"), "caller_id": Text("p")}},
        ],
        [{"type": Text("reasoning"), "id": "r"}, {"type": "message", "id": Text("fc")}],
    ),
    "dict subclasses are read by what they hold, never through get": (
        [
            LoggingDict(type="function_call", call_id="c1", status="x", role=None),
            LoggingDict(type="shell_call", call_id="c2", caller=LoggingDict(type="program")),
            LoggingDict(role="user", id="u"),
            LoggingDict(type="reasoning"),
        ],
        [LoggingDict(type="reasoning", id="r"), LoggingDict(type="message", id="u")],
    ),
    "models are dumped once per pass": (
        [
            Model("call", {"type": "function_call", "call_id": "c1"}),
            Model("list", [{"type": "function_call_output", "call_id": "c1"}]),
            Model("none", None),
            FunctionCallModel(call_id="c1"),
        ],
        [Model("history", {"type": "reasoning", "id": "r"})],
    ),
    "odd caller types and statuses are compared as the twin compares them": (
        _program_turn(Loud("status", Verdict("pending", True)), Loud("caller", Verdict("c", True))),
        None,
    ),
    "a status comparison's truth is taken after every item is read": (
        [
            *_program_turn(Loud("status", Verdict("late", False)), "program"),
            {"type": "message", "caller": {"type": Loud("second", True), "caller_id": "p1"}},
        ],
        [{"type": "shell_call", "call_id": "s", "status": Loud("history", Verdict("h", True))}],
    ),
    "builtin values never equal a str": (
        [*_program_turn(5, [1]), {"type": "shell_call", "call_id": "s", "status": 2.5}],
        [{"type": 1, "id": "x"}, {"type": None, "id": "y", "role": 3}],
    ),
    "a tail of the history, read again once Python code ran": _tail_after_python_code(),
    "items that are not dicts are ignored": (
        [None, 3, "function_call", ["x"], ("a",), {"type": "reasoning", "id": "r"}],
        [None, {"type": "reasoning", "id": "r"}, "x", {"type": "message", "id": "m"}],
    ),
}


@pytest.mark.parametrize("case", ODD_CASES.values(), ids=ODD_CASES.keys())
def test_odd_values_are_read_alike(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, history = case
    for name in _OUTCOMES:
        logs = []
        outcomes = []
        for engine in (pure, core):
            LOG.clear()
            outcomes.append(_outcome(engine, name, items, history))
            logs.append(list(LOG))
        assert outcomes[1] == outcomes[0], name
        if name == "input_problems" or _outcome(pure, "input_problems", items, history) == (
            "returned",
            [],
        ):
            # One pass each (the twin re-reads the items for each round of a repair).
            assert logs[1] == logs[0], name


RAISING_CASES: dict[str, tuple[list[Any], list[Any] | None]] = {
    "model_dump raising": ([Model("bad", RuntimeError("dump failed"))], None),
    "caller type comparison raising": (
        _program_turn("completed", Loud("caller", ValueError("no compare"))),
        None,
    ),
    "status comparison raising": (
        [{"type": "shell_call", "call_id": "s", "status": Loud("status", KeyError("s"))}],
        None,
    ),
    "a status truth raising": (
        _program_turn(Loud("status", Verdict("no truth", ArithmeticError("no"))), "program"),
        None,
    ),
    "items and history raising: each function reads them in the twin's order": (
        [Model("items", RuntimeError("items first"))],
        [Model("history", RuntimeError("history first"))],
    ),
}


@pytest.mark.parametrize("case", RAISING_CASES.values(), ids=RAISING_CASES.keys())
def test_exceptions_are_the_twins(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, history = case
    for name in _OUTCOMES:
        expected = _outcome(pure, name, items, history)
        assert expected[0] == "raised", name
        assert _outcome(core, name, items, history) == expected, name


def test_arguments_are_read_in_the_twins_order(pure: ModuleType, core: ModuleType) -> None:
    for engine in (pure, core):
        with pytest.raises(TypeError, match=r"^items must be a list of items, not int$"):
            engine.input_problems(5, history=7)
        with pytest.raises(TypeError, match=r"^items must be a list of items, not dict$"):
            engine.repair_input({}, history=7)
        with pytest.raises(TypeError, match=r"^history must be a list of items, not str$"):
            engine.repair_input([], history="abc")
        with pytest.raises(TypeError, match=r"^history must be a list of items, not bytes$"):
            engine.input_problems((), history=b"x")
        with pytest.raises(TypeError):
            engine.input_problems([], [])  # history is keyword-only


@pytest.mark.parametrize("edit", ["shrink", "grow", "replace"])
def test_a_history_generator_may_edit_the_items(
    pure: ModuleType, core: ModuleType, edit: str
) -> None:
    # input_problems reads the items after the history; repair_input copies them before.
    def arguments() -> tuple[list[Any], Iterator[Any]]:
        items: list[Any] = [{"type": "function_call", "call_id": "c"}, {"role": "user"}]

        def history() -> Iterator[Any]:
            if edit == "shrink":
                items.pop()
            elif edit == "grow":
                items.append({"type": "reasoning", "id": "r"})
            else:
                items[0] = {"type": "function_call_output", "call_id": "c"}
            yield {"type": "reasoning", "id": "r"}

        return items, history()

    for name in ("input_problems", "repair_input"):
        outcomes = []
        for engine in (pure, core):
            items, history = arguments()
            outcomes.append(_outcome_by_value(engine, name, items, history))
        assert outcomes[1] == outcomes[0], name


def _outcome_by_value(engine: ModuleType, name: str, items: Any, history: Any) -> Outcome:
    try:
        return ("returned", getattr(engine, name)(items, history=history))
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))


def test_a_chain_of_programs_is_repaired_in_one_pass(engine: ModuleType) -> None:
    # Program k issued program k + 1's call; the last one's only issued item is an
    # orphan call. Dropping it uncovers the next program, and so on down the chain.
    items: list[Any] = [{"role": "user", "content": "q"}, {"type": "program", "call_id": "p0"}]
    for level in range(1, 40):
        items.append({"type": "program", "call_id": f"p{level}"} | _owned(f"p{level - 1}"))
    items.append({"type": "function_call", "call_id": "orphan"} | _owned("p39"))
    items.append({"role": "user", "content": "next"})
    assert positions(engine.repair_input(items), items) == [0, len(items) - 1]


# --- windows -------------------------------------------------------------------------


def test_window_extends_back_to_the_start_of_a_unit() -> None:
    history: list[Any] = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1"},
        {"type": "function_call", "id": "fc_1", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1"},
        {"type": "message", "role": "assistant", "id": "msg_1"},
    ]
    assert window_start(history, 1) == (4, False)
    assert window_start(history, 2) == (1, False)  # the output's call and its reasoning
    assert window_start(history, 3) == (1, False)
    assert window_start(history, 5) == (0, True)
    # The call is not in the tail: read further back.
    assert window_start(history[3:], 2) == (0, True)


@PROPERTY
@given(history=reasoning_histories(), limit=st.integers(1, 40))
def test_windows_hold_whole_units_and_at_least_limit_items(history: list[Any], limit: int) -> None:
    start, _ = window_start(history, limit)
    window = history[start:]
    assert len(window) >= min(limit, len(history))
    problems = input_rules.input_problems(window, history=history)
    assert [p for p in problems if p[1] != "call_awaiting_output"] == []


# --- StoredHistory: rule (e) of a history read once ----------------------------------


def _stored_in_chunks(engine: ModuleType, history: list[Any], cuts: list[int]) -> Any:
    """``engine.StoredHistory`` of ``history``, read in the chunks ``cuts`` makes."""
    stored = engine.StoredHistory()
    start = 0
    for cut in sorted({min(cut, len(history)) for cut in cuts}):
        stored.extend(history[start:cut])
        start = cut
    stored.extend(iter(history[start:]))  # any iterable, as history= takes
    return stored


@PROPERTY
@given(
    case=edited(),
    odd=st.one_of(histories(), sdk_histories()),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_a_stored_history_answers_as_its_items_do(
    engine: ModuleType, case: tuple[list[Any], list[Any]], odd: list[Any], cuts: list[int]
) -> None:
    # Read at once or in chunks, the facts give what the items give, in both calls:
    # problems, the kept objects, and any exception (a junk input item).
    history, items = case
    for stored_items, model_input in ((history, items), (odd, items), (history, odd)):
        expected = [_outcome(engine, name, model_input, stored_items) for name in _NAMES]
        for stored in (
            engine.StoredHistory(stored_items),
            _stored_in_chunks(engine, stored_items, cuts),
        ):
            assert len(stored) == len(stored_items)
            got = [_outcome(engine, name, model_input, stored) for name in _NAMES]
            assert got == expected


_NAMES = ("input_problems", "repair_input")


@PROPERTY
@given(
    history=st.one_of(histories(), sdk_histories(), reasoning_histories()),
    items=st.one_of(histories(), sdk_histories(max_size=24)),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_engines_agree_on_stored_histories(
    pure: ModuleType, core: ModuleType, history: list[Any], items: list[Any], cuts: list[int]
) -> None:
    for name in _OUTCOMES:
        expected = _outcome(pure, name, items, _stored_in_chunks(pure, history, cuts))
        assert _outcome(core, name, items, _stored_in_chunks(core, history, cuts)) == expected


def test_a_stored_history_reads_only_what_rule_e_needs(engine: ModuleType) -> None:
    # Later items extend it; a later pair for one item id wins, as in a list.
    history: list[Any] = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "id": "msg_1"},
    ]
    stored = engine.StoredHistory(history[:1])
    items = [{"type": "message", "role": "assistant", "id": "msg_1"}]
    assert engine.input_problems(items, history=stored) == []
    stored.extend(history[1:])
    assert len(stored) == 2
    assert engine.input_problems(items, history=stored) == [(0, "item_without_reasoning", "msg_1")]
    assert engine.repair_input(items, history=stored) == []
    later = [{"type": "reasoning", "id": "rs_2"}, {"type": "message", "id": "msg_1"}]
    stored.extend(later)
    model_input = [history[0], *items]  # rs_1, then msg_1: stored last after rs_2
    expected = [(1, "item_without_reasoning", "msg_1")]
    assert engine.input_problems(model_input, history=[*history, *later]) == expected
    assert engine.input_problems(model_input, history=stored) == expected


@pytest.mark.parametrize("bad", [None, 42, "items", b"x", {"type": "reasoning"}])
def test_a_stored_history_takes_a_list_of_items(engine: ModuleType, bad: Any) -> None:
    stored = engine.StoredHistory([{"type": "reasoning", "id": "rs_1"}])
    if bad is not None:  # StoredHistory(None) is an empty one
        with pytest.raises(TypeError, match="items must be a list"):
            engine.StoredHistory(bad)
    with pytest.raises(TypeError, match="items must be a list"):
        stored.extend(bad)
    assert len(stored) == 1  # a refused extend reads nothing
    assert len(engine.StoredHistory()) == len(engine.StoredHistory(None)) == 0


def test_a_failed_read_keeps_what_was_read(engine: ModuleType) -> None:
    # An item whose model_dump raises stops the read there; the items before it stay read.
    class Broken:
        def model_dump(self, **_: Any) -> Any:
            raise ValueError("unreadable")

    stored = engine.StoredHistory()
    with pytest.raises(ValueError, match="unreadable"):
        stored.extend([{"type": "reasoning", "id": "rs_1"}, Broken()])
    assert len(stored) == 1
    stored.extend([{"type": "message", "role": "assistant", "id": "msg_1"}])
    items = [{"type": "message", "role": "assistant", "id": "msg_1"}]
    assert engine.input_problems(items, history=stored) == [(0, "item_without_reasoning", "msg_1")]
