"""The engine benchmark suite: what is timed, on which histories, and against what.

Each operation runs on the Rust engine, on the pure twin and (when ``openai-agents``
is installed) on the SDK's equivalent helper, if it has one. Before an implementation is timed its
result is checked against the pure twin, the executable specification: list results
must hold the very same objects, keys and positions must be equal, deep copies must
be equal and independent. The SDK's dedupe and orphan-pruning results must also equal
the pure twin's.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, Protocol

import orjson

from histcore.cli.bench.reference import Reference, bare_loop, load_reference, orjson_sort_keys
from histcore.cli.bench.timing import Timing, measure, measure_interleaved, timed_call
from histcore.engine import pure as _pure
from histcore.testing_histories import generate_history, pending_programs, reasoning_run

__all__ = [
    "BASELINES",
    "DEFAULT_SIZES",
    "HUGE_SIZE",
    "OPERATIONS",
    "QUADRATIC_REFERENCE_LIMIT",
    "SHAPES",
    "Backend",
    "BaselineResult",
    "CaseResult",
    "CorrectnessError",
    "Implementation",
    "Operation",
    "Progress",
    "Settings",
    "SuiteResult",
    "Workload",
    "load_rust_engine",
    "make_workload",
    "run_suite",
    "verify",
]

Items = list[Any]
Backend = Literal["rust", "python"]
Implementation = Literal["rust", "python", "sdk"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
HUGE_SIZE = 1_000_000
#: The SDK's orphan pruning is quadratic on the pathological shapes (a scan of the
#: whole list per pending program, a forward scan per reasoning item); beyond this
#: size one call would run for minutes, so its column is left empty there.
QUADRATIC_REFERENCE_LIMIT = 1_000
# How many items the turn being classified brings; every 100th history copy is
# handed back by the callback as an equal reconstruction.
NEW_TURN_ITEMS = 8
RECONSTRUCT_EVERY = 100
SEED = 0

SHAPES: dict[str, Callable[[int, int], Items]] = {
    "history": generate_history,
    "pending_programs": pending_programs,
    "reasoning_run": reasoning_run,
}


class CorrectnessError(AssertionError):
    """An implementation returned a wrong result; nothing of it was timed."""


# --- workloads ----------------------------------------------------------------------


@dataclass(frozen=True)
class CallbackInput:
    """What a session input callback received (copies) and what it returned."""

    history: Items
    new_items: Items
    combined: Items
    expected: tuple[list[int], list[int]]


@dataclass
class Workload:
    """Generated items of one shape and size (and, lazily, the callback input)."""

    shape: str
    size: int
    items: Items
    _callback: CallbackInput | None = field(default=None, repr=False)
    _text: bytes | None = field(default=None, repr=False)

    @property
    def callback(self) -> CallbackInput:
        if self._callback is None:
            self._callback = _callback_input(self.items)
        return self._callback

    def refresh(self) -> None:
        """Replace the items by freshly decoded equal ones (and the callback input, if
        made), so that no call sees what an earlier call cached in them (the UTF-8 of
        their strings, say)."""
        if self._text is None:
            self._text = orjson.dumps(self.items)
        had_callback = self._callback is not None
        self.items, self._callback = [], None  # the old ones go before the new come
        self.items = orjson.loads(self._text)
        if had_callback:
            self._callback = _callback_input(self.items)


def make_workload(shape: str, size: int, seed: int = SEED) -> Workload:
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; expected one of {', '.join(SHAPES)}")
    return Workload(shape=shape, size=size, items=SHAPES[shape](size, seed))


def _callback_input(stored: Items) -> CallbackInput:
    """A turn whose callback returns history + new items, some history rebuilt as copies."""
    history = _pure.deep_copy_items(stored)
    new_items = _pure.deep_copy_items(generate_history(NEW_TURN_ITEMS, SEED + 1))
    combined = [
        dict(item) if index % RECONSTRUCT_EVERY == RECONSTRUCT_EVERY // 2 else item
        for index, item in enumerate(history)
    ]
    combined += new_items
    expected = (
        list(range(len(history))),
        list(range(len(history), len(history) + len(new_items))),
    )
    return CallbackInput(history, new_items, combined, expected)


# --- operations ---------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One engine function as benchmarked: how to call it on each implementation."""

    name: str
    summary: str
    engine: Callable[[ModuleType, Workload], object]
    """The call on a backend module (``histcore._core`` or ``histcore.engine.pure``)."""
    reference: Callable[[Reference, Workload], object] | None
    result_kind: Literal["objects", "values", "copies"]
    """How results are compared: same objects, equal values, or equal independent copies."""
    reference_comparable: bool
    """Whether the SDK's result must equal the pure twin's."""
    shapes: tuple[str, ...] = ("history",)
    quadratic_reference_shapes: tuple[str, ...] = ()
    """Shapes on which the SDK's helper is quadratic (run only up to a limit)."""
    baselines: tuple[str, ...] = ("bare_loop",)
    """The baselines sampled in the same rounds as the implementations."""


def _on_items(name: str) -> Callable[[Any, Workload], object]:
    """The call ``name(workload.items)`` on an implementation: a backend module or the
    SDK's reference, which name their functions alike."""

    def call(implementation: Any, workload: Workload) -> object:
        return getattr(implementation, name)(workload.items)

    return call


def _same_call(name: str, summary: str, **fields: Any) -> Operation:
    """An operation that calls ``name(workload.items)`` on the engine and on the SDK."""
    call = _on_items(name)
    return Operation(name=name, summary=summary, engine=call, reference=call, **fields)


def _on_own_history(
    name: str, summary: str, result_kind: Literal["values", "objects"]
) -> Operation:
    """An engine-only operation (no SDK helper): ``name(items, history=items)``."""
    return Operation(
        name=name,
        summary=f"{summary}, the items being their own stored history (no SDK helper)",
        engine=lambda module, w: getattr(module, name)(w.items, history=w.items),
        reference=None,
        result_kind=result_kind,
        reference_comparable=False,
        shapes=_ALL_SHAPES,
    )


def _on_callback(implementation: Any, workload: Workload) -> object:
    callback = workload.callback
    return implementation.classify_callback_output(
        callback.history, callback.new_items, callback.combined
    )


_ALL_SHAPES = ("history", "pending_programs", "reasoning_run")

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            name="dedupe_key",
            summary="dedupe_key(item) called per item in a Python loop",
            engine=lambda module, w: [module.dedupe_key(item) for item in w.items],
            reference=_on_items("dedupe_keys"),
            result_kind="values",
            reference_comparable=True,
        ),
        _same_call(
            "dedupe_keys",
            "dedupe_key over all items in one call",
            result_kind="values",
            reference_comparable=True,
        ),
        _same_call(
            "deduplicate_input_items",
            "first-wins dedupe",
            result_kind="objects",
            reference_comparable=True,
        ),
        _same_call(
            "deduplicate_input_items_preferring_latest",
            "latest-value dedupe with call anchoring",
            result_kind="objects",
            reference_comparable=True,
            shapes=_ALL_SHAPES,
        ),
        _same_call(
            "drop_orphan_function_calls",
            "orphan tool-call pruning",
            result_kind="objects",
            reference_comparable=True,
            shapes=_ALL_SHAPES,
            quadratic_reference_shapes=("pending_programs", "reasoning_run"),
        ),
        _on_own_history("input_problems", "model-input rule check", result_kind="values"),
        _on_own_history("repair_input", "model-input repair", result_kind="objects"),
        _same_call(
            "content_keys",
            "content_key over all items (SDK: json.dumps(sort_keys=True) per item)",
            result_kind="values",
            reference_comparable=False,
            baselines=("bare_loop", "orjson_sort_keys"),
        ),
        _same_call(
            "deep_copy_items",
            "independent deep copy (SDK: copy.deepcopy)",
            result_kind="copies",
            reference_comparable=True,
        ),
        Operation(
            name="classify_callback_output",
            summary="session-callback classification of history + new items (size = history)",
            engine=_on_callback,
            reference=_on_callback,
            result_kind="values",
            reference_comparable=True,
        ),
    )
}

BASELINES: dict[str, Callable[[Items], object]] = {
    "bare_loop": bare_loop,
    "orjson_sort_keys": orjson_sort_keys,
}


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def verify(kind: str, result: object, expected: object, items: Items) -> str | None:
    """Why ``result`` differs from the ``expected`` one, or None when it matches."""
    if kind == "objects":
        if not isinstance(result, list) or not isinstance(expected, list):
            return f"expected a list, got {type(result).__name__}"
        if len(result) != len(expected):
            return f"{len(result)} items instead of {len(expected)}"
        for index, (got, want) in enumerate(zip(result, expected, strict=True)):
            if got is not want:
                return f"position {index} holds {_describe(got)}, not the object {_describe(want)}"
        return None
    if kind == "copies":
        if not isinstance(result, list) or result != expected or len(result) != len(items):
            return "the copy is not equal to the items"
        if any(
            copy is item
            for copy, item in zip(result, items, strict=True)
            if not isinstance(item, str)
        ):
            return "the copy shares an item with the input"
        return None
    if result != expected:
        if isinstance(result, (list, tuple)) and isinstance(expected, (list, tuple)):
            for index, (got, want) in enumerate(zip(result, expected, strict=False)):
                if got != want:
                    return f"position {index} is {_describe(got)}, expected {_describe(want)}"
            return f"length {len(result)} instead of {len(expected)}"
        return f"{_describe(result)} instead of {_describe(expected)}"
    return None


# --- running ------------------------------------------------------------------------


def load_rust_engine() -> ModuleType | None:
    """The compiled engine, or None when it is not built."""
    try:
        return importlib.import_module("histcore._core")
    except ModuleNotFoundError as exc:
        if exc.name != "histcore._core":
            raise
        return None


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...] = DEFAULT_SIZES
    operations: tuple[str, ...] = tuple(OPERATIONS)
    backends: tuple[Backend, ...] = ("rust", "python")
    repeat: int = 5
    reference: bool = True


@dataclass
class CaseResult:
    operation: str
    shape: str
    size: int
    timings: dict[Implementation, Timing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    baselines: dict[str, Timing] = field(default_factory=dict)
    """The operation's baselines over this case's items, sampled in the same rounds as
    the implementations."""


@dataclass(frozen=True)
class BaselineResult:
    name: str
    size: int
    timing: Timing


@dataclass
class SuiteResult:
    settings: Settings
    sdk_version: str | None
    cases: list[CaseResult] = field(default_factory=list)
    baselines: list[BaselineResult] = field(default_factory=list)


class Progress(Protocol):
    """Told when each size starts (its place among the sizes and its number of steps),
    after each of its steps, and when it is done."""

    def start_size(self, index: int, total: int, size: int, steps: int) -> None: ...

    def step_done(self) -> None: ...

    def finish_size(self, seconds: float) -> None: ...


class _Silent:
    def start_size(self, index: int, total: int, size: int, steps: int) -> None:
        pass

    def step_done(self) -> None:
        pass

    def finish_size(self, seconds: float) -> None:
        pass


@dataclass(frozen=True)
class _Case:
    operation: Operation
    shape: str
    size: int


@dataclass(frozen=True)
class _BaselineStep:
    name: str
    size: int


def _reference_runs(operation: Operation, shape: str, size: int) -> bool:
    return operation.reference is not None and (
        shape not in operation.quadratic_reference_shapes or size <= QUADRATIC_REFERENCE_LIMIT
    )


def _plan(settings: Settings) -> Iterator[_Case | _BaselineStep]:
    """Steps in run order: sizes ascending, one shape at a time (so only one large
    generated history is alive at once), functions in their listed order."""
    for size in sorted(set(settings.sizes)):
        for name in BASELINES:
            yield _BaselineStep(name, size)
        for shape in SHAPES:
            for name in settings.operations:
                operation = OPERATIONS[name]
                if shape in operation.shapes:
                    yield _Case(operation, shape, size)


def run_suite(
    settings: Settings,
    progress: Progress | None = None,
    *,
    rust: ModuleType | None = None,
) -> SuiteResult:
    """Run every step of ``settings``; raise CorrectnessError before timing a wrong result.

    ``rust`` is the compiled engine (needed when "rust" is among the backends). The
    pure twin runs once per case as the oracle even when it is not timed.
    """
    if "rust" in settings.backends and rust is None:
        raise ValueError("the rust backend was requested but no compiled engine was given")
    progress = progress or _Silent()
    reference = load_reference() if settings.reference else None
    result = SuiteResult(settings, reference.version if reference else None)
    steps = list(_plan(settings))
    sizes = sorted({step.size for step in steps})
    workload: Workload | None = None
    started = 0.0
    for index, step in enumerate(steps):
        if index == 0 or steps[index - 1].size != step.size:
            per_size = sum(1 for other in steps if other.size == step.size)
            progress.start_size(sizes.index(step.size) + 1, len(sizes), step.size, per_size)
            started = time.perf_counter()
        shape = "history" if isinstance(step, _BaselineStep) else step.shape
        if workload is None or (workload.shape, workload.size) != (shape, step.size):
            workload = None  # free the previous history before generating the next
            workload = make_workload(shape, step.size)
        if isinstance(step, _BaselineStep):
            baseline = _bind_baseline(step.name, workload)
            _, first = timed_call(baseline)
            timing = measure(baseline, settings.repeat, first, workload.refresh)
            result.baselines.append(BaselineResult(step.name, step.size, timing))
        else:
            result.cases.append(_run_case(step, workload, settings, rust, reference))
        progress.step_done()
        if index + 1 == len(steps) or steps[index + 1].size != step.size:
            progress.finish_size(time.perf_counter() - started)
    result.cases.sort(key=_report_order)
    return result


def _report_order(case: CaseResult) -> tuple[int, int, int]:
    """Size, then function, then shape, so a function's shapes sit together."""
    return (case.size, list(OPERATIONS).index(case.operation), list(SHAPES).index(case.shape))


def _run_case(
    case: _Case,
    workload: Workload,
    settings: Settings,
    rust: ModuleType | None,
    reference: Reference | None,
) -> CaseResult:
    """Check every implementation's result, then sample them in interleaved rounds.

    Interleaving exposes all implementations and the baselines to the same machine
    conditions, so their ratios hold up on a busy machine.
    """
    operation = case.operation
    result = CaseResult(operation.name, case.shape, case.size)
    expected, oracle_seconds = _oracle(case, workload)
    implementations: list[Implementation] = list(settings.backends)
    if reference is not None:
        if _reference_runs(operation, case.shape, case.size):
            implementations.append("sdk")
        elif operation.reference is None:
            result.notes.append("the SDK has no such helper")
        else:
            result.notes.append(
                f"SDK not run above {QUADRATIC_REFERENCE_LIMIT} items on {case.shape}: "
                "its helper is quadratic there"
            )
    calls: dict[str, Callable[[], object]] = {}
    first_seconds: dict[str, float] = {}
    for implementation in implementations:
        call = _bind(implementation, operation, workload, rust, reference)
        if implementation == "python":
            first = oracle_seconds
        else:
            got, first = timed_call(call)
            _check(case, implementation, got, expected, workload)
            del got
        calls[implementation], first_seconds[implementation] = call, first
    del expected
    baselines = operation.baselines
    for name in baselines:
        calls[name] = _bind_baseline(name, workload)
        _, first_seconds[name] = timed_call(calls[name])
    timings = measure_interleaved(calls, first_seconds, settings.repeat, workload.refresh)
    result.timings = {name: timings[name] for name in implementations}
    result.baselines = {name: timings[name] for name in baselines}
    return result


def _bind_baseline(name: str, workload: Workload) -> Callable[[], object]:
    baseline = BASELINES[name]
    return lambda: baseline(workload.items)


def _oracle(case: _Case, workload: Workload) -> tuple[object, float]:
    """The pure twin's result (the specification) and how long it took."""
    expected, seconds = timed_call(_bind("python", case.operation, workload, None, None))
    if case.operation.name == "classify_callback_output":
        # The workload is built so the right answer is known: hold the twin to it too.
        _check(
            case, "python", expected, workload.callback.expected, workload, "the expected answer"
        )
    return expected, seconds


def _bind(
    implementation: Implementation,
    operation: Operation,
    workload: Workload,
    rust: ModuleType | None,
    reference: Reference | None,
) -> Callable[[], object]:
    if implementation == "sdk":
        sdk_call = operation.reference
        if sdk_call is None or reference is None:
            raise ValueError(f"{operation.name} has no SDK reference to run")
        sdk = reference
        return lambda: sdk_call(sdk, workload)
    backend_module = _pure if implementation == "python" else rust
    if backend_module is None:
        raise ValueError("the rust backend is not available")
    return lambda: operation.engine(backend_module, workload)


def _check(
    case: _Case,
    implementation: Implementation,
    got: object,
    expected: object,
    workload: Workload,
    expected_from: str = "the pure twin",
) -> None:
    operation = case.operation
    if implementation == "sdk" and not operation.reference_comparable:
        return
    problem = verify(operation.result_kind, got, expected, workload.items)
    if problem is not None:
        raise CorrectnessError(
            f"{operation.name} ({implementation}, {case.shape}, {case.size} items) "
            f"disagrees with {expected_from}: {problem}; it was not timed"
        )
