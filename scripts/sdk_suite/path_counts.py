"""Counting the calls that took histcore's own path, per replaced helper group.

A proof comparing the SDK's outcomes with and without ``install()`` proves nothing about
histcore if every replacement fell back to the SDK's original. So ``start(DIR)`` (the
SDK-suite plugin, with ``HISTCORE_DROPIN_COUNTS=DIR``) hands the drop-in's binding a
``wrap`` hook (``_patches.wrap_targets``): each replacement of ``_table.GROUPS`` that a
later ``install()`` plans is built over a counting stand-in of its original (each call
a *fallback*) and bound as a counting wrapper (each call a *call*); a replacement falls
back at most once a call, so ``calls - fallbacks`` is what histcore answered itself.
The wrappers keep names, docstrings, signatures, globals and coroutine-ness, so the
SDK, the builders and the watches see what they would.

Each process writes ``DIR/dropin-counts-<pid>.json`` at exit and on ``flush()``:
``{"pid": ..., "groups": {group: {target: [calls, fallbacks]}}}``.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import threading
import types
from collections.abc import Callable
from typing import Any

from histcore.openai_agents import _patches, _table

__all__ = ["ENVIRONMENT", "Tally", "counts", "flush", "own_paths", "start", "stop", "wrap"]

ENVIRONMENT = "HISTCORE_DROPIN_COUNTS"

# A histcore module's name for the wrappers, so that the watches (``_watch``) follow
# ``__wrapped__`` through them to the SDK's code, as through histcore's own wrappers.
_MODULE = "histcore.openai_agents"


class Tally:
    """The calls of one target's replacement and of its original (the fallbacks)."""

    __slots__ = ("_module", "calls", "fallbacks", "group", "target")

    def __init__(self, group: str, target: str) -> None:
        self.group = group
        self.target = target
        self.calls = 0
        self.fallbacks = 0
        self._module: _CountingModule | None = None

    def original(self, original: Any) -> Any:
        """What the replacement's builder gets in place of ``original``."""
        if isinstance(original, types.ModuleType):
            self._module = _CountingModule(original, self)
            return self._module
        return _counting_original(original, self)

    def replacement(self, replacement: Any) -> Any:
        """What is bound in place of ``replacement`` (built over ``original(...)``)."""
        sped_up = getattr(type(replacement), "SPED_UP", None)
        if self._module is not None and isinstance(sped_up, tuple):
            # A module stand-in: its sped-up methods are the calls, the module's
            # functions of those names the fallbacks.
            self._module.counted = frozenset(sped_up)
            replacement.__class__ = _counting_class(type(replacement), sped_up, self)
            return replacement
        return _counting_replacement(replacement, self)


_LOCK = threading.Lock()
_tallies: dict[tuple[str, str], Tally] = {}
_directory: str | None = None


def start(directory: str) -> None:
    """Count from the next ``install()`` on, writing to ``directory`` at exit."""
    global _directory
    with _LOCK:
        if _directory is None:
            atexit.register(flush)
        _directory = directory
    _patches.wrap_targets(wrap)


def stop() -> None:
    """Build later installs' replacements uncounted again (the counts so far stay)."""
    _patches.wrap_targets(None)


def _tally(group: str, target: str) -> Tally:
    with _LOCK:
        tally = _tallies.get((group, target))
        if tally is None:
            tally = _tallies[(group, target)] = Tally(group, target)
        return tally


def wrap(
    group: _patches.Group,
    target: _patches.Target,
    original: Any,
    build: Callable[[Any], Any],
    site: _patches.Site,
) -> Any:
    """The ``_patches.Wrap`` hook: a drop-in of ``_table.GROUPS`` built over a counting
    original and bound counting; any other group (the guard's) as it is."""
    if not any(group is known for known in _table.GROUPS):
        return build(original)
    tally = _tally(group.name, target.attr)
    replacement = build(tally.original(original))
    bound = tally.replacement(replacement)
    link = site.context.link
    checked = link.checked_of(replacement)
    if checked is not None:
        # The guard's dedupe that also checks: a call when the engine answered it (when it
        # declines, the guard calls the dedupe itself, which counts as a call anyway).
        def counted_checked(*args: Any) -> Any:
            result = checked(*args)
            if result is not NotImplemented:
                tally.calls += 1
            return result

        link.record(bound, counted_checked)
    return bound


def counts() -> dict[str, dict[str, list[int]]]:
    """``{group: {target: [calls, fallbacks]}}`` of this process so far."""
    result: dict[str, dict[str, list[int]]] = {}
    for tally in list(_tallies.values()):
        result.setdefault(tally.group, {})[tally.target] = [tally.calls, tally.fallbacks]
    return result


def own_paths() -> dict[str, int]:
    """Per group, the calls histcore answered itself in this process so far."""
    return {
        group: sum(calls - fallbacks for calls, fallbacks in targets.values())
        for group, targets in counts().items()
    }


def flush() -> None:
    """Write this process's counts to its file in the directory (when counting)."""
    if _directory is None:
        return
    os.makedirs(_directory, exist_ok=True)
    path = os.path.join(_directory, f"dropin-counts-{os.getpid()}.json")
    data = {"pid": os.getpid(), "groups": counts()}
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=True)
    os.replace(temporary, path)


def _forget_in_child() -> None:
    # A forked child starts from nothing: its parent's calls are its parent's to report.
    for tally in _tallies.values():
        tally.calls = tally.fallbacks = 0


os.register_at_fork(after_in_child=_forget_in_child)


def _dressed(wrapper: Any, wrapped: Any) -> Any:
    functools.update_wrapper(wrapper, wrapped)
    # histcore's module, so the watches follow ``__wrapped__`` to the SDK's code.
    wrapper.__module__ = _MODULE
    return wrapper


def _counting_original(original: Any, tally: Tally) -> Any:
    if inspect.iscoroutinefunction(original):

        async def fallback_async(*args: Any, **kwargs: Any) -> Any:
            tally.fallbacks += 1
            return await original(*args, **kwargs)

        template: Any = fallback_async
    else:

        def fallback(*args: Any, **kwargs: Any) -> Any:
            tally.fallbacks += 1
            return original(*args, **kwargs)

        template = fallback
    globals_ = getattr(original, "__globals__", None)
    if isinstance(globals_, dict):
        # The original's globals (a builder may read them); the code reads none.
        template = types.FunctionType(
            template.__code__, globals_, template.__name__, None, template.__closure__
        )
    return _dressed(template, original)


def _counting_replacement(replacement: Any, tally: Tally) -> Any:
    if inspect.iscoroutinefunction(replacement):

        async def counted_async(*args: Any, **kwargs: Any) -> Any:
            tally.calls += 1
            return await replacement(*args, **kwargs)

        return _dressed(counted_async, replacement)

    def counted(*args: Any, **kwargs: Any) -> Any:
        tally.calls += 1
        return replacement(*args, **kwargs)

    return _dressed(counted, replacement)


class _CountingModule:
    """A module as a stand-in's ``_real``: calls of the functions the stand-in speeds up
    (``counted``) are its fallbacks; every attribute is read from the module when asked
    for, so a function patched there is the one called."""

    def __init__(self, real: types.ModuleType, tally: Tally) -> None:
        self._counting_real = real
        self._counting_tally = tally
        self.counted: frozenset[str] = frozenset()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._counting_real, name)
        if name not in self.counted or not callable(value):
            return value
        tally = self._counting_tally

        @functools.wraps(value)
        def fallback(*args: Any, **kwargs: Any) -> Any:
            tally.fallbacks += 1
            return value(*args, **kwargs)

        return fallback

    def __repr__(self) -> str:
        return repr(self._counting_real)


def _counting_class(base: type, names: tuple[str, ...], tally: Tally) -> type:
    """A subclass of the stand-in ``base`` whose ``names`` methods count their calls."""
    namespace: dict[str, Any] = {"__module__": base.__module__, "__qualname__": base.__qualname__}
    for name in names:
        namespace[name] = _counting_method(getattr(base, name), tally)
    return type(base.__name__, (base,), namespace)


def _counting_method(method: Any, tally: Tally) -> Any:
    @functools.wraps(method)
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        tally.calls += 1
        return method(self, *args, **kwargs)

    return counted
