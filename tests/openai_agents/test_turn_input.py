"""``_prepare_turn_input_items`` installed: the SDK's model input of a turn, one copy fewer.

Differential against the SDK's own function on generated caller inputs (plain trees,
metadata keys the SDK strips, odd values, shared and cyclic containers) and runner
items (calls, outputs, orphans, reasoning), under both reasoning-id policies: the same
values with the same sharing, nothing shared with the caller's input, the same
exceptions. Then which path runs, and that rebinding what the original reaches sends
calls to it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.items as sdk_run_items
import agents.run_internal.items as sdk_items
import agents.run_internal.run_loop as sdk_run_loop
from agents import Agent
from agents.items import ItemHelpers, ReasoningItem, ToolCallItem, ToolCallOutputItem
from openai.types.responses import ResponseFunctionToolCall, ResponseReasoningItem

import histcore.openai_agents as accelerator
from histcore.openai_agents import _turn_input
from tests.openai_agents.test_equivalence import assert_same_tree, copyable_lists
from tests.support.examples import examples
from tests.support.strategies import json_values
from tests.support.strategies import sdk_items as sdk_item_strategy

AGENT: Agent[Any] = Agent(name="turn input")
METADATA = ("_agents_tool_description", "_agents_tool_title", "created_by")


@pytest.fixture(autouse=True)
def uninstalled() -> Any:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


def _call(call_id: str) -> ToolCallItem:
    raw = ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name="f", arguments="{}", id=f"fc_{call_id}"
    )
    return ToolCallItem(agent=AGENT, raw_item=raw)


def _output(call_id: str) -> ToolCallOutputItem:
    raw = {"type": "function_call_output", "call_id": call_id, "output": "ok"}
    return ToolCallOutputItem(agent=AGENT, raw_item=raw, output="ok")  # type: ignore[arg-type]


def _reasoning(number: int) -> ReasoningItem:
    raw = ResponseReasoningItem(type="reasoning", id=f"rs_{number}", summary=[])
    return ReasoningItem(agent=AGENT, raw_item=raw)


RUN_ITEMS = st.lists(
    st.one_of(
        st.sampled_from(["a", "b", "c"]).map(_call),
        st.sampled_from(["a", "b"]).map(_output),
        st.integers(0, 3).map(_reasoning),
    ),
    max_size=5,
)
CALLER_INPUTS = st.one_of(
    # SDK-shaped plain items (the engine's path), and everything else copies meet.
    st.lists(sdk_item_strategy(), max_size=6),
    st.lists(st.one_of(sdk_item_strategy(), json_values(max_leaves=4)), max_size=6),
    copyable_lists(),
    st.lists(
        st.builds(
            lambda key, item: {**item, key: "meta"},
            st.sampled_from(METADATA),
            st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
        ),
        min_size=1,
        max_size=3,
    ),
    st.text(max_size=8),
    st.tuples(st.just({"role": "user", "content": "in a tuple"})),
)


def outcome(caller_input: Any, run_items: list[Any], policy: str | None) -> tuple[Any, ...]:
    try:
        return ("ok", sdk_run_loop._prepare_turn_input_items(caller_input, run_items, policy))
    except Exception as exc:
        return ("raise", type(exc), str(exc))


def containers(value: Any) -> set[int]:
    found: set[int] = set()
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, (dict, list)) and id(current) not in found:
            found.add(id(current))
            pending.extend(current.values() if isinstance(current, dict) else current)
    return found


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(caller_input=CALLER_INPUTS, run_items=RUN_ITEMS, policy=st.sampled_from([None, "omit"]))
def test_turn_input_matches_the_sdks(
    caller_input: Any, run_items: list[Any], policy: str | None
) -> None:
    before = repr(caller_input)
    expected = outcome(caller_input, run_items, policy)
    with accelerator.installed():
        actual = outcome(caller_input, run_items, policy)
    assert repr(caller_input) == before
    assert actual[0] == expected[0]
    if expected[0] == "raise":
        assert actual[1:] == expected[1:]
        return
    assert_same_tree(expected[1], actual[1])
    # New containers, as the SDK's copies are (the caller's input may be cyclic: ids only).
    assert not containers(actual[1]) & containers(caller_input)


def test_a_plain_list_takes_one_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's items in the result are the engine's copies themselves (no second
    copy); a metadata key the SDK strips sends the call to the SDK's function."""
    copies: list[list[Any] | None] = []
    real = _turn_input.dump_compatible_copy

    def spy(value: list[Any], without: frozenset[str] = frozenset()) -> list[Any] | None:
        copies.append(real(value, without))
        return copies[-1]

    monkeypatch.setattr(_turn_input, "dump_compatible_copy", spy)
    plain = [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}, "text"]
    run_items = [_call("a"), _output("a"), _call("b")]
    with accelerator.installed():
        result = sdk_run_loop._prepare_turn_input_items(plain, run_items, None)
        marked = [{"role": "user", "content": "hi", "created_by": "someone"}]
        stripped = sdk_run_loop._prepare_turn_input_items(marked, [], None)
    first = copies[0]
    assert first is not None
    assert [id(item) for item in result[:2]] == [id(item) for item in first]
    assert result == [*plain, run_items[0].to_input_item(), _output("a").to_input_item()]
    assert copies[1] is None
    assert stripped == [{"role": "user", "content": "hi"}]


def _swapped_conversion(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(ItemHelpers, "input_to_new_input_list", classmethod(lambda cls, value: []))


PATCHES = {
    "ItemHelpers.input_to_new_input_list": _swapped_conversion,
    "items._to_dump_compatible": lambda mp: mp.setattr(
        sdk_run_items, "_to_dump_compatible", lambda value: [{"role": "user", "content": "x"}]
    ),
    "run_loop.prepare_model_input_items": lambda mp: mp.setattr(
        sdk_run_loop, "prepare_model_input_items", lambda caller, generated=(): ["swapped"]
    ),
    "items.strip_internal_input_item_metadata": lambda mp: mp.setattr(
        sdk_items, "strip_internal_input_item_metadata", lambda item: {"stripped": True}
    ),
}


@pytest.mark.parametrize("patch", list(PATCHES), ids=list(PATCHES))
def test_rebinding_what_the_original_reaches_is_honoured(patch: str) -> None:
    plain = [{"role": "user", "content": "hi"}, {"type": "message", "content": [1, 2.5]}]
    run_items = [_call("a"), _output("a"), _call("b")]

    def call() -> tuple[Any, ...]:
        return outcome(copy.deepcopy(plain), run_items, None)

    unpatched = call()
    with pytest.MonkeyPatch.context() as mp:
        PATCHES[patch](mp)
        expected = call()
    assert expected != unpatched, "the patch changes nothing: the case tests nothing"
    # Patched after install(), as a test or caller would: the SDK's function runs.
    with accelerator.installed():
        with pytest.MonkeyPatch.context() as mp:
            PATCHES[patch](mp)
            assert call() == expected
        assert call() == unpatched


def test_the_watch_follows_the_conversion_behind_the_class() -> None:
    watch = _turn_input.watch_for(sdk_run_loop._prepare_turn_input_items)
    watch.arm()
    assert watch.intact()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sdk_run_items, "_to_dump_compatible", lambda value: value)
        assert not watch.intact()
    assert watch.intact()
