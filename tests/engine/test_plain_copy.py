"""``plain_json_copy``: the copy ``copy.deepcopy`` gives, for plain JSON trees only.

On both engines: plain trees are copied (new containers, the very same scalars); any
other shape gives None; Rust and the pure twin agree on generated values.
"""

from __future__ import annotations

import collections
import copy
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import value_id
from tests.support.examples import examples
from tests.support.strategies import big_ints, deep_values, history_items, json_values, nested_lists

MAX_DEPTH = 256


def containers(value: Any) -> list[int]:
    """Ids of the dicts and lists in ``value``."""
    found: list[int] = []
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            found.append(id(current))
            pending.extend(current.values())
        elif isinstance(current, list):
            found.append(id(current))
            pending.extend(current)
    return found


def assert_independent_copy(copied: Any, original: Any) -> None:
    assert copied == original
    assert not set(containers(copied)) & set(containers(original))


def test_plain_items_are_copied(engine: ModuleType) -> None:
    text, big = "some text", 2**80
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        {"type": "function_call_output", "call_id": "c1", "output": [1, 2.5, None, True, big]},
        {2: "int key", 2.5: "float key", None: "None key", False: "bool key"},
        "a bare string item",
        [],
    ]
    copied = engine.plain_json_copy(items)
    assert_independent_copy(copied, items)
    assert copied[0]["content"][0]["text"] is text  # scalars are shared, as deepcopy does
    assert copied[1]["output"][4] is big
    assert copied == copy.deepcopy(items)


@pytest.mark.parametrize(
    "odd",
    [
        (1, 2),
        {"k": (1,)},
        collections.OrderedDict(a=1),
        collections.UserDict(a=1),
        {"k": {1, 2}},
        {(1, 2): "tuple key"},
        {"k": b"bytes"},
        {"k": object()},
        [type("S", (str,), {})("str subclass")],
        {"k": type("I", (int,), {})(3)},
    ],
    ids=value_id,
)
def test_anything_not_plain_gives_none(engine: ModuleType, odd: Any) -> None:
    assert engine.plain_json_copy([{"ok": 1}, odd]) is None
    assert engine.plain_json_copy([{"ok": 1}, odd], allow_shared=True) is None


def test_depth_limit_matches_deep_copy_items(engine: ModuleType) -> None:
    assert engine.plain_json_copy([nested_lists(MAX_DEPTH)]) == [nested_lists(MAX_DEPTH)]
    assert engine.plain_json_copy([nested_lists(MAX_DEPTH + 1)]) is None
    with pytest.raises(ValueError):
        engine.deep_copy_items([nested_lists(MAX_DEPTH + 1)])


def test_cycles_give_none(engine: ModuleType) -> None:
    looped: list[Any] = []
    looped.append(looped)
    node: dict[str, Any] = {}
    node["self"] = node
    for value in (looped, node):
        assert engine.plain_json_copy([value]) is None
        assert engine.plain_json_copy([value], allow_shared=True) is None


def test_sharing_is_refused_unless_allowed(engine: ModuleType) -> None:
    shared = {"type": "message", "content": []}
    items = [shared, {"inner": shared["content"]}, shared]
    assert engine.plain_json_copy(items) is None
    copied = engine.plain_json_copy(items, allow_shared=True)
    assert copied == items
    # Copied once per reference, like the SDK's dump-compatible copy.
    assert copied[0] is not copied[2]
    assert copied[0]["content"] is not copied[1]["inner"]
    # Shared scalars are not sharing.
    text = "same text"
    assert engine.plain_json_copy([{"a": text, "b": text}]) == [{"a": text, "b": text}]


def test_shared_copies_that_would_explode_give_none(engine: ModuleType) -> None:
    tower: list[Any] = []
    for _ in range(40):  # 2**40 references to copy
        tower = [tower, tower]
    assert engine.plain_json_copy([tower], allow_shared=True) is None
    assert engine.plain_json_copy([tower]) is None


def test_items_holding_a_key_without_names_give_none(engine: ModuleType) -> None:
    items = [{"type": "message", "content": [{"created_by": "nested is fine"}]}, "text", []]
    assert engine.plain_json_copy(items, without=("created_by", "id")) == items
    assert engine.plain_json_copy(items, without=()) == items
    assert engine.plain_json_copy([*items, {"id": 1}], without=("created_by", "id")) is None
    # An int key equal in hash to nothing named is no match; a key is looked up, not scanned.
    assert engine.plain_json_copy([{1: "a", "idx": 2}], without=("id",)) == [{1: "a", "idx": 2}]
    with pytest.raises(TypeError, match=r"^without must be a tuple of str, not list$"):
        engine.plain_json_copy([], without=["id"])  # type: ignore[arg-type]
    holding = r"^without must be a tuple of str, not a tuple holding int$"
    with pytest.raises(TypeError, match=holding):
        engine.plain_json_copy([], without=(1,))  # type: ignore[arg-type]


def test_arguments(engine: ModuleType) -> None:
    assert engine.plain_json_copy([]) == []
    assert engine.plain_json_copy(iter([{"a": 1}])) == [{"a": 1}]
    with pytest.raises(TypeError, match=r"^items must be a list of items, not dict$"):
        engine.plain_json_copy({"a": 1})
    for wrong, message in ((1, "'int' object"), (None, "'None'")):
        with pytest.raises(TypeError) as raised:
            engine.plain_json_copy([], allow_shared=wrong)
        assert str(raised.value) == f"{message} is not an instance of 'bool'"
        notes = getattr(raised.value, "__notes__", ["while processing 'allow_shared'"])
        assert notes == ["while processing 'allow_shared'"]


def _shared_structures() -> st.SearchStrategy[list[Any]]:
    """Lists whose members may repeat containers (and then share them)."""
    leaf = json_values(max_leaves=6)
    return st.lists(leaf, min_size=1, max_size=4).flatmap(
        lambda pool: st.lists(
            st.one_of(
                st.sampled_from(pool),
                st.sampled_from(pool).map(lambda member: {"wrap": member}),
                st.sampled_from(pool).map(lambda member: [member, member]),
            ),
            max_size=6,
        )
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        st.lists(json_values(), max_size=6),
        st.lists(history_items(), max_size=6),
        _shared_structures(),
        deep_values().map(lambda pair: [pair[1]]),
        st.lists(st.dictionaries(st.one_of(big_ints, st.none()), json_values(4), max_size=3)),
    ),
    st.booleans(),
    st.sampled_from([None, (), ("type",), ("content", "created_by")]),
)
def test_rust_and_pure_agree(
    pure: ModuleType,
    core: ModuleType,
    items: list[Any],
    allow_shared: bool,
    without: tuple[str, ...] | None,
) -> None:
    ours = core.plain_json_copy(items, allow_shared=allow_shared, without=without)
    theirs = pure.plain_json_copy(items, allow_shared=allow_shared, without=without)
    assert (ours is None) == (theirs is None)
    if without and ours is not None:
        assert not [item for item in items if isinstance(item, dict) and set(item) & set(without)]
    if ours is not None:
        assert_independent_copy(ours, items)
        assert repr(ours) == repr(theirs)  # NaN-safe equality
        if not allow_shared:
            assert repr(ours) == repr(copy.deepcopy(items))
