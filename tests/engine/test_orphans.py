"""Orphan-call pruning: calls without outputs, their reasoning runs, programs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.examples import examples
from tests.support.strategies import (
    CALL_TO_OUTPUT,
    FunctionCallModel,
    FunctionCallOutputModel,
    call,
    histories,
    output,
    owned_by,
    positions,
    program,
    reasoning,
    sdk_histories,
    user,
)

PROPERTY = settings(max_examples=examples(150), deadline=None)


def test_returns_new_list_of_same_objects_and_leaves_input_alone(engine: ModuleType) -> None:
    items = [user("u"), reasoning("r"), call("c1"), output("c1"), call("c2")]
    before = repr(items)
    result = engine.drop_orphan_function_calls(items)
    assert positions(result, items) == [0, 1, 2, 3]
    assert repr(items) == before
    unchanged = engine.drop_orphan_function_calls(items[:4])
    assert unchanged == items[:4]
    assert unchanged is not items


def test_models_are_read_through_model_dump(engine: ModuleType) -> None:
    answered = FunctionCallModel(type="function_call", call_id="c1")
    dangling = FunctionCallModel(type="function_call", call_id="c2")
    untyped = FunctionCallModel(call_id="c3")  # type never set: not a call at all
    answer = FunctionCallOutputModel(type="function_call_output", call_id="c1")
    items: list[Any] = [answered, reasoning("r"), dangling, untyped, answer]
    assert positions(engine.drop_orphan_function_calls(items), items) == [0, 3, 4]


INDEX_SETS: dict[str, Callable[[], Iterable[int]]] = {
    "set": lambda: {2},
    "tuple": lambda: (2,),
    "list": lambda: [2],
    "range": lambda: range(2, 3),
    "frozenset": lambda: frozenset({2}),
    "iterator": lambda: iter([2]),
    "generator": lambda: (i for i in [2]),
}


@pytest.mark.parametrize("make", INDEX_SETS.values(), ids=INDEX_SETS.keys())
def test_index_sets_accept_any_iterable_of_ints(
    engine: ModuleType, make: Callable[[], Iterable[int]]
) -> None:
    items = [call("c1"), user("u"), call("c2")]
    kept = engine.drop_orphan_function_calls(items, make())
    assert positions(kept, items) == [0, 1]
    kept = engine.drop_orphan_function_calls(
        [output("c9"), user("u"), output("c8")], output_pruning_indexes=make()
    )
    assert [item.get("call_id") for item in kept] == ["c9", None]


def test_pruning_indexes_by_keyword(engine: ModuleType) -> None:
    items = [reasoning("r"), call("c1"), call("c2")]
    kept = engine.drop_orphan_function_calls(items, pruning_indexes=[1])
    assert positions(kept, items) == [0, 2]


def test_long_reasoning_run_goes_with_its_call(engine: ModuleType) -> None:
    items: list[Any] = [user("u"), *[reasoning(f"r{i}") for i in range(2000)], call("c1")]
    assert engine.drop_orphan_function_calls(items) == [items[0]]


def test_program_items_go_with_orphan_program_only(engine: ModuleType) -> None:
    items = [
        program("p1"),
        call("c1", caller=owned_by("p1")),
        program("p2"),
        call("c2", caller=owned_by("p2")),
        output("c2", caller=owned_by("p2")),
    ]
    assert positions(engine.drop_orphan_function_calls(items), items) == [2, 3, 4]


# --- properties ----------------------------------------------------------------------


def _payload(item: Any) -> dict[str, Any] | None:
    if isinstance(item, dict):
        return item
    if hasattr(item, "model_dump"):
        dumped = item.model_dump(exclude_unset=True)
        return dumped if isinstance(dumped, dict) else None
    return None


def _kind(payload: dict[str, Any] | None) -> str | None:
    kind = payload.get("type") if payload is not None else None
    return kind if isinstance(kind, str) else None


def _owner(payload: dict[str, Any]) -> str | None:
    caller = payload.get("caller")
    if isinstance(caller, dict) and caller.get("type") == "program":
        owner = caller.get("caller_id")
        return owner if isinstance(owner, str) else None
    return None


def _is_pending_shell(payload: dict[str, Any]) -> bool:
    return payload.get("type") == "shell_call" and payload.get("status") in (None, "in_progress")


def _has_output(payloads: list[dict[str, Any] | None], kind: str, call_id: str) -> bool:
    wanted = CALL_TO_OUTPUT[kind]
    return any(
        p is not None and p.get("type") == wanted and p.get("call_id") == call_id for p in payloads
    )


def _kept_call_is_justified(
    payloads: list[dict[str, Any] | None], kept: list[dict[str, Any] | None], index: int
) -> bool:
    payload = payloads[index]
    assert payload is not None
    kind, call_id = _kind(payload), payload.get("call_id")
    assert kind is not None
    if _owner(payload) is not None and _is_pending_shell(payload):
        return True  # a program's hosted shell call may still be running
    if isinstance(call_id, str):
        if _has_output(payloads, kind, call_id):
            return True
        # An unanswered program survives only while it still owns retained items.
        return kind == "program" and any(p is not None and _owner(p) == call_id for p in kept)
    later = payloads[index + 1 :]
    return kind == "tool_search_call" and any(
        p is not None
        and p.get("type") == "tool_search_output"
        and not isinstance(p.get("call_id"), str)
        for p in later
    )


def _next_non_reasoning(payloads: list[dict[str, Any] | None], index: int) -> int | None:
    for later in range(index + 1, len(payloads)):
        payload = payloads[later]
        if payload is None or payload.get("type") != "reasoning":
            return later
    return None


mixed_histories = st.one_of(sdk_histories(), histories())


@PROPERTY
@given(items=mixed_histories)
def test_only_calls_reasoning_and_program_items_are_dropped(
    engine: ModuleType, items: list[Any]
) -> None:
    before = repr(items)
    result = engine.drop_orphan_function_calls(items)
    assert repr(items) == before
    kept_positions = positions(result, items)
    assert kept_positions == sorted(kept_positions)
    payloads = [_payload(item) for item in items]
    kept_payloads = [payloads[i] for i in kept_positions]
    dropped = set(range(len(items))) - set(kept_positions)
    for index in dropped:
        payload = payloads[index]
        assert payload is not None, "non-dict items always pass through"
        kind = _kind(payload)
        if kind == "reasoning" and _owner(payload) is None:
            follower = _next_non_reasoning(payloads, index)
            assert follower is not None
            assert follower in dropped
        else:
            assert kind in CALL_TO_OUTPUT or _owner(payload) is not None, payload
    for index in kept_positions:
        payload = payloads[index]
        if _kind(payload) in CALL_TO_OUTPUT:
            assert _kept_call_is_justified(payloads, kept_payloads, index), payload
    # Pruning what is left finds nothing more to drop.
    again = engine.drop_orphan_function_calls(result)
    assert [id(x) for x in again] == [id(x) for x in result]


@PROPERTY
@given(items=mixed_histories, data=st.data())
def test_index_sets_bound_what_is_dropped(
    engine: ModuleType, items: list[Any], data: st.DataObject
) -> None:
    indexes = st.sets(st.integers(-1, len(items)), max_size=len(items) + 1)
    prunable = data.draw(st.none() | indexes, label="pruning_indexes")
    output_prunable = data.draw(st.none() | indexes, label="output_pruning_indexes")
    result = engine.drop_orphan_function_calls(
        items, prunable, output_pruning_indexes=output_prunable
    )
    kept_positions = positions(result, items)
    assert kept_positions == sorted(kept_positions)
    payloads = [_payload(item) for item in items]
    available: set[tuple[str, str]] = set()
    for index in kept_positions:
        payload, kind = payloads[index], _kind(payloads[index])
        if payload is not None and kind in CALL_TO_OUTPUT:
            call_id = payload.get("call_id")
            if isinstance(call_id, str):
                available.add((CALL_TO_OUTPUT[kind], call_id))
    for index in set(range(len(items))) - set(kept_positions):
        payload = payloads[index]
        assert payload is not None
        if prunable is not None and index not in prunable:
            # Only an output whose call is gone may go from outside pruning_indexes.
            assert output_prunable is not None
            assert index in output_prunable
            assert _kind(payload) in CALL_TO_OUTPUT.values()
        if _kind(payload) in CALL_TO_OUTPUT.values() and _owner(payload) is None:
            assert output_prunable is not None
            assert index in output_prunable
            assert (payload["type"], payload.get("call_id")) not in available
