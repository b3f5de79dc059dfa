"""Golden vectors (tests/vectors/*.json), checked case by case on every engine.

The same files are read by the Rust crate's ``cargo test``; their expected values were
derived from docs/design.md by hand, so they pin the contract rather than either engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from histcore.items import LOST_OUTPUT_TEXT
from tests.support.strategies import positions

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
VECTOR_FILES = (
    "canonical.json",
    "dedupe_key.json",
    "dedupe.json",
    "orphans.json",
    "classify.json",
    "long_integers.json",
    "input_rules.json",
)


def _cases(file_name: str) -> list[Any]:
    cases = json.loads((VECTORS / file_name).read_text(encoding="utf-8"))
    return [pytest.param(case, id=case["name"]) for case in cases]


def test_vector_files_are_well_formed() -> None:
    on_disk = sorted(path.name for path in VECTORS.glob("*.json"))
    assert on_disk == sorted(VECTOR_FILES), "every vector file must be checked here"
    for file_name in VECTOR_FILES:
        cases = json.loads((VECTORS / file_name).read_text(encoding="utf-8"))
        names = [case["name"] for case in cases]
        assert cases and len(names) == len(set(names)), f"{file_name}: duplicate case names"  # noqa: PT018


@pytest.mark.parametrize("case", _cases("canonical.json"))
def test_canonical(engine: ModuleType, case: dict[str, Any]) -> None:
    expected = case["canonical"].encode("utf-8")
    assert engine.canonical_json(case["item"]) == expected
    assert engine.content_key(case["item"]).hex() == case["content_key"]
    assert [key.hex() for key in engine.content_keys([case["item"]])] == [case["content_key"]]


@pytest.mark.parametrize("case", _cases("dedupe_key.json"))
def test_dedupe_key(engine: ModuleType, case: dict[str, Any]) -> None:
    assert engine.dedupe_key(case["item"]) == case["key"]
    assert engine.dedupe_keys([case["item"]]) == [case["key"]]


def _same_objects(result: list[Any], items: list[Any], expected: list[int]) -> None:
    assert len(result) == len(expected), positions(result, items)
    for got, index in zip(result, expected, strict=True):
        assert got is items[index], (positions(result, items), expected)


@pytest.mark.parametrize("case", _cases("dedupe.json"))
def test_dedupe(engine: ModuleType, case: dict[str, Any]) -> None:
    items = case["items"]
    _same_objects(engine.deduplicate_input_items(items), items, case["first_wins"])
    _same_objects(engine.deduplicate_input_items_preferring_latest(items), items, case["latest"])


@pytest.mark.parametrize("case", _cases("orphans.json"))
def test_orphans(engine: ModuleType, case: dict[str, Any]) -> None:
    items = case["items"]
    result = engine.drop_orphan_function_calls(
        items,
        case["pruning_indexes"],
        output_pruning_indexes=case["output_pruning_indexes"],
    )
    _same_objects(result, items, case["kept"])


def _resolve(ref: dict[str, Any], history: list[Any], new_items: list[Any]) -> Any:
    if "history" in ref:
        return history[ref["history"]]
    if "new" in ref:
        return new_items[ref["new"]]
    return ref["value"]


@pytest.mark.parametrize("case", _cases("classify.json"))
def test_classify(engine: ModuleType, case: dict[str, Any]) -> None:
    history, new_items = case["history"], case["new_items"]
    combined = [_resolve(ref, history, new_items) for ref in case["combined"]]
    result = engine.classify_callback_output(history, new_items, combined)
    assert result == (case["history_positions"], case["persisted_positions"])


@pytest.mark.parametrize("case", _cases("long_integers.json"))
def test_long_integer_candidates(engine: ModuleType, case: dict[str, Any]) -> None:
    text = case["text"]
    expected = [0] if case["long"] else []
    assert engine.long_integer_candidates([text]) == expected
    assert engine.long_integer_candidates([text.encode("utf-8")]) == expected


@pytest.mark.parametrize("case", _cases("input_rules.json"))
def test_input_rules(engine: ModuleType, case: dict[str, Any]) -> None:
    items, history = case["items"], case["history"]
    found = engine.input_problems(items, history=history)
    assert [list(problem) for problem in found] == case["problems"]
    _same_objects(engine.repair_input(items, history=history), items, case["kept"])
    # "synthesized": repair_input(dangling="synthesize"), a {"lost": i} entry standing
    # for the output synthesized for the call at input position i.
    synthesized = engine.repair_input(items, history=history, dangling="synthesize")
    assert len(synthesized) == len(case["synthesized"]), positions(synthesized, items)
    for got, entry in zip(synthesized, case["synthesized"], strict=True):
        if isinstance(entry, int):
            assert got is items[entry], (positions(synthesized, items), case["synthesized"])
        else:
            call = items[entry["lost"]]
            assert got == {
                "type": call["type"] + "_output",
                "call_id": call["call_id"],
                "output": LOST_OUTPUT_TEXT,
            }
