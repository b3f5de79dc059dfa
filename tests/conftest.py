"""Engine fixtures: every engine-level test runs once per available backend.

``HISTCORE_BACKEND`` decides which engines take part:

* ``python``: only the pure twin (``histcore.engine.pure``);
* ``rust``: the twin *and* the extension, and a missing or broken extension fails every
  Rust-parametrised test loudly instead of quietly testing only the twin;
* ``auto`` (default): the twin, plus the extension unless it is missing. A broken
  extension still takes part, so its import error is reported rather than hidden.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

CORE_MODULE = "histcore._core"
PURE_MODULE = "histcore.engine.pure"


def requested_backend() -> str:
    """The HISTCORE_BACKEND choice as histcore.engine.backend reads it."""
    return os.environ.get("HISTCORE_BACKEND", "auto").strip().lower() or "auto"


def _core_is_missing() -> bool:
    """True only when the extension module is absent (not when it fails to load)."""
    try:
        importlib.import_module(CORE_MODULE)
    except ModuleNotFoundError as exc:
        return exc.name == CORE_MODULE
    except ImportError:
        return False
    return False


def _engine_names() -> list[str]:
    choice = requested_backend()
    if choice == "python":
        return ["python"]
    if choice == "rust" or not _core_is_missing():
        return ["python", "rust"]
    return ["python"]


ENGINE_NAMES = _engine_names()


def load_engine(name: str) -> ModuleType:
    """Import one engine; the Rust one fails the test loudly when it cannot load."""
    if name == "python":
        return importlib.import_module(PURE_MODULE)
    try:
        return importlib.import_module(CORE_MODULE)
    except ImportError as exc:
        pytest.fail(
            f"the Rust extension {CORE_MODULE} cannot be imported "
            f"(HISTCORE_BACKEND={requested_backend()}): {exc!r}",
            pytrace=False,
        )


@pytest.fixture(scope="session", params=ENGINE_NAMES)
def engine(request: pytest.FixtureRequest) -> ModuleType:
    """The engine under test: ``histcore.engine.pure`` or ``histcore._core``."""
    return load_engine(request.param)


@pytest.fixture(params=["run", "streamed"])
def mode(request: pytest.FixtureRequest) -> str:
    """How a runner test runs its agent: ``Runner.run`` or ``Runner.run_streamed``
    (see ``_runner.drive``)."""
    return str(request.param)


@pytest.fixture(scope="session")
def pure() -> ModuleType:
    """The pure twin, the reference in differential tests."""
    return load_engine("python")


@pytest.fixture(scope="session")
def core() -> ModuleType:
    """The Rust engine; skipped only when it is legitimately absent from this run."""
    if "rust" not in ENGINE_NAMES:
        reason = "HISTCORE_BACKEND=python" if requested_backend() == "python" else "not built"
        pytest.skip(f"Rust extension {CORE_MODULE} not under test ({reason})")
    return load_engine("rust")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which package and engines this run really exercises."""
    try:
        import histcore

        where = f"histcore {histcore.__file__} (BACKEND={histcore.BACKEND})"
    except ImportError as exc:
        where = f"histcore import failed: {exc!r}"
    return [where, f"engines under test: {', '.join(ENGINE_NAMES)}"]
