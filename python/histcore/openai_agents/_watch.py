"""Noticing, cheaply, that a caller rebound something an SDK helper looks up.

The SDK's helpers read module globals when they run: ``json.dumps`` through the
module's ``json``, ``copy.deepcopy``, their own helper functions and constants. A test
(or a caller) may rebind any of them, ``monkeypatch.setattr(items, "json", fake)`` or
``monkeypatch.setattr(items, "_coerce_to_dict", failing)``, and the original then sees
the new object. A replacement that takes its own path would silently ignore that.

So each replacement carries a ``Watch`` over what its original looks up: every module
global its code names, followed through the SDK functions it calls (in whatever
module they live) and into the attributes it names on the standard library modules it
uses (``json.dumps``, ``copy.deepcopy``). ``install()`` arms the watches once every
group is bound, noting the object each name holds then; each call compares them by
identity (a C-level pass over a few dozen names, not per-item work) and, when any
differs, the replacement calls the SDK's original, which then sees the rebinding.
An unarmed watch (during install, or after a failed one) also sends calls to the
original.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import is_
from typing import Any

__all__ = ["Watch", "looked_up"]

# Names whose objects are typing constructs (``cast``, ``Any``): rebinding them does
# not change what a helper computes.
_IGNORED_MODULES = frozenset({"typing", "typing_extensions", "builtins"})

Namespace = dict[str, Any]


def _names_used(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def _original_of(value: Any) -> Any:
    """The SDK function behind a histcore replacement (``functools.wraps``' record)."""
    while (
        isinstance(value, types.FunctionType)
        and str(getattr(value, "__module__", "")).startswith("histcore.")
        and hasattr(value, "__wrapped__")
    ):
        value = value.__wrapped__
    return value


def _is_sdk_function(value: Any) -> bool:
    return isinstance(value, types.FunctionType) and str(value.__module__).split(".")[0] == "agents"


def looked_up(
    functions: Iterable[Callable[..., Any]], extra: Iterable[tuple[Namespace, str]] = ()
) -> list[tuple[Namespace, str]]:
    """The (namespace, name) pairs what ``functions`` compute depends on.

    Module globals their code names (some attribute names also match a global: extra
    checks, harmless), the same for every SDK function reached that way, and, for a
    global holding a module from outside the SDK (``json``, ``copy``), the attributes
    of that module the code names. ``extra`` pairs are added as given.
    """
    found: dict[tuple[int, str], tuple[Namespace, str]] = {}
    seen: set[types.CodeType] = set()
    queue = [_original_of(function) for function in functions]
    while queue:
        function = queue.pop()
        if not isinstance(function, types.FunctionType) or function.__code__ in seen:
            continue
        seen.add(function.__code__)
        namespace = function.__globals__
        names = _names_used(function.__code__)
        for name in sorted(names & namespace.keys()):
            value = namespace[name]
            if getattr(value, "__module__", None) in _IGNORED_MODULES:
                continue
            found.setdefault((id(namespace), name), (namespace, name))
            target = _original_of(value)
            if _is_sdk_function(target):
                queue.append(target)
            elif isinstance(value, types.ModuleType) and not value.__name__.startswith("agents"):
                attributes = vars(value)
                for attr in sorted(names & attributes.keys()):
                    found.setdefault((id(attributes), attr), (attributes, attr))
    for namespace, name in extra:
        found.setdefault((id(namespace), name), (namespace, name))
    return list(found.values())


def _snapshot(value: Any) -> Any:
    """A copy of a mutable builtin container (compared with ``==`` later), else itself."""
    if type(value) in (dict, list, set):
        return type(value)(value)
    return value


class Watch:
    """Identity checks over the (namespace, name) pairs a helper's original reads."""

    __slots__ = ("_checks", "_contents", "_lookups", "_mutable", "armed")

    def __init__(
        self,
        lookups: Iterable[tuple[Namespace, str]],
        contents: Iterable[tuple[Namespace, str]] = (),
    ) -> None:
        grouped: dict[int, tuple[Namespace, list[str]]] = {}
        for namespace, name in lookups:
            grouped.setdefault(id(namespace), (namespace, []))[1].append(name)
        self._lookups = tuple((namespace, tuple(names)) for namespace, names in grouped.values())
        self._mutable = tuple(contents)
        self._checks: tuple[tuple[Callable[[str], Any], tuple[str, ...], tuple[Any, ...]], ...] = ()
        self._contents: tuple[tuple[Namespace, str, Any], ...] = ()
        self.armed = False

    @classmethod
    def over(
        cls,
        functions: Iterable[Callable[..., Any]],
        extra: Iterable[tuple[Namespace, str]] = (),
        contents: Iterable[tuple[Namespace, str]] = (),
    ) -> Watch:
        """A watch over what ``functions`` look up (``looked_up``) and ``extra``; the
        ``contents`` names (mutable constants such as a dict of types) are also
        compared by value, so a change made in place is noticed too."""
        contents = tuple(contents)
        return cls(looked_up(functions, [*extra, *contents]), contents)

    def arm(self) -> None:
        """Note what every watched name holds now (``install()``, after binding)."""
        self._checks = tuple(
            (namespace.get, names, tuple(map(namespace.get, names)))
            for namespace, names in self._lookups
        )
        self._contents = tuple(
            (namespace, name, _snapshot(namespace.get(name))) for namespace, name in self._mutable
        )
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    def intact(self) -> bool:
        """Whether every watched name still holds the object it held when armed (and
        every watched constant the same value)."""
        if not self.armed:
            return False
        for get, names, expected in self._checks:
            if not all(map(is_, map(get, names), expected)):
                return False
        for namespace, name, value in self._contents:
            if namespace.get(name) != value:
                return False
        return True

    def names(self) -> list[str]:
        """The watched names, ``module.name`` (for tests and diagnostics)."""
        labels: list[str] = []
        for namespace, names in self._lookups:
            owner = namespace.get("__name__", "?")
            labels += map(".".join, zip(repeat(str(owner)), names, strict=False))
        return labels
