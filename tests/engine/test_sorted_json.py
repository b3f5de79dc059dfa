"""``sorted_json_text``: json.dumps(value, sort_keys=True, default=str), byte for byte,
or None ("not mine") for every value it does not walk."""

from __future__ import annotations

import collections
import json
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import value_id
from tests.support.examples import examples
from tests.support.strategies import deep_values, exotic_values, json_values, unicode_text

PROPERTY = settings(max_examples=examples(400), deadline=None)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


EDGE_VALUES: list[Any] = [
    "plain",
    "caf\u00e9 \u20ac \U0001f600 \U0010ffff \ud7ff \ue000",
    "\ud800 lone \udfff and \ud83d then \ude00",
    '"\\\n\r\t\b\f\x00\x01\x1f\x7f~ ',
    1e16,
    1e-7,
    5e-324,
    -0.0,
    0.0,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    91843407658662.125,
    2**63,
    -(2**63) - 1,
    10**100,
    -(10**300),
    True,
    False,
    None,
    [],
    {},
    (),
    ("tuple", ["in", "list"]),
    {"b": 1, "a": [1, 2.5, None], "\u00e9": {"z": True, "": False}, "\U0001f600": "x"},
    {"\ud800": 1, "\ue000": 2, "\uffff": 3, "\U00010000": 4, "\x7f": 5, "~": 6},
]


@pytest.mark.parametrize("value", EDGE_VALUES, ids=value_id)
def test_edge_values_give_json_dumps_text(engine: ModuleType, value: Any) -> None:
    assert engine.sorted_json_text(value) == dumps(value)
    assert engine.sorted_json_text([value, {"k": value}]) == dumps([value, {"k": value}])


@PROPERTY
@given(json_values(max_leaves=24))
def test_json_values_give_json_dumps_text(engine: ModuleType, value: Any) -> None:
    assert engine.sorted_json_text(value) == dumps(value)


@PROPERTY
@given(st.dictionaries(unicode_text, json_values(max_leaves=4), max_size=6), st.data())
def test_skip_leaves_out_top_level_keys(engine: ModuleType, value: Any, data: Any) -> None:
    names = tuple(data.draw(st.lists(st.sampled_from([*value, "absent", "id"]), max_size=3)))
    expected = dumps({key: member for key, member in value.items() if key not in names})
    assert engine.sorted_json_text(value, names) == expected
    nested = {"inner": value}
    assert engine.sorted_json_text(nested, names) == dumps(
        {key: member for key, member in nested.items() if key not in names}
    )


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


class Mapping(dict):  # type: ignore[type-arg]
    pass


class Sequence(list):  # type: ignore[type-arg]
    pass


NOT_MINE: list[Any] = [
    Text("x"),
    Number(3),
    Real(1.5),
    Mapping(a=1),
    Sequence([1]),
    collections.OrderedDict(a=1),
    {1: "int key"},
    {None: "none key"},
    {Text("k"): 1},
    {"a": 1, 2: "mixed keys"},
    b"bytes",
    object(),
    {1, 2},
    10 ** (sys.get_int_max_str_digits() + 1)
    if hasattr(sys, "get_int_max_str_digits")
    else object(),
]


@pytest.mark.parametrize("value", NOT_MINE, ids=lambda value: type(value).__name__)
def test_anything_else_is_not_mine(engine: ModuleType, value: Any) -> None:
    assert engine.sorted_json_text(value) is None
    assert engine.sorted_json_text({"nested": [value]}) is None


@PROPERTY
@given(exotic_values, json_values(max_leaves=4))
def test_default_str_values_are_not_mine(engine: ModuleType, odd: Any, plain: Any) -> None:
    assert engine.sorted_json_text([plain, odd]) is None
    assert engine.sorted_json_text({"a": plain, "b": {"c": odd}}) is None


def test_cycles_are_not_mine(engine: ModuleType) -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    assert engine.sorted_json_text(looped) is None
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    assert engine.sorted_json_text(mapping) is None


@settings(max_examples=examples(60), deadline=None)
@given(deep_values())
def test_depth_beyond_max_depth_is_not_mine(engine: ModuleType, case: tuple[int, Any]) -> None:
    depth, value = case
    result = engine.sorted_json_text(value)
    if depth <= engine.MAX_DEPTH:
        assert result == dumps(value)
    else:
        assert result is None


@pytest.mark.parametrize("skip", [["list"], "str", ("ok", 1), ("ok", Text("x"))], ids=value_id)
def test_skip_must_be_a_tuple_of_str(engine: ModuleType, skip: Any) -> None:
    with pytest.raises(TypeError, match="skip must be a tuple of str"):
        engine.sorted_json_text({}, skip)


def test_shared_values_are_written_each_time(engine: ModuleType) -> None:
    shared = {"k": [1, 2]}
    value = [shared, shared, (shared,)]
    assert engine.sorted_json_text(value) == dumps(value)


@settings(max_examples=examples(200), deadline=None)
@given(
    items=st.lists(
        st.one_of(
            json_values(),
            exotic_values,
            st.dictionaries(unicode_text, json_values(max_leaves=4), max_size=3),
        ),
        max_size=6,
    ),
    skip=st.sampled_from([None, (), ("a",), ("created_by", "id")]),
)
def test_dict_texts_are_each_dicts_text(
    pure: ModuleType, core: ModuleType, items: list[Any], skip: Any
) -> None:
    expected = [pure.sorted_json_text(item, skip) if type(item) is dict else None for item in items]
    assert pure.dict_sorted_json_texts(items, skip) == expected
    assert core.dict_sorted_json_texts(items, skip) == expected


def test_dict_texts_name_a_bad_skip_alike(pure: ModuleType, core: ModuleType) -> None:
    for skip in (["a"], ("a", 1)):
        messages = []
        for engine in (pure, core):
            with pytest.raises(TypeError) as caught:
                engine.dict_sorted_json_texts([{}], skip)
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
        assert messages[0].startswith("skip must be a tuple of str")
