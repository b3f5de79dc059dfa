"""Engine functions on generated histories: Rust engine, pure twin and the SDK side by side.

One pytest-benchmark group per function, shape and size, so the implementations (and
the baseline an operation is compared with) sit in one table. Each test first checks its result
against the pure twin (and, for dedupe and orphan pruning, the SDK's result too), then
times it. The suite definition is shared with ``histcore bench``
(``histcore.cli.bench.engine``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from histcore.cli.bench.engine import (
    BASELINES,
    DEFAULT_SIZES,
    HUGE_SIZE,
    OPERATIONS,
    QUADRATIC_REFERENCE_LIMIT,
    Operation,
    Workload,
    make_workload,
    verify,
)
from histcore.cli.bench.reference import Reference, load_reference
from histcore.engine import pure as _pure

SMOKE_SIZES = (1_000,)
# Above this size pytest-benchmark's calibration would run the slow implementations
# (the pure twin, the SDK) for minutes; a fixed three rounds is plenty there.
PEDANTIC_FROM = 100_000
IMPLEMENTATIONS = ("rust", "python", "sdk")


@dataclass(frozen=True)
class Case:
    function: str
    shape: str
    size: int
    implementation: str  # "rust", "python", "sdk" or "baseline:<name>"

    @property
    def operation(self) -> Operation:
        return OPERATIONS[self.function]

    @property
    def group(self) -> str:
        shape = "" if self.shape == "history" else f"[{self.shape}]"
        return f"{self.function}{shape}-{self.size}"


def _cases(sizes: tuple[int, ...]) -> list[Case]:
    cases = []
    for size in sizes:
        for operation in OPERATIONS.values():
            for shape in operation.shapes:
                for implementation in IMPLEMENTATIONS:
                    cases.append(Case(operation.name, shape, size, implementation))
                if shape == "history":
                    for baseline in operation.baselines[1:]:  # beyond the bare loop
                        cases.append(Case(operation.name, shape, size, f"baseline:{baseline}"))
    return cases


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def bench_sizes(config: pytest.Config) -> tuple[int, ...]:
    """Smoke runs (benchmarking disabled) stay small unless HISTCORE_BENCH_LARGE=1."""
    timing = config.getoption("benchmark_enable", False) or not config.getoption(
        "benchmark_disable", False
    )
    if not timing and not _flag("HISTCORE_BENCH_LARGE"):
        return SMOKE_SIZES
    return DEFAULT_SIZES + ((HUGE_SIZE,) if _flag("HISTCORE_BENCH_HUGE") else ())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    metafunc.parametrize(
        "case",
        [
            pytest.param(
                case,
                id=f"{case.group}-{case.implementation}",
                marks=pytest.mark.benchmark(group=case.group),
            )
            for case in _cases(bench_sizes(metafunc.config))
        ],
    )


@functools.lru_cache(maxsize=3)  # the three shapes of the size being run
def _workload(shape: str, size: int) -> Workload:
    return make_workload(shape, size)


@functools.lru_cache(maxsize=4)
def _expected(function: str, shape: str, size: int) -> Any:
    """The pure twin's result: the specification every implementation must match."""
    return OPERATIONS[function].engine(_pure, _workload(shape, size))


@functools.lru_cache(maxsize=1)
def _reference() -> Reference | None:
    return load_reference()


def _implementation(case: Case, request: pytest.FixtureRequest) -> Any:
    """The callable to time for ``case`` (skips when it cannot run here)."""
    operation, workload = case.operation, _workload(case.shape, case.size)
    if case.implementation.startswith("baseline:"):
        baseline = BASELINES[case.implementation.split(":", 1)[1]]
        return lambda: baseline(workload.items)
    if case.implementation == "sdk":
        reference, sdk_call = _reference(), operation.reference
        if sdk_call is None:
            pytest.skip(f"the SDK has no helper for {case.function}")
        if reference is None:
            pytest.skip("openai-agents is not installed")
        if case.shape in operation.quadratic_reference_shapes:
            if case.size > QUADRATIC_REFERENCE_LIMIT:
                pytest.skip(
                    f"the SDK's helper is quadratic on {case.shape}; not run above "
                    f"{QUADRATIC_REFERENCE_LIMIT} items"
                )
        sdk = reference
        return lambda: sdk_call(sdk, workload)
    engine: ModuleType = (
        _pure if case.implementation == "python" else request.getfixturevalue("rust_engine")
    )
    return lambda: operation.engine(engine, workload)


def test_engine(benchmark: Any, case: Case, request: pytest.FixtureRequest) -> None:
    call = _implementation(case, request)
    operation = case.operation
    if not case.implementation.startswith("baseline:"):
        checked = case.implementation != "sdk" or operation.reference_comparable
        if checked:
            workload = _workload(case.shape, case.size)
            expected = _expected(case.function, case.shape, case.size)
            problem = verify(operation.result_kind, call(), expected, workload.items)
            assert problem is None, f"{case.implementation} disagrees with the pure twin: {problem}"
    if case.size >= PEDANTIC_FROM:
        benchmark.pedantic(call, rounds=3, iterations=1, warmup_rounds=0)
    else:
        benchmark(call)
