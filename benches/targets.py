"""The project's internal performance targets, judged on ``histcore bench`` results.

The shipped ``histcore bench`` reports plain numbers; the targets histcore is held to
live here::

    histcore bench --json bench.json
    histcore bench --openai-agents --json sdk.json
    python benches/targets.py bench.json sdk.json
    python benches/targets.py --run                  # runs both at their default sizes
    python benches/targets.py sdk.json --floor --tracing-ready

Engine targets are checked at 10^5 items and above, on the realistic history, for the
Rust engine: a minimum speedup over the SDK's helper and, for some, a maximum ratio to
a baseline sampled alongside (the bare loop, orjson). Turn targets are minimum speedups
of ``install()`` by session size, for turns in one process and first turns of a fresh
process alike.

``--floor`` also times the first turn of a fresh process on an empty session: the least
any first turn costs, so a plain first turn over it is the most speedup a first turn
could reach (printed as "at most" beside a missed first-turn target).
``--tracing-ready`` times the first turns again with the SDK's trace provider built
before the clock (every process's first ``Runner.run`` builds it, with or without
histcore). The targets are informational: the exit code is 0 unless ``--check`` is
given and a target was missed (1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

#: Engine targets are stated for histories of this many items (and checked above it).
ENGINE_TARGET_SIZE = 100_000


@dataclass(frozen=True)
class Target:
    """A goal for the Rust engine: a minimum SDK/Rust speedup, maybe a baseline bound."""

    speedup: float
    baseline: str | None = None
    baseline_factor: float = 0.0

    def describe(self) -> str:
        text = f">={self.speedup:g}x SDK"
        if self.baseline is not None:
            text += f", <={self.baseline_factor:g}x {self.baseline}"
        return text


_SDK_AND_LOOP = Target(15.0, "bare_loop", 2.0)
ENGINE_TARGETS: dict[str, Target] = {
    "dedupe_key": Target(15.0),
    "dedupe_keys": _SDK_AND_LOOP,
    "deduplicate_input_items": _SDK_AND_LOOP,
    "deduplicate_input_items_preferring_latest": _SDK_AND_LOOP,
    "drop_orphan_function_calls": _SDK_AND_LOOP,
    "content_keys": Target(10.0, "orjson_sort_keys", 1.0),
    "deep_copy_items": Target(8.0),
    "classify_callback_output": Target(10.0),
}
#: The turn speedups histcore aims for, by session size (in-process and first turn).
TURN_TARGETS: dict[int, float] = {1_000: 5.0, 10_000: 12.0, 100_000: 12.0}


def _median(timing: dict[str, Any] | None) -> float | None:
    return None if timing is None else float(timing["median_s"])


def engine_verdict(
    case: dict[str, Any], baselines: dict[tuple[str, int], float]
) -> tuple[bool | None, str]:
    """Whether the Rust engine met its target on one ``cases`` entry: (met or None, text).

    ``baselines`` maps (name, size) to the separately measured baseline medians; a
    baseline sampled alongside the case wins.
    """
    target = ENGINE_TARGETS.get(case["function"])
    rust = _median(case["timings"].get("rust"))
    size = int(case["size"])
    if target is None or case["shape"] != "history" or size < ENGINE_TARGET_SIZE or rust is None:
        return None, ""
    sdk = _median(case["timings"].get("sdk"))
    if sdk is None:
        return None, "n/a (no SDK)"
    misses: list[str] = []
    speedup = sdk / rust
    if speedup < target.speedup:
        misses.append(f"{speedup:.1f}x < {target.speedup:g}x SDK")
    if target.baseline is not None:
        baseline = _median(case.get("baselines", {}).get(target.baseline))
        if baseline is None:
            baseline = baselines.get((target.baseline, size))
        if baseline is not None:
            factor = rust / baseline
            if factor > target.baseline_factor:
                misses.append(f"{factor:.2f}x > {target.baseline_factor:g}x {target.baseline}")
    if misses:
        return False, "MISS: " + "; ".join(misses)
    return True, f"ok ({target.describe()})"


def turn_verdict(turn: dict[str, Any], reachable: float | None = None) -> tuple[bool | None, str]:
    """Whether a turn's speedup reaches the target for its size; "at most" when out of reach."""
    target = TURN_TARGETS.get(int(turn["size"]))
    if target is None:
        return None, ""
    speedup = float(turn["plain"]["median_s"]) / float(turn["installed"]["median_s"])
    met = speedup >= target
    text = f"{speedup:.1f}x: {'met' if met else 'MISSED'} (>= {target:g}x)"
    if not met and reachable is not None and reachable < target:
        text += f", at most {reachable:.1f}x over the floor"
    return met, text


def engine_report(data: dict[str, Any]) -> tuple[list[str], list[bool]]:
    baselines = {
        (b["name"], int(b["size"])): float(b["median_s"]) for b in data.get("baselines", [])
    }
    lines = [f"engine targets (Rust engine, >= {ENGINE_TARGET_SIZE:,} items):"]
    results: list[bool] = []
    for case in data["cases"]:
        met, text = engine_verdict(case, baselines)
        if text:
            lines.append(f"  {case['function']:<44} {case['size']:>9,}  {text}")
        if met is not None:
            results.append(met)
    if len(lines) == 1:
        lines.append(f"  (no case at {ENGINE_TARGET_SIZE:,} items or more with the Rust engine)")
    return lines, results


def turn_report(
    title: str, turns: list[dict[str, Any]], floor: float | None = None
) -> tuple[list[str], list[bool]]:
    lines = [title]
    results: list[bool] = []
    for turn in turns:
        reachable = None if floor is None else float(turn["plain"]["median_s"]) / floor
        met, text = turn_verdict(turn, reachable)
        at_most = "" if reachable is None else f"  (at most {reachable:.1f}x)"
        lines.append(f"  {turn['size']:>9,}  {text or 'no target at this size'}{at_most}")
        if met is not None:
            results.append(met)
    return lines, results


def _seconds(timing: Any) -> dict[str, Any]:
    return {"median_s": timing.median, "samples_s": list(timing.samples)}


def measure_first_turns(
    sizes: list[int], repeat: int, floor: bool, tracing_ready: bool
) -> tuple[float | None, list[dict[str, Any]]]:
    """(the installed floor's median or None, first turns with the trace provider ready)."""
    from histcore.cli.bench import sdk_conversation as bench

    floor_median: float | None = None
    ready: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="histcore-targets-") as tmp:
        if floor:
            empty = os.path.join(tmp, "empty.db")
            bench.build_store(empty, 0)
            turn = bench.time_first_turns(empty, 0, repeat, tmp, sys.stderr)
            floor_median = turn.installed.median
            print(
                f"the first turn of a fresh process on an empty session (the floor): "
                f"plain {turn.plain.median:.3f} s, installed {turn.installed.median:.3f} s"
            )
        for size in sizes if tracing_ready else []:
            store = os.path.join(tmp, f"store-{size}.db")
            bench.build_store(store, size)
            turn = bench.time_first_turns(store, size, repeat, tmp, sys.stderr, tracing_ready=True)
            ready.append(
                {"size": size, "plain": _seconds(turn.plain), "installed": _seconds(turn.installed)}
            )
            os.remove(store)
    return floor_median, ready


def sdk_report(data: dict[str, Any], args: argparse.Namespace) -> tuple[list[str], list[bool]]:
    floor, ready = None, []
    if args.floor or args.tracing_ready:
        sizes = [int(turn["size"]) for turn in data["first_turns"]]
        floor, ready = measure_first_turns(sizes, args.repeat, args.floor, args.tracing_ready)
    lines, results = turn_report("turn targets, in one process:", data["turns"])
    more, met = turn_report(
        "turn targets, first turn of a fresh process:", data["first_turns"], floor
    )
    lines += more
    results += met
    if ready:
        more, met = turn_report(
            "first turn, the SDK's trace provider built before the clock:", ready
        )
        lines += more
        results += met
    return lines, results


def _run_bench(extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="histcore-targets-") as tmp:
        path = os.path.join(tmp, "bench.json")
        command = [sys.executable, "-m", "histcore", "bench", *extra, "--json", path]
        print("running: " + " ".join(command[1:-2]), file=sys.stderr)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as handle:
            data: dict[str, Any] = json.load(handle)
    return data


def _documents(args: argparse.Namespace) -> list[dict[str, Any]]:
    documents = []
    for path in args.files:
        with open(path, encoding="utf-8") as handle:
            documents.append(json.load(handle))
    if args.run:
        documents.append(_run_bench([]))
        documents.append(_run_bench(["--openai-agents"]))
    return documents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="histcore bench --json outputs (either kind)")
    parser.add_argument("--run", action="store_true", help="run both benchmarks first")
    parser.add_argument("--floor", action="store_true", help="time the first-turn floor")
    parser.add_argument(
        "--tracing-ready", action="store_true", help="time first turns, trace provider ready"
    )
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per timing")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target was missed")
    args = parser.parse_args(argv)
    if not args.files and not args.run:
        parser.error("give histcore bench --json files, or --run")
    results: list[bool] = []
    for data in _documents(args):
        fmt = str(data.get("format", ""))
        if fmt.startswith("histcore-bench-openai-agents/"):
            lines, met = sdk_report(data, args)
        elif fmt.startswith("histcore-bench/"):
            lines, met = engine_report(data)
        else:
            parser.error(f"not a histcore bench --json document (format {fmt!r})")
        print("\n".join(lines))
        results += met
    missed = results.count(False)
    print(f"\n{len(results) - missed} of {len(results)} targets met")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
