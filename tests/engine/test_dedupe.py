"""Dedupe keys, first-wins dedupe and latest-value dedupe with call anchoring."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from hypothesis import given, settings

from tests.support.examples import examples
from tests.support.strategies import (
    CALL_TO_OUTPUT,
    FunctionCallModel,
    FunctionCallOutputModel,
    MessageModel,
    ReasoningModel,
    assistant,
    call,
    call_output_sequences,
    histories,
    output,
    positions,
    reasoning,
    user,
)

PROPERTY = settings(max_examples=examples(150), deadline=None)


# --- docs/design.md examples --------------------------------------------------------------


def test_repeated_call_keeps_earliest_position_with_latest_value(engine: ModuleType) -> None:
    first, out, second = call("c1", "v1"), output("c1"), call("c1", "v2")
    result = engine.deduplicate_input_items_preferring_latest([first, out, second])
    assert result == [second, out]
    assert result[0] is second
    assert result[1] is out


def test_stale_output_before_call_moves_to_fresh_position(engine: ModuleType) -> None:
    stale, the_call, fresh = output("c1", "stale"), call("c1"), output("c1", "fresh")
    result = engine.deduplicate_input_items_preferring_latest([stale, the_call, fresh])
    assert positions(result, [stale, the_call, fresh]) == [1, 2]


def test_refreshed_output_stays_after_message(engine: ModuleType) -> None:
    old, message, new = output("c1", "old"), user("next"), output("c1", "new")
    result = engine.deduplicate_input_items_preferring_latest([old, message, new])
    assert positions(result, [old, message, new]) == [1, 2]


def test_no_duplicates_gives_equal_list_of_same_objects(engine: ModuleType) -> None:
    items = [user("a"), reasoning("rs_1"), call("c1"), output("c1"), assistant("b")]
    for dedupe in (
        engine.deduplicate_input_items,
        engine.deduplicate_input_items_preferring_latest,
    ):
        result = dedupe(items)
        assert result == items
        assert result is not items
        assert all(got is item for got, item in zip(result, items, strict=True))


def test_first_wins_keeps_first_value_and_position(engine: ModuleType) -> None:
    items = [output("c1", "old"), user("u"), output("c1", "new"), call("c1"), call("c1", "v2")]
    assert positions(engine.deduplicate_input_items(items), items) == [0, 1, 3]


# --- key rules beyond the vectors ----------------------------------------------------


def test_every_call_and_output_type_keys_by_call_id(engine: ModuleType) -> None:
    for kind in [*CALL_TO_OUTPUT, *CALL_TO_OUTPUT.values()]:
        item = {"type": kind, "id": "x", "call_id": "c9"}
        assert engine.dedupe_key(item) == f"call_id:{kind}:c9"


def test_str_subclasses_key_by_their_characters(engine: ModuleType) -> None:
    class Tag(str):
        def __str__(self) -> str:
            return "not the characters"

    item = {"type": Tag("function_call"), "call_id": Tag("c1")}
    assert engine.dedupe_key(item) == "call_id:function_call:c1"
    assert engine.dedupe_key({"type": Tag("message"), "id": "m"}) is None
    assert engine.dedupe_key({"type": "reasoning", "id": Tag("__fake_id__")}) is None


def test_dict_subclass_is_a_dict(engine: ModuleType) -> None:
    class Item(dict[str, Any]):
        pass

    assert engine.dedupe_key(Item(type="function_call", call_id="c1")) == (
        "call_id:function_call:c1"
    )


def test_junk_items_are_unkeyed_and_pass_through(engine: ModuleType) -> None:
    junk: list[Any] = [None, 1, "x", [call("c1")], ("a",), 2.5, object(), b"bytes", {1, 2}]
    assert engine.dedupe_keys(junk) == [None] * len(junk)
    items = [*junk, *junk]
    for dedupe in (
        engine.deduplicate_input_items,
        engine.deduplicate_input_items_preferring_latest,
    ):
        result = dedupe(items)
        assert len(result) == len(items)
        assert all(got is item for got, item in zip(result, items, strict=True))


# --- pydantic models -----------------------------------------------------------------


def test_models_are_read_with_exclude_unset(engine: ModuleType) -> None:
    # A defaulted field that was never set is not part of the item, so a model built
    # without an explicit type has no type: its key falls back to the bare call_id.
    implicit = FunctionCallModel(call_id="c1")
    explicit = FunctionCallModel(type="function_call", call_id="c1")
    assert engine.dedupe_key(implicit) == "call_id:None:c1"
    assert engine.dedupe_key(explicit) == "call_id:function_call:c1"
    assert engine.dedupe_key(FunctionCallModel(call_id="c1", id="fc_1")) == "id:None:fc_1"
    assert engine.dedupe_key(MessageModel(role="user", content="hi", id="m")) is None
    assert engine.dedupe_key(ReasoningModel(type="reasoning", id="rs_1")) == "id:reasoning:rs_1"


def test_models_and_dicts_with_one_key_collapse(engine: ModuleType) -> None:
    model = FunctionCallModel(type="function_call", call_id="c1", arguments="v2")
    out = FunctionCallOutputModel(type="function_call_output", call_id="c1")
    items: list[Any] = [call("c1", "v1"), out, model]
    assert positions(engine.deduplicate_input_items(items), items) == [0, 1]
    result = engine.deduplicate_input_items_preferring_latest(items)
    assert result[0] is model
    assert result[1] is out
    assert len(result) == 2


def test_model_dump_is_called_with_exclude_unset(engine: ModuleType) -> None:
    calls: list[dict[str, Any]] = []

    class Recorder:
        def model_dump(self, **kwargs: Any) -> dict[str, Any]:
            calls.append(kwargs)
            return {"type": "reasoning", "id": "rs_9"}

    assert engine.dedupe_key(Recorder()) == "id:reasoning:rs_9"
    assert calls
    assert all(kwargs.get("exclude_unset") is True for kwargs in calls)


def test_model_dump_that_is_not_a_dict_is_unkeyed(engine: ModuleType) -> None:
    class ListDump:
        def model_dump(self, **kwargs: Any) -> Any:
            return [{"type": "reasoning", "id": "rs_1"}]

    assert engine.dedupe_key(ListDump()) is None


# --- properties ----------------------------------------------------------------------


def _key_positions(keys: list[str | None]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        if key is not None:
            found.setdefault(key, []).append(index)
    return found


@PROPERTY
@given(items=histories())
def test_first_wins_keeps_each_first_occurrence(engine: ModuleType, items: list[Any]) -> None:
    before = repr(items)
    keys = engine.dedupe_keys(items)
    assert keys == [engine.dedupe_key(item) for item in items]
    first = {found[0] for found in _key_positions(keys).values()}
    expected = [i for i, key in enumerate(keys) if key is None or i in first]
    result = engine.deduplicate_input_items(items)
    assert [id(x) for x in result] == [id(items[i]) for i in expected]
    assert repr(items) == before


@PROPERTY
@given(items=histories())
def test_latest_value_appears_exactly_once_per_key(engine: ModuleType, items: list[Any]) -> None:
    before = repr(items)
    keys = engine.dedupe_keys(items)
    result = engine.deduplicate_input_items_preferring_latest(items)
    result_keys = engine.dedupe_keys(result)
    by_key = _key_positions(keys)
    assert sorted(k for k in result_keys if k is not None) == sorted(by_key)
    for key, found in by_key.items():
        (value,) = [x for x, k in zip(result, result_keys, strict=True) if k == key]
        assert value is items[found[-1]]
    # Unkeyed items all stay, in their original order.
    unkeyed = [id(x) for x, k in zip(items, keys, strict=True) if k is None]
    assert [id(x) for x, k in zip(result, result_keys, strict=True) if k is None] == unkeyed
    assert repr(items) == before


@PROPERTY
@given(items=call_output_sequences())
def test_anchoring_keeps_outputs_after_their_calls(engine: ModuleType, items: list[Any]) -> None:
    def first_call(call_id: str, kind: str, within: list[Any]) -> int | None:
        return next(
            (
                i
                for i, x in enumerate(within)
                if x.get("type") == kind and x.get("call_id") == call_id
            ),
            None,
        )

    def last_output(call_id: str, kind: str, within: list[Any]) -> int | None:
        found = [
            i
            for i, x in enumerate(within)
            if x.get("type") == CALL_TO_OUTPUT[kind] and x.get("call_id") == call_id
        ]
        return found[-1] if found else None

    # DESIGN's invariant, checked per call: the result keeps each call at its first
    # occurrence and each output at its last, so their order only depends on those two.
    pairs = {(x["call_id"], x["type"]) for x in items if x.get("type") in CALL_TO_OUTPUT}
    result = engine.deduplicate_input_items_preferring_latest(items)
    for call_id, kind in pairs:
        start, end = first_call(call_id, kind, items), last_output(call_id, kind, items)
        if start is None or end is None or start > end:
            continue
        start, end = first_call(call_id, kind, result), last_output(call_id, kind, result)
        assert start is not None and end is not None and start < end, (  # noqa: PT018
            call_id,
            kind,
            positions(result, items),
        )
