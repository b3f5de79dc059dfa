"""Resident memory (RSS) of session writes, reads, preparation and an SDK turn: histcore
and the SDK.

Each measurement runs ``benches/session_rss.py`` in a fresh process (see its docstring
for the operations and what ``peak`` and ``retained`` mean) and prints one line per
operation and size: histcore's and the SDK's peak and retained RSS (for a turn, the SDK
with and without ``histcore.openai_agents.install()``). RSS, unlike
tracemalloc, counts the Rust engine's, orjson's and SQLite's allocations.

Sizes: a smoke run (``--benchmark-disable``, the project default, as in CI) measures
10^3 items only, to check that every measurement runs; ``HISTCORE_BENCH_LARGE=1`` or
``--benchmark-enable`` measures 10^5, and ``HISTCORE_BENCH_HUGE=1`` adds 10^6 (several
GB for the SDK's write, minutes in all). From 10^5 items on, the targets are checked:
a write's peak within 1.5x the SDK's, what a session written to in many calls holds
within 2x the SDK's, and an installed turn's peak within the plain SDK's (each with a
few MB of slack for the fixed costs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("session_rss.py")
SMOKE_SIZES = (1_000,)
LARGE_SIZES = (100_000,)
HUGE_SIZE = 1_000_000
OPERATIONS = ("write", "write-many", "read", "prepare", "turn")
# Calls of the write-many measurement (items / calls each).
CALLS = 200
# Targets, checked from CHECKED_FROM items: histcore's figure at most RATIO times the
# SDK's, plus SLACK bytes (fixed costs that do not grow with the history).
CHECKED_FROM = 100_000
TARGETS = {("write", "peak"): 1.5, ("write-many", "retained"): 2.0, ("turn", "peak"): 1.0}
SLACK = 8 << 20


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def _sizes(config: pytest.Config) -> tuple[int, ...]:
    timing = config.getoption("benchmark_enable", False) or not config.getoption(
        "benchmark_disable", False
    )
    sizes = LARGE_SIZES if timing or _flag("HISTCORE_BENCH_LARGE") else SMOKE_SIZES
    return (*sizes, HUGE_SIZE) if _flag("HISTCORE_BENCH_HUGE") else sizes


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "rss_size" in metafunc.fixturenames:
        metafunc.parametrize("rss_size", _sizes(metafunc.config))
    if "rss_operation" in metafunc.fixturenames:
        metafunc.parametrize("rss_operation", OPERATIONS)


def _run(*args: str) -> dict[str, Any] | None:
    """The JSON ``session_rss.py`` prints (None when it prints nothing)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"session_rss.py {' '.join(args)} failed:\n{done.stderr}", pytrace=False)
    lines = done.stdout.strip().splitlines()
    result: dict[str, Any] | None = json.loads(lines[-1]) if lines else None
    return result


def _measure(*args: str) -> dict[str, Any]:
    result = _run(*args)
    assert result is not None
    return result


class Histories:
    """History files for the reads and preparations, one per size, written once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: dict[int, Path] = {}

    def path(self, size: int) -> Path:
        if size not in self.paths:
            path = self.root / f"history-{size}.db"
            _run("--make-db", str(path), "--items", str(size))
            self.paths[size] = path
        return self.paths[size]


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Histories:
    return Histories(tmp_path_factory.mktemp("session_rss"))


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.1f} MB"


def test_session_rss_vs_sdk(
    rss_size: int,
    rss_operation: str,
    histories: Histories,
) -> None:
    pytest.importorskip("agents", reason="openai-agents is not installed")
    args = ["--op", rss_operation, "--items", str(rss_size)]
    if rss_operation == "write-many":
        args += ["--calls", str(min(CALLS, rss_size))]
    if rss_operation in ("read", "prepare", "turn"):
        args += ["--db", str(histories.path(rss_size))]
    label = "installed" if rss_operation == "turn" else "histcore"
    ours = _measure("--impl", label, *args)
    theirs = _measure("--impl", "sdk", *args)
    print(
        f"\nRSS, {rss_operation}, {rss_size} items: "
        f"{label} peak {_mb(ours['peak'])}, retained {_mb(ours['retained'])}, "
        f"{ours['seconds']:.2f} s; sdk peak {_mb(theirs['peak'])}, "
        f"retained {_mb(theirs['retained'])}, {theirs['seconds']:.2f} s"
    )
    if rss_size < CHECKED_FROM:
        return
    for (operation, figure), ratio in TARGETS.items():
        if operation != rss_operation or ours[figure] is None or theirs[figure] is None:
            continue
        assert ours[figure] <= ratio * theirs[figure] + SLACK, (figure, ours, theirs)
