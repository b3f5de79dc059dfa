"""pytest plugin for running the OpenAI Agents SDK's own tests against histcore.

Loaded with ``-p histcore_sdk_plugin`` (``scripts/sdk_suite`` on ``PYTHONPATH``) by
``scripts/sdk-suite.sh``. Options:

``--histcore-install``
    call ``histcore.openai_agents.install()`` before any test module is collected
    (before the SDK's conftest is imported); refuses to run when the installed SDK is
    not a supported release or a helper group was left unreplaced, since the comparison
    would then test less than it claims. With ``HISTCORE_DROPIN_COUNTS=DIR`` set, each
    process counts the calls that took histcore's own path (``path_counts``, next to
    this plugin, hooked into the drop-in's binding before install()), writes
    them to DIR when its session ends, and writes the groups install() replaced to
    ``DIR/installation-<pid>.json``.
``--histcore-guard``
    as ``--histcore-install``, with ``install(guard=True)``.
``--histcore-repairs PATH``
    (with ``--histcore-guard``) write ``{nodeid: {"repaired": n, "dropped": n,
    "rules": {kind: n}}}`` as JSON for each test during which the guard repaired a model
    input (``installation().guard.repaired`` grew in its setup, call or teardown), to
    PATH (PATH.<worker> under pytest-xdist).
``--histcore-outcomes PATH``
    write ``{nodeid: outcome}`` as JSON when the session ends; an outcome is one of
    passed, failed, error, skipped, xfailed, xpassed (a test whose setup or teardown
    failed is an error), and a module that failed to collect is ``collect-error``.
``--histcore-trace PATH``
    record which tests reach a helper that ``install()`` replaces (a call of the
    SDK's function, or of a function of the ``json``/``copy`` module that install()
    swaps in one SDK module), in their setup, call or teardown, and write each one's
    id and the groups (``_table.GROUPS`` names) of the helpers it reached, one test
    per line (``id<TAB>group,group``), to PATH (PATH.<worker> under pytest-xdist). The
    helpers are rebound to recording wrappers the way install() rebinds them, before
    the test modules are collected.
``--histcore-select PATH``
    run only the tests PATH lists (test ids, or test files meaning every test in
    them; ``#`` starts a comment line); every other collected test is deselected.

Works under pytest-xdist: the controller gathers outcomes, each worker traces (and
counts, and notes repairs) itself.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

_PHASES = ("setup", "call", "teardown")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("histcore", "histcore drop-in comparison")
    group.addoption("--histcore-install", action="store_true", default=False)
    group.addoption("--histcore-guard", action="store_true", default=False)
    group.addoption("--histcore-repairs", default=None, metavar="PATH")
    group.addoption("--histcore-outcomes", default=None, metavar="PATH")
    group.addoption("--histcore-trace", default=None, metavar="PATH")
    group.addoption("--histcore-select", default=None, metavar="PATH")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Runs before the SDK's tests/conftest.py is imported: install() is in place before
    # any test module copies a helper into its own namespace.
    options = early_config.known_args_namespace
    installing = options.histcore_install or options.histcore_guard
    if options.histcore_repairs and not options.histcore_guard:
        raise pytest.UsageError("--histcore-repairs needs --histcore-guard")
    if options.histcore_trace:
        if installing:
            raise pytest.UsageError("--histcore-trace traces the plain SDK, not install()")
        trace = _Trace(os.path.abspath(options.histcore_trace))
        early_config.pluginmanager.register(trace, "histcore-trace")
        trace.start()
    if installing:
        guard_counts = _install(early_config, guard=options.histcore_guard)
        if options.histcore_repairs:
            repairs = _Repairs(os.path.abspath(options.histcore_repairs), guard_counts)
            early_config.pluginmanager.register(repairs, "histcore-repairs")


def _install(config: pytest.Config, *, guard: bool) -> Any:
    """install() (``guard=True`` with ``guard``), checked; the guard's live counts."""
    import warnings

    import histcore.openai_agents as accelerator

    counting = os.environ.get("HISTCORE_DROPIN_COUNTS")
    if counting:
        import path_counts

        path_counts.start(counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        installation = accelerator.install(guard=True) if guard else accelerator.install()
    if not installation.supported or installation.skipped:
        raise pytest.UsageError(
            f"histcore.openai_agents.install() on openai-agents {installation.sdk_version}: "
            f"supported={installation.supported}, left unreplaced: {installation.skipped}"
        )
    if guard and getattr(installation, "guard", None) is None:
        raise pytest.UsageError("install(guard=True) installed no guard")
    import histcore

    requested = os.environ.get("HISTCORE_BACKEND", "auto").strip().lower() or "auto"
    if requested != "auto" and histcore.BACKEND != requested:
        raise pytest.UsageError(
            f"HISTCORE_BACKEND={requested}, but histcore runs on {histcore.BACKEND}"
        )
    # Said once collection is done (output while conftests load is captured).
    config.pluginmanager.register(
        _Say(
            f"histcore_sdk_plugin: install({'guard=True' if guard else ''}) replaced "
            "{replaced} bindings "
            f"(histcore {histcore.__version__}, engine {histcore.BACKEND}, "
            f"openai-agents {installation.sdk_version})"
        ),
        "histcore-install-said",
    )
    if counting:
        from histcore.openai_agents import _table

        # A group left out for a missing extra (``Group.needs``) replaced nothing.
        groups = [
            group.name
            for group in _table.GROUPS
            if group.name not in installation.skipped and group.available()
        ]
        os.makedirs(counting, exist_ok=True)
        path = os.path.join(counting, f"installation-{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "groups": groups}, handle)
        config.pluginmanager.register(_Counts(), "histcore-counts")
    return getattr(installation, "guard", None)


class _Say:
    def __init__(self, text: str) -> None:
        self.text = text

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        import histcore.openai_agents as accelerator

        # The groups of the SDK's extras are bound when the test modules import them.
        installation = accelerator.installation()
        if installation is None or installation.skipped:
            raise pytest.UsageError(
                "histcore.openai_agents: after collection, "
                + ("not installed" if installation is None else f"left {installation.skipped}")
            )
        waiting = f", waiting for import: {', '.join(installation.waiting)}"
        said = self.text.format(replaced=len(installation.replaced))
        sys.stderr.write(said + (waiting if installation.waiting else "") + "\n")


class _Counts:
    """Writes this process's path counts when its session ends (``path_counts``)."""

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        import path_counts

        path_counts.flush()


class _Repairs:
    """Notes, per test, the model inputs the guard repaired while it ran."""

    def __init__(self, path: str, counts: Any) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.path = f"{path}.{worker}" if worker else path
        #: ``installation().guard``: ``repaired``, ``dropped`` and ``rules`` grow live
        self.counts = counts
        self.repairs: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        before = _guard_state(self.counts)
        yield
        after = _guard_state(self.counts)
        if after[0] > before[0]:
            rules = {kind: n - before[2].get(kind, 0) for kind, n in after[2].items()}
            self.repairs[item.nodeid] = {
                "repaired": after[0] - before[0],
                "dropped": after[1] - before[1],
                "rules": {kind: n for kind, n in sorted(rules.items()) if n > 0},
            }

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(dict(sorted(self.repairs.items())), handle, indent=0)
            handle.write("\n")


def _guard_state(counts: Any) -> tuple[int, int, dict[str, int]]:
    return int(counts.repaired), int(counts.dropped), dict(counts.rules)


# --- outcomes ----------------------------------------------------------------------


class _Outcomes:
    def __init__(self, path: str) -> None:
        self.path = path
        self.reports: dict[str, dict[str, Any]] = {}
        self.collect_errors: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when in _PHASES:
            phases = self.reports.setdefault(report.nodeid, {})
            phases[report.when] = (report.outcome, hasattr(report, "wasxfail"))

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(report.nodeid)

    @staticmethod
    def outcome(phases: dict[str, tuple[str, bool]]) -> str:
        setup = phases.get("setup", ("passed", False))
        call = phases.get("call")
        teardown = phases.get("teardown", ("passed", False))
        if setup[0] == "failed":
            return "error"
        if setup[0] == "skipped":
            return "xfailed" if setup[1] else "skipped"
        if call is not None:
            if call[0] == "failed":
                return "failed"
            if call[0] == "skipped":
                return "xfailed" if call[1] else "skipped"
            if call[1]:
                return "xpassed"
        if teardown[0] == "failed":
            return "error"
        return "passed" if call is not None else "error"

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        result = {nodeid: self.outcome(phases) for nodeid, phases in self.reports.items()}
        for nodeid in self.collect_errors:
            result[nodeid or "<session>"] = "collect-error"
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(dict(sorted(result.items())), handle, indent=0)
            handle.write("\n")


# --- tracing -----------------------------------------------------------------------


class _RecordingModule:
    """A module stand-in that notes every call of one of its functions, then makes it."""

    def __init__(self, real: types.ModuleType, note: Callable[[], None]) -> None:
        self._real = real
        self._note = note

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._real, name)
        if callable(value) and not isinstance(value, type):
            self._note()
        return value


def _recording(original: Any, note: Callable[[], None]) -> Any:
    if isinstance(original, types.ModuleType):
        return _RecordingModule(original, note)
    import functools

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def recording_async(*args: Any, **kwargs: Any) -> Any:
            note()
            return await original(*args, **kwargs)

        return recording_async

    @functools.wraps(original)
    def recording(*args: Any, **kwargs: Any) -> Any:
        note()
        return original(*args, **kwargs)

    return recording


class _Trace:
    """Rebinds every name ``install()`` would replace (with the machinery install()
    uses, so every module that imported a helper is covered) to a wrapper that notes
    the test running, then calls the SDK's own object."""

    def __init__(self, path: str) -> None:
        # pytest-xdist names each worker in its environment before pytest starts there.
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.path = f"{path}.{worker}" if worker else path
        self.current: str | None = None
        self.reached: dict[str, set[str]] = {}

    def noting(self, group: str) -> Callable[[], None]:
        def note() -> None:
            if self.current is not None:
                self.reached.setdefault(self.current, set()).add(group)

        return note

    def start(self) -> None:
        from histcore.openai_agents import _patches, _table
        from histcore.openai_agents._watch import Watch

        for group in _table.GROUPS:
            if not group.available():
                continue  # its extra is not installed: no test can reach it
            module = importlib.import_module(group.module)
            planned = []
            note = self.noting(group.name)
            for target in group.targets:
                original = getattr(target.holder(module), target.attr)
                planned.append(
                    _patches.Planned(target, original, _recording(original, note), Watch([]))
                )
            _patches.bind(group, planned)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        self.current = item.nodeid
        yield
        self.current = None

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        with open(self.path, "w", encoding="utf-8") as handle:
            handle.writelines(
                f"{nodeid}\t{','.join(sorted(groups))}\n"
                for nodeid, groups in sorted(self.reached.items())
            )


# --- selection ---------------------------------------------------------------------


class _Select:
    """Deselects every collected test the list names neither by id nor by file."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as handle:
            lines = [line.split("\t", 1)[0].strip() for line in handle]
        entries = {line for line in lines if line and not line.startswith("#")}
        self.ids = {entry for entry in entries if "::" in entry}
        self.files = entries - self.ids

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            listed = item.nodeid in self.ids or item.nodeid.split("::", 1)[0] in self.files
            (kept if listed else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        found = len({item.nodeid for item in kept} & self.ids)
        sys.stderr.write(
            f"histcore_sdk_plugin: selected {len(kept)} of {len(kept) + len(dropped)} tests "
            f"({found} of {len(self.ids)} listed ids collected)\n"
        )


def _skip_caret_anchors() -> None:
    """On CPython 3.11.0-3.11.7, never parse a traceback line to draw its carets.

    Those releases keep one AST-recursion counter for the whole interpreter
    (python/cpython gh-106905, fixed in 3.11.8). When the collector finalises an
    un-awaited Task inside pytest's own ``ast.parse`` and asyncio logs it, the logged
    traceback's caret drawing parses again, and pytest ends the session with
    ``SystemError: AST constructor recursion depth mismatch``. Whether that happens
    depends only on when the collector runs, which anything allocating moves (the
    guard, ``--junitxml``): so every run of every mode skips the caret drawing, which
    changes only how a traceback is drawn, never an outcome.
    """
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:3] < (3, 11, 8):
        return
    import traceback

    if hasattr(traceback, "_extract_caret_anchors_from_line_segment"):
        traceback._extract_caret_anchors_from_line_segment = lambda segment: None  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    _skip_caret_anchors()
    outcomes = config.getoption("histcore_outcomes")
    if outcomes and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Outcomes(os.path.abspath(outcomes)), "histcore-outcomes")
    selection = config.getoption("histcore_select")
    if selection:
        config.pluginmanager.register(_Select(os.path.abspath(selection)), "histcore-select")
