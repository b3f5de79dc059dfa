"""The replaced helpers of ``histcore bench --openai-agents``, timed against the SDK's.

Each helper runs on the same history as the SDK reads it back from its store, once as
the SDK's own function and once as ``install()`` builds its replacement (rebinding
watch armed, not bound into the SDK's modules); the results must be equal before
either is timed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from agents.run_internal import items as sdk_items
from agents.run_internal import run_loop as sdk_run_loop
from agents.run_internal import session_persistence as sdk_session
from agents.util import _json as sdk_json

from histcore.cli.bench.generate import generate_history
from histcore.cli.bench.timing import Timing, measure_interleaved, timed_call
from histcore.cli.bench.units import size_label
from histcore.openai_agents import _patches

__all__ = ["CorrectnessError", "HelperTiming", "helper_cases", "time_helpers"]


class CorrectnessError(Exception):
    """The accelerated SDK did something the plain SDK did not."""


@dataclass(frozen=True)
class HelperTiming:
    name: str
    size: int
    sdk: Timing
    histcore: Timing

    @property
    def speedup(self) -> float:
        return self.sdk.median / self.histcore.median


def equal(a: Any, b: Any) -> bool:
    return bool(a == b)


def _same_objects(a: Any, b: Any) -> bool:
    return isinstance(a, list) and isinstance(b, list) and list(map(id, a)) == list(map(id, b))


def _as_installed(group: str) -> dict[str, Any]:
    """The replacements of one group exactly as ``install()`` builds them, each with its
    rebinding watch armed (so every call pays the check it pays when installed), but not
    bound into the SDK's modules: the SDK's own helpers stay the SDK's."""
    (found,) = (candidate for candidate in _patches.GROUPS if candidate.name == group)
    replacements: dict[str, Any] = {}
    for planned in _patches.plan(found):
        planned.watch.arm()
        replacements[planned.target.attr] = planned.replacement
    return replacements


def helper_cases(
    history: list[Any],
) -> list[tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], bool]]]:
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


def time_helpers(size: int, repeat: int, progress: TextIO) -> list[HelperTiming]:
    # As the SDK reads it back from its store: plain JSON values.
    history = json.loads(json.dumps(generate_history(size, seed=1)))
    timings: list[HelperTiming] = []
    for name, sdk_call, histcore_call, equal in helper_cases(history):
        progress.write(f"  {name} ... ")
        progress.flush()
        expected, sdk_first = timed_call(sdk_call)
        actual, fast_first = timed_call(histcore_call)
        if not equal(expected, actual):
            raise CorrectnessError(f"{name} at {size_label(size)} items differs from the SDK's")
        del expected, actual
        measured = measure_interleaved(
            {"sdk": sdk_call, "histcore": histcore_call},
            {"sdk": sdk_first, "histcore": fast_first},
            repeat,
        )
        timing = HelperTiming(name, size, measured["sdk"], measured["histcore"])
        timings.append(timing)
        progress.write(f"x{timing.speedup:.1f}\n")
    return timings
