"""Call back when a named module has just been imported: a ``sys.meta_path`` finder.

``install()`` replaces methods in modules of the SDK's optional extras (its SQLAlchemy,
aiosqlite and cryptography sessions). Importing those modules at install would load
the extras' packages into every process that installs, used or not; so a group whose
module is not imported yet waits here, and is bound right after the module's own code
ran, before any importer gets it.

The finder asks the other finders for the module's spec and wraps its loader; the
module gets its real loader back before its code runs, so it looks as if imported
without us. A module imported before ``watch`` is not seen: the caller checks
``sys.modules`` after watching (docs/design.md, "Drop-in accelerator").
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["unwatch", "watch", "watched"]

Callback = Callable[[ModuleType], None]


class _Loader(importlib.abc.Loader):
    """The module's own loader, and the callback after its ``exec_module``."""

    def __init__(self, loader: importlib.abc.Loader, callback: Callback) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._callback(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.callbacks: dict[str, Callback] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        callback = self.callbacks.get(fullname)
        if callback is None:
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        if spec is None:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, callback)
        return spec


_LOCK = threading.Lock()
_finder = _Finder()


def watch(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once the module ``name`` has been imported (in the
    importing thread, under the module's import lock), until ``unwatch(name)``."""
    with _LOCK:
        _finder.callbacks[name] = callback
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def unwatch(name: str) -> None:
    """Stop watching ``name``; the finder leaves ``sys.meta_path`` once nothing is watched."""
    with _LOCK:
        _finder.callbacks.pop(name, None)
        if not _finder.callbacks and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)


def watched() -> tuple[str, ...]:
    """The names being watched."""
    with _LOCK:
        return tuple(_finder.callbacks)
