"""The bench's sampling: with ``before``, every timed call gets fresh input."""

from __future__ import annotations

import time
from typing import Any

from histcore.cli.bench import timing
from histcore.cli.bench.engine import make_workload


def test_each_call_is_preceded_by_its_own_preparation() -> None:
    log: list[str] = []
    fresh: list[bool] = []

    def before() -> None:
        log.append("before")
        fresh.append(True)

    def call() -> None:
        log.append("call")
        assert fresh.pop(), "a call ran on input an earlier call had seen"

    timings = timing.measure_interleaved({"a": call, "b": call}, {"a": 0.5, "b": 0.5}, 3, before)
    # Slow first calls are not reused as samples: they ran on input already seen.
    assert [len(t.samples) for t in timings.values()] == [3, 3]
    assert log == ["before", "call"] * 6


def test_the_preparation_is_not_timed() -> None:
    def before() -> None:
        time.sleep(0.05)

    result = timing.measure(lambda: None, 2, 0.3, before)
    assert max(result.samples) < 0.01


def test_fast_calls_loop_each_on_fresh_input() -> None:
    seen: list[int] = []
    counter = iter(range(10**6))
    current: list[int] = []

    def before() -> None:
        current[:] = [next(counter)]

    def call() -> None:
        seen.append(current[0])

    result = timing.measure(call, 2, 1e-3, before)
    assert result.loops == 20
    assert seen == sorted(set(seen))  # never the same input twice
    assert len(seen) == 2 * 20


def test_a_workload_refresh_gives_equal_new_items() -> None:
    workload = make_workload("history", 50)
    old: list[Any] = workload.items
    callback = workload.callback
    workload.refresh()
    assert workload.items == old
    assert all(new is not item for new, item in zip(workload.items, old, strict=True))
    # The callback input is rebuilt from the new items, not kept from the old ones.
    assert workload.callback is not callback
    assert workload.callback.history == callback.history
