"""benches/targets.py: the internal performance targets, judged on bench JSON documents."""

from __future__ import annotations

from typing import Any

import pytest
from benches import targets


def timing(seconds: float) -> dict[str, Any]:
    return {"median_s": seconds, "samples_s": [seconds], "loops": 1}


def case(
    function: str, size: int, baselines: dict[str, float] | None = None, **medians: float
) -> dict[str, Any]:
    return {
        "function": function,
        "shape": "history",
        "size": size,
        "timings": {name: timing(seconds) for name, seconds in medians.items()},
        "baselines": {name: timing(seconds) for name, seconds in (baselines or {}).items()},
    }


def test_engine_targets_are_judged_at_the_target_size_against_sdk_and_baseline() -> None:
    baselines = {("bare_loop", 100_000): 0.010}
    # A baseline sampled with the case wins over the separately measured one.
    alongside = case("dedupe_keys", 100_000, {"bare_loop": 0.005}, rust=0.015, sdk=1.0)
    verdict = targets.engine_verdict(alongside, baselines)
    assert verdict == (False, "MISS: 3.00x > 2x bare_loop")
    fast = case("dedupe_keys", 100_000, rust=0.015, sdk=1.0)
    assert targets.engine_verdict(fast, baselines) == (True, "ok (>=15x SDK, <=2x bare_loop)")
    slow = case("dedupe_keys", 100_000, rust=0.1, sdk=1.0)
    met, text = targets.engine_verdict(slow, baselines)
    assert met is False
    assert "10.0x < 15x SDK" in text
    assert "10.00x > 2x bare_loop" in text
    small = case("dedupe_keys", 1000, rust=0.1, sdk=0.1)
    assert targets.engine_verdict(small, baselines) == (None, "")
    no_sdk = case("deep_copy_items", 100_000, rust=0.1)
    assert targets.engine_verdict(no_sdk, baselines) == (None, "n/a (no SDK)")


def test_a_first_turn_verdict_names_what_the_floor_leaves() -> None:
    small = {"size": 1_000, "plain": timing(0.27), "installed": timing(0.18)}
    large = {"size": 100_000, "plain": timing(12.0), "installed": timing(1.6)}
    floor = 0.165
    # Missed, and out of reach over the floor: both said.
    met, text = targets.turn_verdict(small, 0.27 / floor)
    assert met is False
    assert text == "1.5x: MISSED (>= 5x), at most 1.6x over the floor"
    # Missed, but the floor would allow it (72x): no excuse printed.
    assert targets.turn_verdict(large, 12.0 / floor) == (False, "7.5x: MISSED (>= 12x)")
    assert targets.turn_verdict({**large, "size": 500}) == (None, "")
    lines, results = targets.turn_report("first turns:", [small, large], floor)
    assert results == [False, False]
    assert "(at most 1.6x)" in lines[1]


def test_main_reads_both_documents(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    import json

    engine_doc = {
        "format": "histcore-bench/2",
        "cases": [case("content_keys", 100_000, {"orjson_sort_keys": 0.01}, rust=0.02, sdk=1.0)],
        "baselines": [],
    }
    sdk_doc = {
        "format": "histcore-bench-openai-agents/8",
        "turns": [{"size": 10_000, "plain": timing(1.3), "installed": timing(0.1)}],
        "first_turns": [{"size": 10_000, "plain": timing(1.5), "installed": timing(0.5)}],
    }
    paths = []
    for name, doc in (("bench.json", engine_doc), ("sdk.json", sdk_doc)):
        path = tmp_path / name
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(str(path))
    assert targets.main(paths) == 0
    assert targets.main([*paths, "--check"]) == 1
    out = capsys.readouterr().out
    assert "MISS: 2.00x > 1x orjson_sort_keys" in out
    assert "13.0x: met (>= 12x)" in out
    assert "3.0x: MISSED (>= 12x)" in out
    assert "1 of 3 targets met" in out
