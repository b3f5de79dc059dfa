"""The model-input rules: ``input_problems`` and ``repair_input`` on both engines.

Histories of reasoning models (reasoning runs before calls and messages, parallel
calls, programs, calls paused for approval) are cut by random windows and edited the
way session callbacks do (slice, drop, reorder, repeat). Then: the repair leaves no
problem, a valid list comes back as the same objects, nothing outside a broken unit
is dropped, and the engines agree, exceptions included.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore import items as public
from histcore.engine import pure_input
from histcore.engine.model_input import window_start
from tests.support.strategies import FunctionCallModel, positions

PROPERTY = settings(max_examples=200, deadline=None)


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


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """(stored history, model input cut from it by a window and callback edits)."""
    history = draw(reasoning_histories())
    items = history[-draw(st.integers(1, len(history))) :]
    for edit in draw(st.lists(st.sampled_from(["slice", "drop", "swap", "repeat"]), max_size=3)):
        if not items:
            break
        at = draw(st.integers(0, len(items) - 1))
        if edit == "slice":
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
    problems = pure_input.input_problems(items, history=stored)
    roots, _ = pure_input.unit_roots(items)
    broken = {roots[position] for position, _, _ in problems}

    def droppable(position: int) -> bool:
        item = items[position]
        return roots[position] in broken and not (
            isinstance(item, dict) and item.get("role") == "user"
        )

    expected = [position for position in range(len(items)) if not droppable(position)]
    first_round = [items[position] for position in expected]
    repaired = engine.repair_input(items, history=stored)
    if not pure_input.input_problems(first_round, history=stored):
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
    engine: ModuleType, pure: ModuleType, case: tuple[list[Any], list[Any]], with_history: bool
) -> None:
    history, items = case
    stored = history if with_history else None
    assert engine.input_problems(items, history=stored) == pure.input_problems(
        items, history=stored
    )
    assert positions(engine.repair_input(items, history=stored), items) == positions(
        pure.repair_input(items, history=stored), items
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


def test_models_are_read_through_model_dump(engine: ModuleType) -> None:
    dangling = FunctionCallModel(type="function_call", call_id="c1")
    items: list[Any] = [{"role": "user", "content": "q"}, dangling]
    assert engine.input_problems(items) == [(1, "call_awaiting_output", "c1")]
    assert positions(engine.repair_input(items), items) == [0]


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
    problems = pure_input.input_problems(window, history=history)
    assert [p for p in problems if p[1] != "call_awaiting_output"] == []
