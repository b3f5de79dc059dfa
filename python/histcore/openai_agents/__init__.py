"""Drop-in accelerator for the OpenAI Agents SDK (``openai-agents``).

``install()`` swaps the SDK's pure-Python history helpers (dedupe keys, first-wins and
latest-value dedupe, orphan-call pruning, item fingerprints, the session-callback
key/frequency/reference maps, and the whole-history copies of a turn) for
histcore-backed ones, in every SDK module that imported them. Results are the SDK's
on every input: where histcore could answer differently, the SDK's own helper runs.

    import histcore.openai_agents

    histcore.openai_agents.install()          # idempotent
    ...
    histcore.openai_agents.uninstall()        # every original back

    with histcore.openai_agents.installed():  # only inside the block
        ...

Supported: openai-agents >=0.22,<0.25. Another release gets a warning, and only the
helpers whose source is one histcore was tested against are replaced.

A replacement takes its own path only while nothing its original looks up (a module's
``json`` or ``copy``, a helper function, ``json.dumps``, a constant) has been rebound
since ``install()``; otherwise it calls the SDK's original, which sees the rebinding.

``histcore.openai_agents.testing.ScriptedModel`` is a ``Model`` for the SDK's ``Runner``
that needs no network: deterministic conversations for tests, with and without
``install()``.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from histcore.openai_agents import _patches
from histcore.openai_agents._versions import INSTALL_HINT, SUPPORTED, is_supported, sdk_version
from histcore.openai_agents._watch import Watch

__all__ = [
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


_LOCK = threading.RLock()
_bindings: list[_patches.Binding] = []
_watches: list[Watch] = []
_current: Installation | None = None


def _import_sdk() -> None:
    try:
        importlib.import_module("agents")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc


def install() -> Installation:
    """Replace the SDK's history helpers with histcore's. A second call changes nothing.

    Raises ImportError (saying how to install the extra) when the SDK is missing.
    Warns when the SDK version is not a supported one or a helper is not recognised;
    such helpers are left as they are. On any error nothing stays replaced.
    """
    global _current
    with _LOCK:
        if _current is not None:
            return _current
        _import_sdk()
        version = sdk_version()
        supported = is_supported(version)
        skipped: dict[str, str] = {}
        bindings: list[_patches.Binding] = []
        watches: list[Watch] = []
        try:
            for group in _patches.GROUPS:
                reason = _patches.recognise(group)
                if reason is not None:
                    skipped[group.name] = reason
                    continue
                planned = _patches.plan(group)
                watches += [entry.watch for entry in planned]
                bindings += _patches.bind(group, planned)
        except BaseException:
            _patches.unbind(bindings)
            raise
        # Only now does every watched name hold what it will hold while installed
        # (later groups rebind names that earlier replacements watch).
        for watch in watches:
            watch.arm()
        _bindings[:] = bindings
        _watches[:] = watches
        _current = Installation(
            sdk_version=version,
            supported=supported,
            replaced=tuple(binding.where for binding in bindings),
            skipped=skipped,
        )
    if not supported or skipped:
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
            stacklevel=2,
        )
    return _current


def uninstall() -> None:
    """Put back every original helper ``install()`` replaced. Does nothing if not installed."""
    global _current
    with _LOCK:
        if _current is None:
            return
        _patches.unbind(_bindings)
        _bindings.clear()
        # A replacement someone still holds now just calls the SDK's original.
        for watch in _watches:
            watch.disarm()
        _watches.clear()
        _current = None


def is_installed() -> bool:
    """Whether histcore's helpers are currently installed into the SDK."""
    return _current is not None


def installation() -> Installation | None:
    """The current ``Installation``, or None when not installed."""
    return _current


@contextmanager
def installed() -> Iterator[Installation]:
    """Install for the duration of a ``with`` block, then restore the previous state."""
    with _LOCK:
        was_installed = _current is not None
        current = install()
    try:
        yield current
    finally:
        if not was_installed:
            uninstall()
