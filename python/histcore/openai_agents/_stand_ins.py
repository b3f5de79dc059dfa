"""Stand-ins for a standard library module inside one SDK module (``copy``, ``json``):
the calls they speed up are their own methods, every other attribute is the module's."""

from __future__ import annotations

import copy as stdlib_copy
import json as stdlib_json
from types import ModuleType
from typing import Any

from histcore.engine.exact_json import loads_like_stdlib
from histcore.openai_agents._copies import deep_copy
from histcore.openai_agents._watch import Watch, intact

__all__ = ["CopyModule", "JsonModule"]


_ABSENT = object()


class _ModuleStandIn:
    """Stands in for a standard library module inside one SDK module: the calls it
    speeds up are its own methods, every other attribute is the module's.

    Its methods take their own path only while the module's functions they stand for
    (``SPED_UP``) and what those look up are the ones seen when the watch was armed:
    a patched ``json.loads`` or ``copy.deepcopy`` is called, as the SDK would.
    """

    SPED_UP: tuple[str, ...] = ()
    _OWN = frozenset({"_real", "_unchanged", "_saved"})

    def __init__(self, real: ModuleType, watch: Watch | None = None) -> None:
        self._real = real
        self._unchanged = intact(watch)
        #: what the module held before a patch made through the stand-in (to undo it)
        self._saved: dict[str, Any] = {}

    # A patch made through the SDK module's name (``mock.patch("...session_persistence.
    # copy.deepcopy", f)``, ``sqlite_session.json.dumps = f``) patches the module itself,
    # as it does without the stand-in; the watch then sends every call to it.
    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN or name.startswith("__"):
            object.__setattr__(self, name, value)  # the stand-in's own state (its class)
            return
        real = self._real
        if getattr(value, "__self__", None) is self:
            # A patch undone by putting back what getattr gave: the stand-in's method.
            if name in self._saved:
                self._restore(name)
            return
        self._saved.setdefault(name, vars(real).get(name, _ABSENT))
        setattr(real, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._saved:
            self._restore(name)
        else:
            delattr(self._real, name)

    def _restore(self, name: str) -> None:
        before = self._saved.pop(name)
        if before is _ABSENT:
            delattr(self._real, name)
        else:
            setattr(self._real, name, before)

    @classmethod
    def watch_for(cls, real: ModuleType) -> Watch:
        """A watch over the functions of ``real`` this stand-in speeds up."""
        namespace = vars(real)
        return Watch.over(
            [namespace[name] for name in cls.SPED_UP], [(namespace, name) for name in cls.SPED_UP]
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return f"<histcore {type(self).__name__} over {self._real!r}>"


class CopyModule(_ModuleStandIn):
    """Stands in for ``copy``: ``deepcopy`` of a list of plain dict items is made in C
    (``_copies.deep_copy``); every other call is the standard library's."""

    SPED_UP = ("deepcopy",)

    def __init__(self, real: ModuleType = stdlib_copy, watch: Watch | None = None) -> None:
        super().__init__(real, watch)

    def deepcopy(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and type(x) is list and self._unchanged():
            copied = deep_copy(x)
            if copied is not None:
                return copied
        return self._real.deepcopy(x, *args, **kwargs)


class JsonModule(_ModuleStandIn):
    """Stands in for ``json`` inside the SDK's SQLite session module.

    ``loads(text)`` reads with orjson where that gives exactly what ``json.loads``
    gives: text that may hold an integer beyond 64 bits (19 or more digits in a row,
    which orjson would read as a float) and text orjson refuses (NaN and Infinity
    tokens, lone surrogates, a BOM, other encodings, non-text values) go to the
    standard library, so the SDK sees its results and exceptions. Every other call
    (``dumps`` included, so stored text stays byte for byte the SDK's) is the standard
    library's.
    """

    SPED_UP = ("loads",)

    def __init__(self, real: ModuleType = stdlib_json, watch: Watch | None = None) -> None:
        super().__init__(real, watch)

    def reads_exactly(self) -> bool:
        """Whether ``loads`` is this stand-in's, with what it stands for unchanged (so a
        row it would read with orjson may be read with orjson directly)."""
        return bool(self._unchanged())

    def loads(self, s: Any, *args: Any, **kwargs: Any) -> Any:
        kind = type(s)
        if args or kwargs or (kind is not str and kind is not bytes) or not self._unchanged():
            return self._real.loads(s, *args, **kwargs)
        return loads_like_stdlib(s)
