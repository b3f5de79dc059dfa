"""Turning a suite run into the printed table and the JSON document.

The table has one row per function, shape and size: the median of the Rust engine,
the pure twin and the SDK, the SDK/histcore ratio and histcore's time per item.
Baselines, a linearity check (time per item across sizes) and a three-line summary
(the headline ratios, and whether time per item stayed flat) follow. The JSON document
holds every sample, the summary, and the environment the run was taken in.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from histcore.cli.bench.engine import (
    CaseResult,
    Implementation,
    SuiteResult,
)
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.timing import Timing
from histcore.cli.bench.units import format_seconds, size_label

__all__ = [
    "FORMAT",
    "LINEARITY_LIMIT",
    "Environment",
    "LinearityRow",
    "Ratios",
    "Summary",
    "header",
    "linearity",
    "render",
    "summarize",
    "to_json",
]

FORMAT = "histcore-bench/2"
#: Largest allowed ratio of per-item times between sizes for a pass to count as linear.
LINEARITY_LIMIT = 2.0
# Below this size fixed per-call costs dominate, so it says nothing about growth.
LINEARITY_MIN_SIZE = 1_000
_COLUMN_NAMES: dict[str, str] = {
    "rust": "rust",
    "python": "pure",
    "sdk": "SDK",
    "baseline": "baseline",
}


def header(environment: Environment, title: str) -> list[str]:
    """The report's first lines: what ran, where, with what."""
    build = environment.build_profile or "not timed"
    commit = environment.git_commit
    taken = environment.date + (f", commit {commit[:12]}" if commit else "")
    if commit and environment.git_dirty:
        taken += " (with local changes)"
    lines = [
        f"histcore {environment.histcore} {title} ({taken})",
        f"machine: {environment.machine()}",
        f"python: {environment.python_implementation} {environment.python}   "
        f"rust engine build: {build}   "
        f"openai-agents: {environment.sdk_version or 'not installed'}",
    ]
    if environment.debug:
        lines.append("WARNING: DEBUG BUILD of the Rust engine - its timings are meaningless")
    return lines


def _primary(result: SuiteResult) -> Implementation:
    """The histcore implementation the ratios are about."""
    return "rust" if "rust" in result.settings.backends else "python"


@dataclass(frozen=True)
class LinearityRow:
    operation: str
    shape: str
    implementation: Implementation | Literal["baseline"]
    ns_per_item: dict[int, float]
    loop_ns_per_item: dict[int, float]
    """The bare loop's time per item over the same items, sampled alongside."""

    @property
    def spread(self) -> float:
        """Largest over smallest time per item across sizes."""
        values = self.ns_per_item.values()
        return max(values) / min(values)

    @property
    def spread_vs_bare_loop(self) -> float | None:
        """The spread of the time per item relative to the bare loop's.

        Memory slows every pass over a large history, even the bare loop, and a busy
        machine slows everything at times; this spread is what remains of the growth
        once both are divided out.
        """
        relative = [
            ns / self.loop_ns_per_item[size]
            for size, ns in self.ns_per_item.items()
            if size in self.loop_ns_per_item
        ]
        return max(relative) / min(relative) if len(relative) >= 2 else None

    @property
    def linear(self) -> bool:
        return self.spread <= LINEARITY_LIMIT

    def verdict(self) -> str:
        if self.implementation == "baseline":
            return "-"
        if self.linear:
            return "linear"
        spread_vs_bare_loop = self.spread_vs_bare_loop
        if spread_vs_bare_loop is not None and spread_vs_bare_loop <= LINEARITY_LIMIT:
            return "linear vs bare loop"
        return "NOT LINEAR"


def _ns_per_item(timing: Timing, size: int) -> float:
    return timing.median / size * 1e9


def linearity(result: SuiteResult) -> list[LinearityRow]:
    """Per-item time across sizes (>= 10^3) of every pass timed at two sizes or more."""
    per_item: dict[tuple[str, str, Implementation], dict[int, float]] = {}
    loops: dict[tuple[str, str], dict[int, float]] = {}
    for case in result.cases:
        if case.size < LINEARITY_MIN_SIZE:
            continue
        implementation: Implementation
        for implementation in ("rust", "python"):
            timing = case.timings.get(implementation)
            if timing is not None:
                key = (case.operation, case.shape, implementation)
                per_item.setdefault(key, {})[case.size] = _ns_per_item(timing, case.size)
        loop = case.baselines.get("bare_loop")
        if loop is not None:
            loops.setdefault((case.operation, case.shape), {})[case.size] = _ns_per_item(
                loop, case.size
            )
    rows = [
        LinearityRow(operation, shape, implementation, sizes, loops.get((operation, shape), {}))
        for (operation, shape, implementation), sizes in per_item.items()
        if len(sizes) >= 2
    ]
    # The baselines themselves show how much growth the machine's memory alone causes.
    per_baseline: dict[str, dict[int, float]] = {}
    for baseline in result.baselines:
        if baseline.size >= LINEARITY_MIN_SIZE:
            per_baseline.setdefault(baseline.name, {})[baseline.size] = _ns_per_item(
                baseline.timing, baseline.size
            )
    rows += [
        LinearityRow(name, "history", "baseline", sizes, per_baseline.get("bare_loop", {}))
        for name, sizes in per_baseline.items()
        if len(sizes) >= 2
    ]
    return rows


# The summary's lines stay within the report's width; names are dropped to fit.
_SUMMARY_WIDTH = 120


@dataclass(frozen=True)
class Ratios:
    """One implementation's time over another's, per function, at one size."""

    numerator: Implementation
    denominator: Implementation
    by_function: dict[str, float]

    @property
    def median(self) -> float:
        return statistics.median(self.by_function.values())

    def line(self, size: int) -> str:
        ratios = sorted(self.by_function.items(), key=lambda pair: pair[1])
        (low_name, low), (high_name, high) = ratios[0], ratios[-1]
        label = f"{_COLUMN_NAMES[self.numerator]}/{_COLUMN_NAMES[self.denominator]}"
        head = f"{label} at {size_label(size)} items: "
        tail = f", median {self.median:.1f}x over {len(ratios)} functions"
        named = f"{low:.1f}x ({low_name}) to {high:.1f}x ({high_name})"
        if len(head + named + tail) <= _SUMMARY_WIDTH:
            return head + named + tail
        return head + f"{low:.1f}x to {high:.1f}x" + tail

    def to_json(self) -> dict[str, Any]:
        values = self.by_function.values()
        return {
            "numerator": self.numerator,
            "denominator": self.denominator,
            "min": min(values),
            "median": self.median,
            "max": max(values),
            "by_function": dict(self.by_function),
        }


@dataclass(frozen=True)
class Summary:
    """The report's last three lines, as data: the headline ratios on the generated
    history at the largest size, and whether the time per item stayed flat."""

    size: int | None
    primary: Implementation
    sdk: Ratios | None
    sdk_missing: str
    """Why there are no SDK ratios (empty when there are)."""
    pure_over_rust: Ratios | None
    pure_missing: str
    flat: list[LinearityRow]
    not_flat: list[LinearityRow]

    def lines(self) -> list[str]:
        size = size_label(self.size) if self.size else "-"
        name = _COLUMN_NAMES[self.primary]
        first = (
            self.sdk.line(self.size)
            if self.sdk and self.size
            else f"SDK/{name} at {size} items: not measured ({self.sdk_missing})"
        )
        second = (
            self.pure_over_rust.line(self.size)
            if self.pure_over_rust and self.size
            else f"pure/rust at {size} items: not measured ({self.pure_missing})"
        )
        return [first, second, self._flat_line()]

    def _flat_line(self) -> str:
        rows = self.flat + self.not_flat
        name = _COLUMN_NAMES[self.primary]
        if not rows:
            return f"{name} time per item: not checked (it needs two sizes of 10^3 items or more)"
        sizes = sorted({size for row in rows for size in row.ns_per_item})
        line = f"{name} time per item, {size_label(sizes[0])} to {size_label(sizes[-1])} items: "
        if not self.not_flat:
            return line + f"flat in all {len(rows)} passes (the linearity table above)"
        line += f"flat in {len(self.flat)} of {len(rows)} passes; not flat:"
        named = 0  # the worst first, as many as fit
        for row in self.not_flat:
            entry = f" {_short_case_name(row.operation, row.shape)} {row.spread:.2f}x"
            rest = len(self.not_flat) - named - 1
            if len(line + entry + (f", +{rest} more" if rest else "")) > _SUMMARY_WIDTH:
                break
            line += ("," if named else "") + entry
            named += 1
        if named == 0:
            return line + f" {len(self.not_flat)} (the linearity table above)"
        rest = len(self.not_flat) - named
        return line + (f", +{rest} more" if rest else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "implementation": self.primary,
            "sdk_over_primary": self.sdk.to_json() if self.sdk else None,
            "python_over_rust": self.pure_over_rust.to_json() if self.pure_over_rust else None,
            "time_per_item": {
                "passes": len(self.flat) + len(self.not_flat),
                "flat": len(self.flat),
                "not_flat": [
                    {"function": row.operation, "shape": row.shape, "spread": row.spread}
                    for row in self.not_flat
                ],
            },
            "lines": self.lines(),
        }


def _ratios_at(
    result: SuiteResult, size: int, numerator: Implementation, denominator: Implementation
) -> Ratios | None:
    by_function = {
        case.operation: case.timings[numerator].median / case.timings[denominator].median
        for case in result.cases
        if case.size == size
        and case.shape == "history"
        and numerator in case.timings
        and denominator in case.timings
    }
    return Ratios(numerator, denominator, by_function) if by_function else None


def summarize(result: SuiteResult) -> Summary:
    """The headline ratios on the generated history at the largest size timed, and the
    time per item of the engine the ratios are about across sizes."""
    primary = _primary(result)
    sizes = [case.size for case in result.cases if case.shape == "history"]
    size = max(sizes) if sizes else None
    sdk = None if size is None else _ratios_at(result, size, "sdk", primary)
    if not result.settings.reference:
        sdk_missing = "--no-reference"
    elif result.sdk_version is None:
        sdk_missing = "openai-agents is not installed"
    else:
        sdk_missing = "no function timed has an SDK helper"
    backends = result.settings.backends
    pure = None if size is None else _ratios_at(result, size, "python", "rust")
    pure_missing = f"--backend {backends[0]}" if len(backends) == 1 else "no function timed on both"
    rows = [row for row in linearity(result) if row.implementation == primary]
    flat = [row for row in rows if row.verdict() != "NOT LINEAR"]
    not_flat = sorted(
        (row for row in rows if row.verdict() == "NOT LINEAR"), key=lambda row: -row.spread
    )
    return Summary(size, primary, sdk, sdk_missing, pure, pure_missing, flat, not_flat)


def _case_name(case: CaseResult) -> str:
    return case.operation if case.shape == "history" else f"{case.operation} [{case.shape}]"


def _short_case_name(operation: str, shape: str) -> str:
    """The linearity table's row name: the shape by its first word (``[pending]``), so
    that the table, which has a column per size, stays within about 120 columns."""
    return operation if shape == "history" else f"{operation} [{shape.split('_')[0]}]"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Aligned text columns: the first ``left`` left-aligned, the rest right-aligned."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index < left else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(headers), "  ".join("-" * width for width in widths), *map(line, rows)]


def render(result: SuiteResult, environment: Environment) -> str:
    """The human-readable report: header, results, baselines, linearity, notes."""
    primary = _primary(result)
    primary_name = _COLUMN_NAMES[primary]
    notes: dict[str, int] = {}  # note text -> its footnote number
    rows: list[list[str]] = []
    for case in result.cases:
        cells = [_case_name(case), size_label(case.size)]
        for implementation in ("rust", "python", "sdk"):
            timing = case.timings.get(implementation)
            if timing is not None:
                cells.append(format_seconds(timing.median))
            elif implementation == "sdk" and case.notes:
                numbers = [notes.setdefault(note, len(notes) + 1) for note in case.notes]
                cells.append("skipped" + "".join(f"[{number}]" for number in numbers))
            else:
                cells.append("-")
        own, sdk = case.timings.get(primary), case.timings.get("sdk")
        cells.append(f"{sdk.median / own.median:.1f}x" if own and sdk else "-")
        cells.append(f"{own.median / case.size * 1e9:.0f}" if own else "-")
        rows.append(cells)
    lines = header(environment, "engine benchmark")
    lines += [f"median of up to {result.settings.repeat} samples (time.perf_counter)", ""]
    headers = [
        "function",
        "size",
        "rust",
        "pure",
        "SDK",
        f"SDK/{primary_name}",
        f"{primary_name} ns/item",
    ]
    lines += _table(headers, rows, left=1)
    if result.baselines:
        lines += ["", "baselines (a plain pass over the same items, for scale):"]
        lines += _table(
            ["baseline", "size", "median", "ns/item"],
            [
                [
                    b.name,
                    size_label(b.size),
                    format_seconds(b.timing.median),
                    f"{b.timing.median / b.size * 1e9:.0f}",
                ]
                for b in result.baselines
            ],
        )
    rows_linear = linearity(result)
    if rows_linear:
        lines += [
            "",
            f"linearity (ns/item across sizes; linear when max/min <= {LINEARITY_LIMIT:g}, "
            "also checked relative to the bare loop at each size):",
        ]
        sizes = sorted({size for row in rows_linear for size in row.ns_per_item})
        lines += _table(
            ["function", "engine", *map(size_label, sizes), "max/min", "vs bare loop", "verdict"],
            [
                [
                    _short_case_name(row.operation, row.shape),
                    _COLUMN_NAMES[row.implementation],
                    *(f"{row.ns_per_item[s]:.0f}" if s in row.ns_per_item else "-" for s in sizes),
                    f"{row.spread:.2f}",
                    "-" if row.spread_vs_bare_loop is None else f"{row.spread_vs_bare_loop:.2f}",
                    row.verdict(),
                ]
                for row in rows_linear
            ],
            left=2,
        )
    if notes:
        lines.append("")
        lines += [f"[{number}] {note}" for note, number in notes.items()]
    lines += ["", *summarize(result).lines()]
    return "\n".join(lines)


def _timing_json(timing: Timing, size: int) -> dict[str, Any]:
    return {**timing.to_json(), "ns_per_item": _ns_per_item(timing, size)}


def to_json(result: SuiteResult, environment: Environment) -> dict[str, Any]:
    """Everything the table shows, with every sample, as plain JSON data."""
    settings = result.settings
    cases = []
    for case in result.cases:
        sdk = case.timings.get("sdk")
        cases.append(
            {
                "function": case.operation,
                "shape": case.shape,
                "size": case.size,
                "timings": {
                    name: _timing_json(timing, case.size) for name, timing in case.timings.items()
                },
                "sdk_over_rust": _ratio(sdk, case.timings.get("rust")),
                "sdk_over_python": _ratio(sdk, case.timings.get("python")),
                "notes": list(case.notes),
                "baselines": {
                    name: _timing_json(timing, case.size) for name, timing in case.baselines.items()
                },
            }
        )
    return {
        "format": FORMAT,
        "environment": environment.to_json(),
        "debug_build": environment.debug,
        "settings": {
            "sizes": sorted(set(settings.sizes)),
            "functions": list(settings.operations),
            "backends": list(settings.backends),
            "repeat": settings.repeat,
            "reference": settings.reference,
        },
        "cases": cases,
        "baselines": [
            {"name": b.name, "size": b.size, **_timing_json(b.timing, b.size)}
            for b in result.baselines
        ],
        "linearity": [
            {
                "function": row.operation,
                "shape": row.shape,
                "implementation": row.implementation,
                "ns_per_item": {str(size): ns for size, ns in sorted(row.ns_per_item.items())},
                "spread": row.spread,
                "spread_vs_bare_loop": row.spread_vs_bare_loop,
                "linear": row.linear,
                "verdict": row.verdict(),
            }
            for row in linearity(result)
        ],
        "summary": summarize(result).to_json(),
    }


def _ratio(numerator: Timing | None, denominator: Timing | None) -> float | None:
    if numerator is None or denominator is None:
        return None
    return numerator.median / denominator.median
