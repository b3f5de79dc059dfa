"""deep_copy_items and the classification of a session input callback's output."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support.examples import examples
from tests.support.strategies import (
    MAX_DEPTH,
    MessageModel,
    assistant,
    callback_rounds,
    histories,
    nested_lists,
    output,
    user,
)

PROPERTY = settings(max_examples=examples(150), deadline=None)


# --- deep_copy_items -----------------------------------------------------------------


class Box:
    """A non-JSON value that must be deep-copied, not shared."""

    def __init__(self, content: list[Any]) -> None:
        self.content = content

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.content == self.content

    __hash__ = None  # type: ignore[assignment]


def _containers(value: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(value, (dict, list, tuple)):
        found.append(value)
        members = value.values() if isinstance(value, dict) else value
        for member in members:
            found.extend(_containers(member))
    return found


def test_copy_is_equal_and_independent(engine: ModuleType) -> None:
    items: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        output("c1", meta={"tags": ["a", "b"], "pair": (1, [2])}),
        [1, {"x": None}],
        "plain",
        7,
    ]
    original = copy.deepcopy(items)
    copied = engine.deep_copy_items(items)
    assert copied == items
    assert copied is not items
    original_ids = {id(c) for c in _containers(items) if c != ()}
    assert not any(id(c) in original_ids for c in _containers(copied) if c != ())
    copied[0]["content"][0]["text"] = "changed"
    copied[1]["meta"]["tags"].append("c")
    copied[1]["meta"]["pair"][1].append(3)
    copied[2][1]["x"] = "y"
    assert items == original


def test_non_json_values_are_deep_copied(engine: ModuleType) -> None:
    box = Box([1, [2]])
    model = MessageModel(role="user", content="hi")
    items: list[Any] = [{"box": box}, model, box]
    copied = engine.deep_copy_items(items)
    assert copied[0]["box"] == box
    assert copied[0]["box"] is not box
    assert copied[0]["box"].content is not box.content
    assert copied[2] == box
    assert copied[2] is not box
    assert copied[1] == model
    assert copied[1] is not model
    copied[2].content[1].append(3)
    copied[1].content = "changed"
    assert box.content == [1, [2]]
    assert model.content == "hi"


def test_deepcopy_protocol_is_used_for_other_objects(engine: ModuleType) -> None:
    copies: list[int] = []

    class Tracked:
        def __deepcopy__(self, memo: dict[int, Any]) -> Tracked:
            copies.append(1)
            return Tracked()

    tracked = Tracked()
    copied = engine.deep_copy_items([{"t": tracked}, tracked])
    assert len(copies) == 2
    assert copied[0]["t"] is not tracked
    assert copied[1] is not tracked


def test_shared_sub_objects_are_copied_per_reference(engine: ModuleType) -> None:
    shared = {"x": [1]}
    copied = engine.deep_copy_items([{"a": shared, "b": shared}, shared])
    assert copied[0]["a"] == copied[0]["b"] == copied[1] == shared
    assert copied[0]["a"] is not copied[0]["b"]
    assert copied[0]["a"] is not copied[1]


def test_copy_accepts_generators_and_tuples(engine: ModuleType) -> None:
    items = [user("a"), assistant("b")]
    assert engine.deep_copy_items(iter(items)) == items
    assert engine.deep_copy_items(tuple(items)) == items
    assert engine.deep_copy_items([]) == []


def test_copy_nesting_limit_and_cycles(engine: ModuleType) -> None:
    assert engine.deep_copy_items([nested_lists(MAX_DEPTH)]) == [nested_lists(MAX_DEPTH)]
    with pytest.raises(ValueError, match=str(MAX_DEPTH)):
        engine.deep_copy_items([nested_lists(MAX_DEPTH + 1)])
    with pytest.raises(ValueError):
        engine.deep_copy_items([nested_lists(100_000)])
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(ValueError):
        engine.deep_copy_items([looped])


@PROPERTY
@given(items=histories())
def test_copy_has_same_content_and_no_shared_containers(
    engine: ModuleType, items: list[Any]
) -> None:
    before = repr(items)
    copied = engine.deep_copy_items(items)
    assert repr(copied) == before == repr(items)
    assert engine.content_keys(copied) == engine.content_keys(items)
    original_ids = {id(c) for c in _containers(items) if c != ()}
    assert not any(id(c) in original_ids for c in _containers(copied) if c != ())


# --- classify_callback_output --------------------------------------------------------


def test_four_turns_store_exactly_eight_items(engine: ModuleType) -> None:
    store: list[Any] = []
    for turn in range(4):
        history = engine.deep_copy_items(store)
        new_items = engine.deep_copy_items([user(f"u{turn}")])
        combined = history + history[:1] + new_items
        history_positions, persisted = engine.classify_callback_output(history, new_items, combined)
        assert history_positions == list(range(len(history) + min(1, len(history))))
        store += [combined[p] for p in persisted] + [assistant(f"a{turn}")]
    assert len(store) == 8
    assert [item["content"] for item in store] == ["u0", "a0", "u1", "a1", "u2", "a2", "u3", "a3"]


def test_history_identity_wins_over_new_identity(engine: ModuleType) -> None:
    shared = user("x")
    assert engine.classify_callback_output([shared], [shared], [shared, shared]) == ([0, 1], [])


def test_models_classify_by_identity_then_dump(engine: ModuleType) -> None:
    old = MessageModel(role="user", content="old")
    new = MessageModel(role="user", content="new")
    rebuilt_new = {"role": "user", "content": "new"}
    rebuilt_old = MessageModel(role="user", content="old")
    combined: list[Any] = [rebuilt_old, rebuilt_new, old, new]
    # The identity pass places ``new`` at 3 first, so its reconstruction is a repeat.
    assert engine.classify_callback_output([old], [new], combined) == ([0, 2], [3])
    assert engine.classify_callback_output([old], [new], combined[:3]) == ([0, 2], [1])


def test_junk_in_callback_output(engine: ModuleType) -> None:
    history: list[Any] = [None, 1]
    result = engine.classify_callback_output(history, ["x"], [None, 1, "x", "x", 2.5])
    assert result == ([0, 1], [2, 4])


@PROPERTY
@given(case=callback_rounds())
def test_classification_rules_hold(
    engine: ModuleType, case: tuple[list[Any], list[Any], list[Any]]
) -> None:
    history, new_items, combined = case
    history_positions, persisted = engine.classify_callback_output(history, new_items, combined)
    assert history_positions == sorted(set(history_positions))
    assert persisted == sorted(set(persisted))
    assert not set(history_positions) & set(persisted)
    assert set(history_positions) | set(persisted) <= set(range(len(combined)))

    history_ids = {id(item) for item in history}
    new_ids = {id(item) for item in new_items}
    history_keys = set(engine.content_keys(history))
    new_key_counts: dict[bytes, int] = {}
    for key in engine.content_keys(new_items):
        new_key_counts[key] = new_key_counts.get(key, 0) + 1
    keys = engine.content_keys(combined)
    seen_new: set[int] = set()
    persisted_per_key: dict[bytes, int] = {}
    for position, (item, key) in enumerate(zip(combined, keys, strict=True)):
        if id(item) in history_ids:
            assert position in history_positions
        elif id(item) in new_ids:
            # Identity: persisted at its first position, a repeat afterwards.
            assert (position in persisted) == (id(item) not in seen_new)
            assert position not in history_positions
            seen_new.add(id(item))
        elif position in history_positions:
            assert key in history_keys
        elif position in persisted:
            assert key in new_key_counts or key not in history_keys
        else:
            assert key in new_key_counts  # a repeat of a new item
        if position in persisted:
            persisted_per_key[key] = persisted_per_key.get(key, 0) + 1
    for key, count in persisted_per_key.items():
        if key in new_key_counts:
            assert count <= new_key_counts[key]
