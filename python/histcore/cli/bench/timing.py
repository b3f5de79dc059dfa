"""Wall-clock timing with ``time.perf_counter``: a few samples, the median reported."""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Timing", "measure", "measure_interleaved", "timed_call"]

K = TypeVar("K")

# A sample should last at least this long, so timer resolution and per-call noise
# stay small for fast calls (like timeit's autorange).
MIN_SAMPLE_SECONDS = 0.02
# Once the first call takes this long, it already is a representative sample.
SLOW_CALL_SECONDS = 0.25
# Samples of one implementation stop after this much time, so slow reference helpers
# at large sizes cannot stretch a run to hours (at least one sample is always taken).
BUDGET_SECONDS = 8.0


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median over ``samples``, each averaged over ``loops`` calls."""

    median: float
    samples: tuple[float, ...]
    loops: int

    def to_json(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": min(self.samples),
            "samples_s": list(self.samples),
            "loops": self.loops,
        }


def timed_call(call: Callable[[], object]) -> tuple[object, float]:
    """Call once; return the result and the seconds it took."""
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def _sample(call: Callable[[], object], loops: int, before: Callable[[], None] | None) -> float:
    # Like real use (and timeit), each result is freed when the next call replaces it;
    # the last one is freed after the clock stops, so with one loop freeing a large
    # result (a deep copy of 10^6 items) is not charged to the call.
    result: object = None
    if before is not None:
        # Each call on fresh input, prepared outside the clock.
        elapsed = 0.0
        for _ in range(loops):
            result = None
            before()
            start = time.perf_counter()
            result = call()
            elapsed += time.perf_counter() - start
        del result
        return elapsed / loops
    start = time.perf_counter()
    for _ in range(loops):
        result = call()
    elapsed = time.perf_counter() - start
    del result
    return elapsed / loops


def measure(
    call: Callable[[], object],
    repeat: int,
    first_call_seconds: float,
    before: Callable[[], None] | None = None,
) -> Timing:
    """Time ``call`` (already called once, taking ``first_call_seconds``)."""
    calls = {"call": call}
    return measure_interleaved(calls, {"call": first_call_seconds}, repeat, before)["call"]


def measure_interleaved(
    calls: Mapping[K, Callable[[], object]],
    first_call_seconds: Mapping[K, float],
    repeat: int,
    before: Callable[[], None] | None = None,
) -> dict[K, Timing]:
    """Time several calls (each already called once) in rounds, one sample each per round.

    Each gets up to ``repeat`` samples, fewer once its samples exceed the budget. The
    collector is paused during samples, as timeit does, so a collection triggered by
    the large generated histories does not land in one implementation's samples.

    With ``before``, it runs (untimed) before every call, to give it fresh input; the
    first calls then only size the samples (they ran on input other calls had seen).
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    samples: dict[K, list[float]] = {}
    loops: dict[K, int] = {}
    spent: dict[K, float] = {}
    for key in calls:
        first = first_call_seconds[key]
        slow = first >= SLOW_CALL_SECONDS
        samples[key] = [first] if slow and before is None else []
        loops[key] = 1 if slow else max(1, math.ceil(MIN_SAMPLE_SECONDS / max(first, 1e-7)))
        spent[key] = first if slow and before is None else 0.0

    def wanted(key: K) -> bool:
        taken = len(samples[key])
        return taken < repeat and (taken == 0 or spent[key] < BUDGET_SECONDS)

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while any(wanted(key) for key in calls):
            for key, call in calls.items():
                if wanted(key):
                    seconds = _sample(call, loops[key], before)
                    samples[key].append(seconds)
                    spent[key] += seconds * loops[key]
    finally:
        if gc_was_enabled:
            gc.enable()
    return {
        key: Timing(statistics.median(samples[key]), tuple(samples[key]), loops[key])
        for key in calls
    }
