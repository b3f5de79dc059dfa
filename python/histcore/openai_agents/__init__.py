"""Drop-in accelerator for the OpenAI Agents SDK (``openai-agents``).

``install()`` swaps the SDK's pure-Python history helpers for histcore-backed ones, in
every SDK module that imported them; results are the SDK's on every input (where
histcore could answer differently, the SDK's own helper runs)::

    histcore.openai_agents.install()          # idempotent
    histcore.openai_agents.uninstall()        # every original back
    with histcore.openai_agents.installed():  # only inside the block
        ...

Supported: openai-agents >=0.22,<0.25; another release gets a warning, and only helpers
whose source histcore was tested against are replaced. A replacement takes its own path
only while nothing its original looks up has been rebound since ``install()``.
``testing.SDKScriptedModel`` is a network-free ``Model`` for tests. What is replaced and
why: docs/design.md, "Drop-in accelerator".
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from histcore.engine.units import check_dangling
from histcore.openai_agents import _patches, _table
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
    #: with ``guard=True``: the guard's live counts (model inputs checked and repaired,
    #: items dropped, the rule kinds it dropped for, warnings logged); otherwise None
    guard: GuardCounts | None = None


_LOCK = threading.RLock()
_bindings: list[_patches.Binding] = []
_guard_bindings: list[_patches.Binding] = []
#: the guard put over a run-loop dedupe rebound after install (``_guard``), still bound
_rebound: list[_patches.Binding] = []
_watches: list[Watch] = []
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
            bindings, watches = _bind(_table.GROUPS, skipped, _patches.Context(_link))
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
        previous = {} if _current is None else _current.skipped
        _current = Installation(
            sdk_version=version,
            supported=supported,
            replaced=tuple(b.where for b in [*_bindings, *_guard_bindings]),
            skipped={**previous, **skipped},
            guard=counts,
        )
    if (not supported and not previous) or skipped:
        _warn(version, supported, skipped)
    return _current


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


def _warn(version: str | None, supported: bool, skipped: dict[str, str]) -> None:
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
        stacklevel=3,
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
        _current = replace(_current, guard=None, replaced=tuple(b.where for b in _bindings))


def uninstall() -> None:
    """Put back every original helper ``install()`` replaced. Does nothing if not installed."""
    global _current, _link
    with _LOCK:
        if _current is None:
            return
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
