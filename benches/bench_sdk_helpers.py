"""The SDK helpers ``histcore.openai_agents.install()`` replaces, each against the SDK's own.

One pytest-benchmark group per helper and size (``sdk`` and ``histcore`` side by side),
on a generated history as the SDK reads it back from its store (plain JSON values). Each
replacement is built exactly as ``install()`` builds it, its rebinding watch armed, but
not bound into the SDK's modules, so the SDK's own helpers stay the SDK's. Before either
is timed, the replacement's result must equal the SDK's.

``pytest benches/bench_sdk_helpers.py`` runs each once at 10^3 items as a smoke test
(``HISTCORE_BENCH_LARGE=1`` adds 10^4 and 10^5); ``--benchmark-enable`` times 10^4 and
10^5 items, or the sizes ``HISTCORE_BENCH_SIZES`` lists (``HISTCORE_BENCH_SIZES=10`` for
the smallest histories, where a call's fixed cost decides). Moved here from
``histcore bench --openai-agents``, which reports whole turns.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("agents", reason="the SDK helpers need openai-agents")

from agents.run_internal import items as sdk_items
from agents.run_internal import run_loop as sdk_run_loop
from agents.run_internal import session_persistence as sdk_session
from agents.util import _json as sdk_json

from histcore.openai_agents import _patches, _table
from histcore.testing import generate_history

SMOKE_SIZES = (1_000,)
SIZES = (10_000, 100_000)
# Above this size pytest-benchmark's calibration would run the SDK's helpers for long.
PEDANTIC_FROM = 100_000

Case = tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], bool]]


def equal(a: Any, b: Any) -> bool:
    return bool(a == b)


def _same_objects(a: Any, b: Any) -> bool:
    return isinstance(a, list) and isinstance(b, list) and list(map(id, a)) == list(map(id, b))


def _as_installed(group: str) -> dict[str, Any]:
    """The replacements of one group exactly as ``install()`` builds them, each with its
    rebinding watch armed (so every call pays the check it pays when installed), but not
    bound into the SDK's modules: the SDK's own helpers stay the SDK's."""
    (found,) = (candidate for candidate in _table.GROUPS if candidate.name == group)
    replacements: dict[str, Any] = {}
    for planned in _patches.plan(found, _patches.Context()):
        planned.watch.arm()
        replacements[planned.target.attr] = planned.replacement
    return replacements


def helper_cases(history: list[Any]) -> list[Case]:
    """(name, SDK call, histcore call, equal) for every replaced helper."""
    indexes = set(range(len(history)))
    dedupe = _as_installed("dedupe")
    key = dedupe["_dedupe_key"]
    first_wins = dedupe["deduplicate_input_items"]
    latest = dedupe["deduplicate_input_items_preferring_latest"]
    orphans = _as_installed("orphans")["drop_orphan_function_calls"]
    fingerprint = _as_installed("fingerprint")["fingerprint_input_item"]
    frequency = _as_installed("session_keys")["_build_frequency_map"]
    to_dump = _as_installed("to_dump_compatible")["_to_dump_compatible"]
    copier = _as_installed("callback_copies")["copy"]
    normalize = _as_installed("normalize")["normalize_input_items_for_api"]
    turn_input = _as_installed("turn_input")["_prepare_turn_input_items"]
    return [
        (
            "_dedupe_key (each item)",
            lambda: list(map(sdk_items._dedupe_key, history)),
            lambda: list(map(key, history)),
            equal,
        ),
        (
            "deduplicate_input_items",
            lambda: sdk_items.deduplicate_input_items(history),
            lambda: first_wins(history),
            _same_objects,
        ),
        (
            "deduplicate_input_items_preferring_latest",
            lambda: sdk_items.deduplicate_input_items_preferring_latest(history),
            lambda: latest(history),
            _same_objects,
        ),
        (
            "drop_orphan_function_calls",
            lambda: sdk_items.drop_orphan_function_calls(history),
            lambda: orphans(history),
            _same_objects,
        ),
        (
            "drop_orphan_function_calls (pruning_indexes)",
            lambda: sdk_items.drop_orphan_function_calls(history, pruning_indexes=indexes),
            lambda: orphans(history, pruning_indexes=indexes),
            _same_objects,
        ),
        (
            "fingerprint_input_item (each item)",
            lambda: list(map(sdk_items.fingerprint_input_item, history)),
            lambda: list(map(fingerprint, history)),
            equal,
        ),
        (
            "_build_frequency_map",
            lambda: sdk_session._build_frequency_map(history),
            lambda: frequency(history),
            equal,
        ),
        (
            "_to_dump_compatible",
            lambda: sdk_json._to_dump_compatible(history),
            lambda: to_dump(history),
            equal,
        ),
        ("copy.deepcopy", lambda: copy.deepcopy(history), lambda: copier.deepcopy(history), equal),
        (
            "normalize_input_items_for_api",
            lambda: sdk_items.normalize_input_items_for_api(history),
            lambda: normalize(history),
            equal,
        ),
        (
            "_prepare_turn_input_items (history)",
            lambda: sdk_run_loop._prepare_turn_input_items(history, [], None),
            lambda: turn_input(history, [], None),
            equal,
        ),
    ]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _sizes(config: pytest.Config) -> tuple[int, ...]:
    listed = os.environ.get("HISTCORE_BENCH_SIZES", "").strip()
    if listed:
        return tuple(int(size) for size in listed.split(","))
    timing = config.getoption("benchmark_enable", False) or not config.getoption(
        "benchmark_disable", False
    )
    if timing:
        return SIZES
    return SMOKE_SIZES + (SIZES if _flag("HISTCORE_BENCH_LARGE") else ())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "helper" not in metafunc.fixturenames:
        return
    names = [name for name, *_ in helper_cases([])]  # no history needed to learn them
    params = []
    for size in _sizes(metafunc.config):
        for name in names:
            group = f"{name}-{size}"
            for implementation in ("sdk", "histcore"):
                params.append(
                    pytest.param(
                        (name, size, implementation),
                        id=f"{group}-{implementation}",
                        marks=pytest.mark.benchmark(group=group),
                    )
                )
    metafunc.parametrize("helper", params)


@functools.lru_cache(maxsize=1)
def _cases(size: int) -> dict[str, Case]:
    # As the SDK reads it back from its store: plain JSON values.
    history = json.loads(json.dumps(generate_history(size, seed=1)))
    return {case[0]: case for case in helper_cases(history)}


def test_helper(benchmark: Any, helper: tuple[str, int, str]) -> None:
    name, size, implementation = helper
    _, sdk_call, histcore_call, same = _cases(size)[name]
    assert same(sdk_call(), histcore_call()), f"{name} differs from the SDK's at {size} items"
    call = sdk_call if implementation == "sdk" else histcore_call
    if size >= PEDANTIC_FROM:
        benchmark.pedantic(call, rounds=3, iterations=1, warmup_rounds=0)
    else:
        benchmark(call)
