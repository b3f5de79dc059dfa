"""Argument handling: what each engine function accepts, and clear errors otherwise."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import value_id
from tests.support.examples import examples
from tests.support.strategies import (
    ITEM_LIST_FUNCTIONS,
    MAX_DEPTH,
    call,
    nested_lists,
    output,
    sdk_histories,
    user,
)

NOT_ITEM_LISTS: list[Any] = ["abc", b"abc", bytearray(b"ab"), {"type": "x"}, 5, None, 1.5, object()]


def _type_error(function: Callable[[], Any], argument: str, value: Any) -> None:
    with pytest.raises(TypeError) as caught:
        function()
    message = str(caught.value)
    assert re.search(rf"\b{argument}\b", message), message
    assert type(value).__name__ in message, message


@pytest.mark.parametrize("name", ITEM_LIST_FUNCTIONS)
@pytest.mark.parametrize("value", NOT_ITEM_LISTS, ids=lambda v: type(v).__name__)
def test_item_list_arguments_reject_non_lists(engine: ModuleType, name: str, value: Any) -> None:
    function = getattr(engine, name)
    _type_error(lambda: function(value), "items", value)


@pytest.mark.parametrize("value", NOT_ITEM_LISTS, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("argument", ["history", "new_items", "combined"])
def test_classify_names_the_bad_argument(engine: ModuleType, argument: str, value: Any) -> None:
    arguments: dict[str, Any] = {"history": [], "new_items": [], "combined": []}
    arguments[argument] = value
    _type_error(lambda: engine.classify_callback_output(**arguments), argument, value)


def _generator(items: list[Any]) -> Iterator[Any]:
    yield from items


@pytest.mark.parametrize(
    "wrap", [list, tuple, _generator, iter], ids=["list", "tuple", "generator", "iter"]
)
def test_any_iterable_of_items_is_accepted(engine: ModuleType, wrap: Any) -> None:
    items = [call("c1"), output("c1"), call("c1", "v2"), user("u"), call("c2")]
    assert engine.dedupe_keys(wrap(items)) == [engine.dedupe_key(x) for x in items]
    assert [id(x) for x in engine.deduplicate_input_items(wrap(items))] == [
        id(items[0]),
        id(items[1]),
        id(items[3]),
        id(items[4]),
    ]
    latest = engine.deduplicate_input_items_preferring_latest(wrap(items))
    assert [id(x) for x in latest] == [id(items[2]), id(items[1]), id(items[3]), id(items[4])]
    assert engine.content_keys(wrap(items)) == [engine.content_key(x) for x in items]
    kept = engine.drop_orphan_function_calls(wrap(items))
    assert [id(x) for x in kept] == [id(x) for x in items[:4]]
    assert engine.deep_copy_items(wrap(items)) == items
    assert engine.classify_callback_output(
        wrap(items[:2]), wrap(items[3:4]), wrap([items[0], items[3]])
    ) == ([0], [1])


def test_errors_raised_while_iterating_propagate(engine: ModuleType) -> None:
    def failing() -> Iterator[Any]:
        yield user("u")
        raise RuntimeError("source failed")

    for name in ITEM_LIST_FUNCTIONS:
        with pytest.raises(RuntimeError, match="source failed"):
            getattr(engine, name)(failing())


BAD_INDEX_SETS: list[Any] = [
    ["0"],
    [1.0],
    [True],
    [None],
    [1, "2"],
    "01",
    b"\x00",
    5,
    2.5,
    object(),
]


@pytest.mark.parametrize("value", BAD_INDEX_SETS, ids=value_id)
@pytest.mark.parametrize("argument", ["pruning_indexes", "output_pruning_indexes"])
def test_index_sets_must_hold_ints(engine: ModuleType, argument: str, value: Any) -> None:
    items = [call("c1"), output("c2")]
    with pytest.raises(TypeError) as caught:
        engine.drop_orphan_function_calls(items, **{argument: value})
    assert re.search(rf"\b{argument}\b", str(caught.value)), str(caught.value)


def test_index_sets_ignore_positions_outside_the_list(engine: ModuleType) -> None:
    items = [call("c1"), output("c1"), output("c2")]
    huge = [2**100, -(2**100), -1, -2, 3, 10**6]
    assert engine.drop_orphan_function_calls(items, huge) == items
    assert engine.drop_orphan_function_calls(items, output_pruning_indexes=huge) == items


def test_failed_calls_leave_input_untouched(engine: ModuleType) -> None:
    items: list[Any] = [user("u"), {"deep": nested_lists(MAX_DEPTH + 5)}]
    before = repr(items)
    attempts: list[Callable[[], Any]] = [
        lambda: engine.content_keys(items),
        lambda: engine.deep_copy_items(items),
        lambda: engine.classify_callback_output([], [], items),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError):
            attempt()
        assert repr(items) == before


def test_dedupe_key_never_raises_on_odd_items(engine: ModuleType) -> None:
    odd: list[Any] = [
        {"type": object(), "id": "x"},
        {"type": ["function_call"], "call_id": "c"},
        {"type": {"a": 1}, "id": "x"},
        {"type": 1.5, "call_id": "c"},
        {1: 2},
        {"id": b"x"},
        {"role": 0, "id": "x"},
    ]
    keys = engine.dedupe_keys(odd)
    assert keys[0] is not None
    assert keys[0].startswith("id:<object object at")
    assert keys[1:] == [
        "call_id:['function_call']:c",
        "id:{'a': 1}:x",
        "call_id:1.5:c",
        None,
        None,
        None,
    ]


@settings(max_examples=examples(100), deadline=None)
@given(items=sdk_histories(), data=st.data())
def test_no_function_mutates_its_input(
    engine: ModuleType, items: list[Any], data: st.DataObject
) -> None:
    snapshot = copy.deepcopy(items)
    members = [id(item) for item in items]
    prunable = data.draw(st.none() | st.sets(st.integers(0, len(items))))
    engine.dedupe_keys(items)
    engine.deduplicate_input_items(items)
    engine.deduplicate_input_items_preferring_latest(items)
    engine.content_keys(items)
    engine.drop_orphan_function_calls(items, prunable, output_pruning_indexes=prunable)
    engine.deep_copy_items(items)
    engine.classify_callback_output(items, items[::2], items[::-1])
    for item in items:
        engine.dedupe_key(item)
        engine.canonical_json(item)
    assert items == snapshot
    assert [id(item) for item in items] == members
