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
import importlib.util
import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.examples import load_profile

load_profile()

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
    (see ``tests.support.runner.drive``)."""
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


# --- the SDK is required in CI ------------------------------------------------------

#: Modules of the openai-agents extra. When CI is set, a test that skips for want of one
#: (an ``importorskip`` anywhere, at collection or in the test, whatever its reason says)
#: fails instead, as one that needs a missing PostgreSQL does (``tests/support/pg.py``).
REQUIRED_IN_CI = ("agents", "openai")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def _for_want_of(report: pytest.CollectReport | pytest.TestReport, cause: object) -> str | None:
    """The required module a skip was for want of: the ImportError it was raised from,
    or a missing module its reason names; None for any other skip."""
    while cause is not None:
        if isinstance(cause, ImportError) and cause.name:
            top = cause.name.split(".")[0]
            if top in REQUIRED_IN_CI:
                return top
        cause = cause.__cause__ or cause.__context__
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
    for name in REQUIRED_IN_CI:
        if name in reason and _missing(name):
            return name
    return None


def _fail_if_missing_in_ci(
    report: pytest.CollectReport | pytest.TestReport, cause: object = None
) -> None:
    if not report.skipped or hasattr(report, "wasxfail") or not in_ci():
        return
    name = _for_want_of(report, cause)
    if name is not None:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"{name!r} (the openai-agents extra) is required when CI is set; skipped: {reason}"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _fail_if_missing_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    cause = call.excinfo.value.__cause__ if call.excinfo is not None else None
    _fail_if_missing_in_ci(outcome.get_result(), cause)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which package and engines this run really exercises."""
    try:
        import histcore

        where = f"histcore {histcore.__file__} (BACKEND={histcore.BACKEND})"
    except ImportError as exc:
        where = f"histcore import failed: {exc!r}"
    return [where, f"engines under test: {', '.join(ENGINE_NAMES)}"]
