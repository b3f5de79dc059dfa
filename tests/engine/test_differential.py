"""Differential tests: the Rust engine against the pure twin on generated input.

Both engines get the very same objects; list results are compared by identity, and a
failing call must fail the same way (exception type and message) on both.
"""

from __future__ import annotations

import collections
import enum
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.examples import examples
from tests.support.strategies import (
    ITEM_LIST_FUNCTIONS,
    FunctionCallModel,
    callback_rounds,
    deep_values,
    histories,
    history_items,
    json_values,
    nested_lists,
    sdk_histories,
)

PROPERTY = settings(max_examples=examples(200), deadline=None)

Outcome = tuple[str, Any]


def _structure(value: Any) -> Any:
    """Types and scalar values of a (deep-copied) value, without object addresses."""
    kind = type(value).__name__
    if isinstance(value, dict):
        return (kind, [(_structure(k), _structure(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (kind, [_structure(v) for v in value])
    if value is None or isinstance(value, (str, int, float, bytes)):
        return (kind, repr(value))
    if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
        return (kind, repr(value))
    return (kind,)


# How each function's result is compared: "ids" for lists holding the input objects,
# "structure" for fresh copies, "value" for everything else.
COMPARE = {
    "deduplicate_input_items": "ids",
    "deduplicate_input_items_preferring_latest": "ids",
    "drop_orphan_function_calls": "ids",
    "deep_copy_items": "structure",
}


def outcome(engine: ModuleType, name: str, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        result = getattr(engine, name)(*args, **kwargs)
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))
    mode = COMPARE.get(name, "value")
    if mode == "ids":
        return ("returned", [id(x) for x in result])
    if mode == "structure":
        return ("returned", [_structure(x) for x in result])
    return ("returned", result)


def assert_same(pure: ModuleType, core: ModuleType, name: str, *args: Any, **kwargs: Any) -> None:
    expected = outcome(pure, name, *args, **kwargs)
    actual = outcome(core, name, *args, **kwargs)
    assert actual == expected, f"{name}: rust {actual!r} != pure {expected!r}"


def check_all(pure: ModuleType, core: ModuleType, items: Any) -> None:
    for name in ITEM_LIST_FUNCTIONS:
        assert_same(pure, core, name, items)
    if isinstance(items, list):
        for item in items:
            assert_same(pure, core, "dedupe_key", item)
            assert_same(pure, core, "canonical_json", item)
            assert_same(pure, core, "content_key", item)


def test_module_constants_agree(pure: ModuleType, core: ModuleType) -> None:
    assert core.MAX_DEPTH == pure.MAX_DEPTH
    assert core.build_profile in ("release", "debug")


@PROPERTY
@given(items=histories())
def test_generated_histories(pure: ModuleType, core: ModuleType, items: list[Any]) -> None:
    check_all(pure, core, items)


@PROPERTY
@given(items=sdk_histories(max_size=24))
def test_sdk_shaped_histories(pure: ModuleType, core: ModuleType, items: list[Any]) -> None:
    check_all(pure, core, items)


@PROPERTY
@given(values=st.lists(json_values(), max_size=4))
def test_json_values(pure: ModuleType, core: ModuleType, values: list[Any]) -> None:
    check_all(pure, core, values)


@settings(max_examples=examples(50), deadline=None)
@given(case=deep_values())
def test_deep_nesting(pure: ModuleType, core: ModuleType, case: tuple[int, Any]) -> None:
    check_all(pure, core, [case[1]])


index_values = st.one_of(st.integers(-3, 20), st.integers(), st.sampled_from(["1", 1.0, True]))
index_sets = st.one_of(
    st.none(),
    st.sets(st.integers(-2, 16), max_size=8),
    st.lists(index_values, max_size=4),
    st.sampled_from(["12", b"1", 3, 2.5]),
)


@PROPERTY
@given(items=st.one_of(histories(), sdk_histories()), pruning=index_sets, outputs=index_sets)
def test_orphan_pruning_with_index_sets(
    pure: ModuleType, core: ModuleType, items: list[Any], pruning: Any, outputs: Any
) -> None:
    assert_same(
        pure, core, "drop_orphan_function_calls", items, pruning, output_pruning_indexes=outputs
    )


@PROPERTY
@given(case=callback_rounds())
def test_classification(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any], list[Any]]
) -> None:
    history, new_items, combined = case
    assert_same(pure, core, "classify_callback_output", history, new_items, combined)


@PROPERTY
@given(history=histories(max_size=4), data=st.data())
def test_classification_with_shared_objects(
    pure: ModuleType, core: ModuleType, history: list[Any], data: st.DataObject
) -> None:
    # The same object in history and new items, or several times in new items.
    pool = [*history, data.draw(history_items())]
    new_items = data.draw(st.lists(st.sampled_from(pool), max_size=4))
    combined = data.draw(st.lists(st.sampled_from(pool), max_size=8))
    assert_same(pure, core, "classify_callback_output", history, new_items, combined)


bad_arguments = st.sampled_from(
    ["abc", b"abc", bytearray(b"x"), {"type": "x"}, 5, None, 2.5, object(), ("a",), range(2)]
)


@settings(max_examples=examples(60), deadline=None)
@given(value=bad_arguments, slot=st.integers(0, 2))
def test_bad_arguments_fail_alike(
    pure: ModuleType, core: ModuleType, value: Any, slot: int
) -> None:
    check_all(pure, core, value)
    arguments: list[Any] = [[], [], []]
    arguments[slot] = value
    assert_same(pure, core, "classify_callback_output", *arguments)


# --- hand-picked oddities ------------------------------------------------------------


class Text(str):
    def __str__(self) -> str:
        return "not my characters"


class Number(float):
    def __repr__(self) -> str:
        return "not my digits"


class Level(enum.IntEnum):
    LOW = 1


class NoStr:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


class BrokenModel:
    def model_dump(self, **kwargs: Any) -> Any:
        raise RuntimeError("dump failed")


class ListModel:
    def model_dump(self, **kwargs: Any) -> Any:
        return [{"type": "function_call", "call_id": "c"}]


class DictItem(dict[str, Any]):
    def model_dump(self, **kwargs: Any) -> Any:
        raise AssertionError("a dict is read as a dict")


def _looped() -> list[Any]:
    looped: list[Any] = []
    looped.append({"type": "function_call", "call_id": "c", "args": looped})
    return looped


ODD_ITEMS: dict[str, Any] = {
    "str subclass values and keys": {Text("type"): Text("function_call"), "call_id": Text("c")},
    "float subclass and int enum": {"a": Number(0.5), "b": Level.LOW, "c": True},
    "keys equal after str()": {1: "int", "1": "str", None: "none", "None": "str"},
    "non-str keys": {None: 1, (1, 2): 2, 2.5: 3, frozenset(): 4},
    "ordered dict": collections.OrderedDict([("z", 1), ("a", {"type": "x"})]),
    "dict subclass with model_dump": DictItem(type="reasoning", id="r"),
    "model dump raising": BrokenModel(),
    "model dump returning a list": ListModel(),
    "str() raising": {"type": "function_call", "call_id": "c", "x": NoStr()},
    "type whose str() raises": {"type": NoStr(), "id": "x"},
    "model without explicit type": FunctionCallModel(call_id="c1"),
    "lone surrogates in identifiers": {"type": "function_call", "call_id": "\ud800"},
    "surrogate type": {"type": "\udfff", "id": "\ud83d\ude00"},
    "huge ints": {"n": [2**64, -(2**64), 2**1000]},
    "non-finite floats": [float("nan"), float("inf"), -float("inf"), -0.0],
    "cycle": _looped(),
    "nesting at the limit": nested_lists(256),
    "nesting past the limit": {"a": nested_lists(256)},
    "metadata-only item": {"_agents_tool_title": "t"},
    "bytes and sets": {"b": b"\x00\xff", "s": {1}},
}


@pytest.mark.parametrize("item", ODD_ITEMS.values(), ids=ODD_ITEMS.keys())
def test_odd_items(pure: ModuleType, core: ModuleType, item: Any) -> None:
    check_all(pure, core, [item])
    check_all(pure, core, [item, item, {"type": "function_call_output", "call_id": "c"}])
    assert_same(pure, core, "classify_callback_output", [item], [], [item, item])
