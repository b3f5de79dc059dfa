"""histcore against the OpenAI Agents SDK's own helpers, our behavioural reference.

Inputs are SDK-shaped histories: dicts whose ``type`` comes from the SDK's item
vocabulary, with the ``"__fake_id__"`` placeholder, program-issued items, shell call
statuses and anonymous tool searches. Known, intended differences are accounted for
explicitly:

* with ``pruning_indexes``, histcore never drops a reasoning item outside that set
  (the SDK drops the reasoning run in front of any dropped call);
* histcore reads pydantic items through ``model_dump`` everywhere, while the SDK's
  orphan pruning only looks at dicts, so models are compared for dedupe only;
* the SDK raises TypeError on unhashable ``type``/``call_id`` values, which histcore
  treats as plain data; such values are not generated here.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.examples import examples
from tests.support.strategies import (
    FunctionCallModel,
    FunctionCallOutputModel,
    MessageModel,
    ReasoningModel,
    call,
    positions,
    reasoning,
    sdk_histories,
    sdk_items,
)

sdk = pytest.importorskip(
    "agents.run_internal.items",
    reason="openai-agents is not installed (pip install histcore[openai-agents])",
)

PROPERTY = settings(max_examples=examples(200), deadline=None)

models = st.sampled_from(["c0", "c1"]).flatmap(
    lambda call_id: st.sampled_from(
        [
            FunctionCallModel(call_id=call_id),
            FunctionCallModel(type="function_call", call_id=call_id, id="i0"),
            FunctionCallOutputModel(type="function_call_output", call_id=call_id),
            MessageModel(role="assistant", content="x", id="i0", type="message"),
            ReasoningModel(type="reasoning", id="i1"),
        ]
    )
)
histories_with_models = st.lists(st.one_of(sdk_items(), models), max_size=14)


def ids(items: list[Any]) -> list[int]:
    return [id(item) for item in items]


@PROPERTY
@given(items=histories_with_models)
def test_dedupe_keys_match(engine: ModuleType, items: list[Any]) -> None:
    assert engine.dedupe_keys(items) == [sdk._dedupe_key(item) for item in items]


@PROPERTY
@given(items=histories_with_models)
def test_first_wins_dedupe_matches(engine: ModuleType, items: list[Any]) -> None:
    assert ids(engine.deduplicate_input_items(items)) == ids(sdk.deduplicate_input_items(items))


@PROPERTY
@given(items=histories_with_models)
def test_latest_value_dedupe_matches(engine: ModuleType, items: list[Any]) -> None:
    ours = engine.deduplicate_input_items_preferring_latest(items)
    theirs = sdk.deduplicate_input_items_preferring_latest(items)
    assert ids(ours) == ids(theirs)


def _index_sets(size: int) -> st.SearchStrategy[set[int] | None]:
    return st.none() | st.sets(st.integers(-1, size), max_size=size + 1)


@PROPERTY
@given(items=sdk_histories(max_size=18), data=st.data())
def test_orphan_pruning_matches(engine: ModuleType, items: list[Any], data: st.DataObject) -> None:
    output_prunable = data.draw(_index_sets(len(items)), label="output_pruning_indexes")
    ours = engine.drop_orphan_function_calls(items, output_pruning_indexes=output_prunable)
    theirs = sdk.drop_orphan_function_calls(items, output_pruning_indexes=output_prunable)
    assert ids(ours) == ids(theirs)


@PROPERTY
@given(items=sdk_histories(max_size=18), data=st.data())
def test_orphan_pruning_with_pruning_indexes(
    engine: ModuleType, items: list[Any], data: st.DataObject
) -> None:
    prunable = data.draw(st.sets(st.integers(-1, len(items)), max_size=len(items) + 1))
    output_prunable = data.draw(_index_sets(len(items)), label="output_pruning_indexes")
    ours = positions(
        engine.drop_orphan_function_calls(items, prunable, output_pruning_indexes=output_prunable),
        items,
    )
    theirs = positions(
        sdk.drop_orphan_function_calls(
            items, pruning_indexes=prunable, output_pruning_indexes=output_prunable
        ),
        items,
    )
    # The only difference: reasoning outside pruning_indexes, which histcore keeps.
    extra = sorted(set(ours) - set(theirs))
    assert set(theirs) <= set(ours)
    for index in extra:
        assert items[index].get("type") == "reasoning" and index not in prunable, items[index]  # noqa: PT018
    # With every reasoning position prunable the two agree exactly.
    everything = prunable | {i for i, x in enumerate(items) if x.get("type") == "reasoning"}
    assert ids(engine.drop_orphan_function_calls(items, everything)) == ids(
        sdk.drop_orphan_function_calls(items, pruning_indexes=everything)
    )


def test_reasoning_outside_pruning_indexes_is_the_intended_difference(
    engine: ModuleType,
) -> None:
    items = [reasoning("rs_1"), call("c1")]
    assert engine.drop_orphan_function_calls(items, {1}) == [items[0]]
    assert sdk.drop_orphan_function_calls(items, pruning_indexes={1}) == []


# --- content equality ----------------------------------------------------------------

# Few distinct scalars and keys, so generated pairs are often equal or nearly equal.
_scalars = st.sampled_from([0, 1, 1.0, -0.0, 0.0, True, False, None, "a", "é", "1", 2**70, 1e16])
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b", "é", "_agents_tool_title"]), inner, max_size=2)
    ),
    max_leaves=5,
)
_items = st.dictionaries(
    st.sampled_from(["type", "content", "é", "_agents_tool_title", "_agents_tool_description"]),
    _values,
    max_size=3,
)


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def _session_key(item: dict[str, Any]) -> str:
    """The SDK's stored-item comparison: sorted json.dumps without its metadata keys."""
    stripped = {k: v for k, v in item.items() if not k.startswith("_agents_tool_")}
    return json.dumps(stripped, sort_keys=True)


@PROPERTY
@given(first=_items, second=_items)
def test_content_equality_matches_the_sdk_fingerprint(
    engine: ModuleType, first: dict[str, Any], second: dict[str, Any]
) -> None:
    for other in (second, _reordered(first)):
        same_content = engine.canonical_json(first) == engine.canonical_json(other)
        assert same_content == (
            sdk.fingerprint_input_item(first) == sdk.fingerprint_input_item(other)
        )
        assert same_content == (_session_key(first) == _session_key(other))
