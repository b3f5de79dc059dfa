"""histcore.testing's history generators: deterministic, exact length, realistic mix."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.engine import pure as _pure
from histcore.testing import (
    DUPLICATE_SHARE,
    MAX_TEXT,
    MIN_TEXT,
    generate_history,
    pending_programs,
    reasoning_run,
)
from tests.support.examples import examples

PROPERTY = settings(max_examples=examples(100), deadline=None)


def kind(item: dict[str, Any]) -> str:
    if item.get("role") == "user":
        return "user"
    return str(item["type"])


def texts(item: dict[str, Any]) -> list[str]:
    """The free texts of an item (not ids, names or JSON arguments)."""
    if item.get("role") == "user":
        return [item["content"]]
    if item["type"] == "message":
        return [part["text"] for part in item["content"]]
    if item["type"] == "reasoning":
        return [part["text"] for part in item["summary"]]
    if item["type"] == "function_call_output":
        return [item["output"]]
    return []


def refreshed_positions(items: list[dict[str, Any]]) -> list[int]:
    """Positions whose dedupe key already occurred earlier."""
    seen: set[str] = set()
    repeats = []
    for index, key in enumerate(_pure.dedupe_keys(items)):
        if key is None:
            continue
        if key in seen:
            repeats.append(index)
        seen.add(key)
    return repeats


@pytest.fixture(scope="module")
def history() -> list[dict[str, Any]]:
    return generate_history(10_000)


# --- determinism and length -----------------------------------------------------------


@pytest.mark.parametrize("generator", [generate_history, pending_programs, reasoning_run])
def test_same_seed_same_items_other_seed_other_items(generator: Any) -> None:
    assert generator(500, seed=7) == generator(500, seed=7)
    assert generator(500, seed=7) != generator(500, seed=8)
    assert generator(500) == generator(500, seed=0)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7, 10, 99, 1000, 1001])
def test_history_has_exactly_n_items(n: int) -> None:
    assert len(generate_history(n)) == n


@pytest.mark.parametrize("n", [1, 2, 10, 50, 51, 52, 101, 1000])
def test_pending_programs_has_exactly_n_items(n: int) -> None:
    assert len(pending_programs(n)) == n


@pytest.mark.parametrize("n", [2, 3, 10, 1000])
def test_reasoning_run_has_exactly_n_items(n: int) -> None:
    assert len(reasoning_run(n)) == n


@pytest.mark.parametrize(
    ("generator", "bad", "error"),
    [
        (generate_history, -1, ValueError),
        (generate_history, 1.5, TypeError),
        (generate_history, "10", TypeError),
        (generate_history, True, TypeError),
        (pending_programs, 0, ValueError),
        (reasoning_run, 1, ValueError),
    ],
)
def test_bad_sizes_are_rejected_with_a_clear_error(
    generator: Any, bad: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match="n must be"):
        generator(bad)


@PROPERTY
@given(n=st.integers(0, 400), seed=st.integers(0, 2**32))
def test_any_size_and_seed_gives_n_items_and_answered_calls(n: int, seed: int) -> None:
    items = generate_history(n, seed)
    assert len(items) == n
    assert items == generate_history(n, seed)
    # Every call has its output right after it, so nothing is an orphan.
    repeats = set(refreshed_positions(items))
    for index, item in enumerate(items):
        if item.get("type") == "function_call" and index not in repeats:
            following = items[index + 1]
            assert following["type"] == "function_call_output"
            assert following["call_id"] == item["call_id"]
    assert _pure.drop_orphan_function_calls(items) == items


# --- the mix of items -------------------------------------------------------------------


def test_history_mixes_all_kinds_of_items(history: list[dict[str, Any]]) -> None:
    counts = Counter(kind(item) for item in history)
    assert set(counts) == {
        "user",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    }
    for name, count in counts.items():
        assert 0.08 < count / len(history) < 0.35, (name, count)
    # Calls and outputs pair up (refreshed duplicates aside).
    assert abs(counts["function_call"] - counts["function_call_output"]) < 0.02 * len(history)


def test_items_have_the_sdk_shapes(history: list[dict[str, Any]]) -> None:
    shapes = {kind(item): item for item in history}
    assert set(shapes["user"]) == {"role", "content"}
    assistant = shapes["message"]
    assert assistant["role"] == "assistant"
    assert assistant["status"] == "completed"
    assert assistant["id"].startswith("msg_")
    assert [set(part) for part in assistant["content"]] == [{"type", "text", "annotations"}]
    assert assistant["content"][0]["type"] == "output_text"
    reasoning = shapes["reasoning"]
    assert reasoning["id"].startswith("rs_")
    assert reasoning["summary"][0]["type"] == "summary_text"
    call = shapes["function_call"]
    assert set(call) == {"type", "call_id", "name", "arguments", "id"}
    assert call["call_id"].startswith("call_")
    assert call["id"].startswith("fc_")
    assert isinstance(json.loads(call["arguments"]), dict)
    output = shapes["function_call_output"]
    assert set(output) == {"type", "call_id", "output"}


def test_ids_are_unique_apart_from_refreshed_duplicates(history: list[dict[str, Any]]) -> None:
    repeats = set(refreshed_positions(history))
    ids = [
        item["id"] for index, item in enumerate(history) if "id" in item and index not in repeats
    ]
    assert len(ids) == len(set(ids))


def test_texts_are_50_to_2000_characters_some_non_ascii(history: list[dict[str, Any]]) -> None:
    lengths = [len(text) for item in history for text in texts(item)]
    assert min(lengths) >= MIN_TEXT
    assert max(lengths) <= MAX_TEXT
    assert min(lengths) < 100
    assert max(lengths) > 1500
    all_texts = [text for item in history for text in texts(item)]
    non_ascii = sum(1 for text in all_texts if not text.isascii())
    assert 0.03 < non_ascii / len(all_texts) < 0.3
    assert any("\n" in text for text in all_texts)
    assert any('"' in text for text in all_texts)


def test_about_five_percent_are_refreshed_duplicates(history: list[dict[str, Any]]) -> None:
    repeats = refreshed_positions(history)
    assert len(repeats) == round(len(history) * DUPLICATE_SHARE)
    keys = _pure.dedupe_keys(history)
    first_by_key: dict[str, dict[str, Any]] = {}
    for item, key in zip(history, keys, strict=True):
        if key is not None:
            first_by_key.setdefault(key, item)
    for index in repeats:
        item = history[index]
        assert item["type"] in ("function_call", "function_call_output", "reasoning")
        key = keys[index]
        assert key is not None
        original = first_by_key[key]
        assert item is not original
        assert item != original
    # Spread through the history, not bunched at one end.
    assert repeats[0] < len(history) // 10
    assert repeats[-1] > len(history) * 9 // 10


def test_latest_value_dedupe_keeps_every_output_after_its_call(
    history: list[dict[str, Any]],
) -> None:
    result = _pure.deduplicate_input_items_preferring_latest(history)
    assert len(result) == len(history) - len(refreshed_positions(history))
    call_positions = {
        item["call_id"]: index
        for index, item in enumerate(result)
        if item.get("type") == "function_call"
    }
    for index, item in enumerate(result):
        if item.get("type") == "function_call_output":
            assert call_positions[item["call_id"]] < index


# --- pathological shapes --------------------------------------------------------------------


def test_pending_programs_are_orphans_except_those_owning_a_hosted_item() -> None:
    items = pending_programs(1000)
    counts = Counter(item.get("type") for item in items)
    assert counts == {"program": 980, "web_search_call": 10, "function_call": 9, None: 1}
    assert not any(item.get("type") == "program_output" for item in items)
    kept = _pure.drop_orphan_function_calls(items)
    # The user message, and each program kept alive by its web search, with that search.
    assert Counter(item.get("type") for item in kept) == {
        None: 1,
        "program": 10,
        "web_search_call": 10,
    }
    live = {item["call_id"] for item in kept if item.get("type") == "program"}
    assert live == {item["caller"]["caller_id"] for item in kept if "caller" in item}


def test_reasoning_run_goes_with_its_orphan_call() -> None:
    items = reasoning_run(1000)
    assert items[0]["role"] == "user"
    assert all(item["type"] == "reasoning" for item in items[1:-1])
    assert items[-1]["type"] == "function_call"
    assert _pure.drop_orphan_function_calls(items) == [items[0]]


def test_without_refreshed_reasoning_the_deduped_history_is_an_input_the_api_accepts() -> None:
    from histcore.items import deduplicate_input_items_preferring_latest, input_problems

    damaged = generate_history(5_000)
    healthy = generate_history(5_000, refresh_reasoning=False)
    assert len(healthy) == 5_000
    # Refreshed duplicates are still there (calls and outputs), and dedupe removes them...
    deduped = deduplicate_input_items_preferring_latest(healthy)
    assert len(deduped) < len(healthy)
    # ...leaving nothing for the guard to repair, where refreshed reasoning items do.
    assert input_problems(deduped, history=healthy) == []
    assert input_problems(deduplicate_input_items_preferring_latest(damaged), history=damaged)
