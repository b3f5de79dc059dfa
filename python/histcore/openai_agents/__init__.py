"""Drop-in accelerator for the OpenAI Agents SDK (``openai-agents``).

``install()`` swaps the SDK's pure-Python history helpers for histcore's in every SDK
module that imported them; results are the SDK's on every input::

    histcore.openai_agents.install()          # idempotent
    histcore.openai_agents.uninstall()        # every original back
    with histcore.openai_agents.installed():  # only inside the block
        ...

Supported: openai-agents >=0.22,<0.25; another release gets a warning, and only helpers
whose source histcore was tested against are replaced. A replacement takes its own path
only where its answer is the SDK's and nothing its original looks up was rebound since
``install()``. Details: docs/design.md, "Drop-in accelerator".
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from histcore.engine.units import check_dangling
from histcore.openai_agents import _patches, _post_import, _table
from histcore.openai_agents._guard_counts import GuardCounts
from histcore.openai_agents._guard_link import GuardLink
from histcore.openai_agents._versions import INSTALL_HINT, SUPPORTED, is_supported, sdk_version
from histcore.openai_agents._watch import Watch

__all__ = [
    "GuardCounts",
    "Installation",
    "install",
    "installation",
    "installed",
    "is_installed",
    "uninstall",
]


@dataclass(frozen=True)
class Installation:
    """What ``install()`` did: the SDK version, the helpers replaced, what was left alone."""

    sdk_version: str | None
    supported: bool
    #: replaced names, ``module.attr``, each binding listed
    replaced: tuple[str, ...]
    #: helper group -> why it was left alone
    skipped: dict[str, str] = field(default_factory=dict)
    #: groups of an SDK extra's module not imported yet: each is bound (and moves to
    #: ``replaced`` or ``skipped``) right after the program imports that module
    waiting: tuple[str, ...] = ()
    #: with ``guard=True``: the guard's live counts (model inputs checked and repaired,
    #: items dropped, the rule kinds it dropped for, warnings logged); otherwise None
    guard: GuardCounts | None = None


_LOCK = threading.RLock()
_bindings: list[_patches.Binding] = []
_guard_bindings: list[_patches.Binding] = []
#: the guard put over a run-loop dedupe rebound after install (``_guard``), still bound
_rebound: list[_patches.Binding] = []
_watches: list[Watch] = []
#: the groups waiting for their module's import (``_post_import``), by module
_waiting: dict[str, list[_patches.Group]] = {}
#: the link of the installed dedupe and the guard (``_guard_link``), one per installation
_link = GuardLink()
_current: Installation | None = None


def _import_sdk() -> None:
    try:
        importlib.import_module(_table.PACKAGE)
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc


def _bind(
    groups: tuple[_patches.Group, ...], skipped: dict[str, str], context: _patches.Context
) -> tuple[list[_patches.Binding], list[Watch]]:
    """Bind every recognised group (noting why the others were skipped); on any error
    unbind what this call bound and raise."""
    bindings: list[_patches.Binding] = []
    watches: list[Watch] = []
    try:
        for group in groups:
            reason = _patches.recognise(group)
            if reason is not None:
                skipped[group.name] = reason
                continue
            planned = _patches.plan(group, context)
            watches += [entry.watch for entry in planned]
            bindings += _patches.bind(group, planned)
    except BaseException:
        _patches.unbind(bindings)
        raise
    return bindings, watches


def install(*, guard: bool = False, dangling: str = "drop") -> Installation:
    """Replace the SDK's history helpers with histcore's. A second call changes nothing,
    except that ``guard=True`` adds the guard to an installation without it.

    ``guard=True`` also checks every model input the SDK is about to send against the
    model-input rules and drops the units that break them (user messages never), with
    one WARNING on the ``histcore.openai_agents`` logger per session and problem (the
    counts in ``installation().guard`` include every repair); the store is never written
    (``histcore doctor --fix`` repairs it). Without it the SDK's inputs are sent as the
    SDK builds them. ``dangling="synthesize"`` (with ``guard=True``) keeps a function or
    custom tool call whose output is missing, with a marked output after it
    (``histcore.items.LOST_OUTPUT_TEXT``), instead of dropping it (``repair_input``).

    Raises ValueError for a ``dangling`` other than ``"drop"`` and ``"synthesize"``, for
    ``"synthesize"`` without ``guard=True``, and for one other than the installed guard's.

    The SDK's sessions of its optional extras (aiosqlite, SQLAlchemy, cryptography) are
    replaced once the program imports their module, not at install, which would load
    the extras' packages into every process (``Installation.waiting``).

    Raises ImportError (saying how to install the extra) when the SDK is missing.
    Warns when the SDK version is not a supported one or a helper is not recognised;
    such helpers are left as they are. On any error nothing stays replaced.
    """
    global _current, _link
    if check_dangling(dangling) and not guard:
        raise ValueError("dangling='synthesize' is the guard's: pass guard=True too")
    with _LOCK:
        installed = None if _current is None else _current.guard
        if guard and installed is not None and installed.dangling != dangling:
            raise ValueError(
                f"the guard is installed with dangling={installed.dangling!r}, not "
                f"{dangling!r}: uninstall() first"
            )
        if _current is not None and (not guard or _current.guard is not None):
            return _current
        _import_sdk()
        version = sdk_version()
        supported = is_supported(version)
        skipped: dict[str, str] = {}
        bindings: list[_patches.Binding] = []
        watches: list[Watch] = []
        if _current is None:
            _link = GuardLink()
            now = tuple(g for g in _table.GROUPS if not _waits(g))
            bindings, watches = _bind(now, skipped, _patches.Context(_link))
        counts = GuardCounts(dangling) if guard else None
        if counts is not None:
            context = _patches.Context(_link, counts, _rebinder(counts))
            try:
                guarded, _ = _bind(_table.GUARD_GROUPS, skipped, context)
            except BaseException:
                _patches.unbind(bindings)
                raise
            if "guard" in skipped:
                _patches.unbind(guarded)
                guarded, counts = [], None
            _guard_bindings[:] = guarded
        _bindings.extend(bindings)
        _watches.extend(watches)
        # Only now does every watched name hold what it will hold while installed
        # (later groups rebind names that earlier replacements watch).
        for watch in _watches:
            watch.arm()
        first = _current is None
        previous = {} if _current is None else _current.skipped
        _current = Installation(
            sdk_version=version,
            supported=supported,
            replaced=_replaced(),
            skipped={**previous, **skipped},
            waiting=() if _current is None else _current.waiting,
            guard=counts,
        )
        if first:
            _wait_for_imports(tuple(g for g in _table.GROUPS if _waits(g)))
    if (not supported and not previous) or skipped:
        _warn(version, supported, skipped)
    return _current


def _replaced() -> tuple[str, ...]:
    return tuple(b.where for b in [*_bindings, *_guard_bindings])


def _waits(group: _patches.Group) -> bool:
    """Whether ``group`` belongs to an SDK extra's module not imported yet (one this
    release lacks is recognised now, and skipped with the reason)."""
    return (
        bool(group.needs)
        and group.module not in sys.modules
        and group.available()
        and importlib.util.find_spec(group.module) is not None
    )


def _wait_for_imports(groups: tuple[_patches.Group, ...]) -> None:
    """Bind each of ``groups`` once its module is imported (now, if it already is: it may
    have been imported by another thread since ``_waits`` looked)."""
    global _current
    for group in groups:
        _waiting.setdefault(group.module, []).append(group)
        _post_import.watch(group.module, _imported)
    if _current is not None:
        _current = replace(_current, waiting=tuple(g.name for g in groups))
    for module in list(_waiting):
        if module in sys.modules:
            _imported(sys.modules[module])


def _stop_waiting() -> None:
    for module in _waiting:
        _post_import.unwatch(module)
    _waiting.clear()


def _imported(module: ModuleType) -> None:
    """Bind the groups waiting for ``module``, just imported. Never raises: a group that
    cannot be bound is skipped with a warning, as at install."""
    global _current
    with _LOCK:
        _post_import.unwatch(module.__name__)
        groups = tuple(_waiting.pop(module.__name__, ()))
        if _current is None or not groups:
            return
        skipped: dict[str, str] = {}
        try:
            bindings, watches = _bind(groups, skipped, _patches.Context(_link))
        except Exception as exc:  # the program's import must not fail for histcore
            bindings, watches = [], []
            skipped.update({g.name: f"binding failed: {exc!r}" for g in groups})
        # Arm only these: the others' watches keep what they noted at install.
        for watch in watches:
            watch.arm()
        _bindings.extend(bindings)
        _watches.extend(watches)
        names = {g.name for g in groups}
        _current = replace(
            _current,
            replaced=_replaced(),
            skipped={**_current.skipped, **skipped},
            waiting=tuple(name for name in _current.waiting if name not in names),
        )
        version, supported = _current.sdk_version, _current.supported
    if skipped:
        _warn(version, supported, skipped, stacklevel=2)


def _rebinder(counts: GuardCounts) -> _patches.Rebind:
    """How the guard counting in ``counts`` re-guards a binding made since install."""

    def rebind(module: ModuleType, attr: str, binding: Any, build: Callable[[Any], Any]) -> None:
        with _LOCK:
            if (
                _current is None
                or _current.guard is not counts
                or not callable(binding)
                or vars(module).get(attr) is not binding
            ):
                return
            replacement = build(binding)
            setattr(module, attr, replacement)
            # Only the re-guards still bound have anything to put back (bounded memory).
            _rebound[:] = [b for b in _rebound if getattr(b.module, b.attr, None) is b.replacement]
            _rebound.append(_patches.Binding(module, attr, binding, replacement))

    return rebind


def _warn(
    version: str | None, supported: bool, skipped: dict[str, str], stacklevel: int = 3
) -> None:
    low, high = SUPPORTED
    warnings.warn(
        f"histcore.openai_agents: openai-agents {version or '(unknown version)'} "
        + (
            ""
            if supported
            else f"is not a supported release (>={low[0]}.{low[1]},<{high[0]}.{high[1]}); "
        )
        + (
            "left unreplaced: " + "; ".join(f"{name} ({why})" for name, why in skipped.items())
            if skipped
            else "all helpers recognised"
        ),
        RuntimeWarning,
        stacklevel=stacklevel,
    )


def _drop_guard() -> None:
    """Take the guard out of the current installation, the helpers staying."""
    global _current
    _patches.unbind([*_guard_bindings, *_rebound])
    _guard_bindings.clear()
    _rebound.clear()
    for watch in _watches:
        watch.arm()
    if _current is not None:
        _current = replace(_current, guard=None, replaced=_replaced())


def uninstall() -> None:
    """Put back every original helper ``install()`` replaced. Does nothing if not installed."""
    global _current, _link
    with _LOCK:
        if _current is None:
            return
        _stop_waiting()
        _patches.unbind([*_bindings, *_guard_bindings, *_rebound])
        _bindings.clear()
        _guard_bindings.clear()
        _rebound.clear()
        # A replacement someone still holds now just calls the SDK's original.
        for watch in _watches:
            watch.disarm()
        _watches.clear()
        _current = None
        _link = GuardLink()


def is_installed() -> bool:
    """Whether histcore's helpers are currently installed into the SDK."""
    return _current is not None


def installation() -> Installation | None:
    """The current ``Installation``, or None when not installed."""
    return _current


@contextmanager
def installed(*, guard: bool = False, dangling: str = "drop") -> Iterator[Installation]:
    """Install (``install(guard=guard, dangling=dangling)``) for the duration of a
    ``with`` block, then restore the previous state."""
    with _LOCK:
        was_installed = _current is not None
        was_guarded = was_installed and _current is not None and _current.guard is not None
        current = install(guard=guard, dangling=dangling)
    try:
        yield current
    finally:
        with _LOCK:
            if not was_installed:
                uninstall()
            elif not was_guarded and _current is not None and _current.guard is not None:
                _drop_guard()
