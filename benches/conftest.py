"""pytest-benchmark setup for the engine benchmarks.

``pytest benches`` (with the project's default ``--benchmark-disable``) runs every
benchmark once at 10^3 items as a smoke test; ``HISTCORE_BENCH_LARGE=1`` adds 10^4
and 10^5 to it. ``pytest benches --benchmark-enable`` times 10^3, 10^4 and 10^5
(``HISTCORE_BENCH_HUGE=1`` adds 10^6) and refuses a debug build of the Rust engine.
``HISTCORE_BACKEND=rust`` makes a missing Rust engine an error instead of a skip.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from histcore.cli.bench.engine import load_rust_engine


def timing_enabled(config: pytest.Config) -> bool:
    """Whether pytest-benchmark really times (the rule the plugin applies)."""
    return bool(
        config.getoption("benchmark_enable", False)
        or not config.getoption("benchmark_disable", False)
    )


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Module | None:
    """Collect ``bench_*.py`` here, without changing the project's test file pattern.

    A file named on the command line is collected by pytest itself whatever its name,
    so it is left to pytest (collecting it here too would run every benchmark twice).
    """
    if parent.session.isinitpath(file_path):
        return None
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        module: pytest.Module = pytest.Module.from_parent(parent, path=file_path)
        return module
    return None


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to time a debug build: its numbers would be meaningless."""
    if not timing_enabled(config):
        return
    rust = load_rust_engine()
    profile = getattr(rust, "build_profile", None)
    allowed = os.environ.get("HISTCORE_BENCH_ALLOW_DEBUG", "").strip() in ("1", "true", "yes")
    if rust is not None and profile != "release" and not allowed:
        raise pytest.UsageError(
            f"refusing to time a {profile} build of histcore._core: its numbers would be "
            "meaningless. Build a release wheel (pip install .), run the benchmarks once "
            "as a smoke test with --benchmark-disable, or set HISTCORE_BENCH_ALLOW_DEBUG=1."
        )


@pytest.fixture(scope="session")
def rust_engine() -> ModuleType:
    rust = load_rust_engine()
    if rust is None:
        if os.environ.get("HISTCORE_BACKEND", "").strip().lower() == "rust":
            pytest.fail("HISTCORE_BACKEND=rust but histcore._core is not built", pytrace=False)
        pytest.skip("histcore._core is not built (the pure twin and the SDK still run)")
    return rust


def pytest_report_header(config: pytest.Config) -> list[str]:
    rust = load_rust_engine()
    build = getattr(rust, "build_profile", "?") if rust is not None else "not built"
    mode = "timing" if timing_enabled(config) else "smoke test (each benchmark runs once)"
    return [f"histcore benches: {mode}; rust engine: {build}"]
