"""Noticing, cheaply, that a caller rebound something an SDK helper looks up.

The SDK's helpers read module globals when they run: ``json.dumps`` through the
module's ``json``, ``copy.deepcopy``, their own helper functions and constants. A test
may rebind any of them (``monkeypatch.setattr(items, "_coerce_to_dict", failing)``), and
the original then sees the new object; a replacement taking its own path would not.

So each replacement carries a ``Watch`` over what its original looks up: every module
global its code names, followed through the SDK functions it calls and into the
attributes it names of the modules from outside the SDK it uses (``json``, ``copy``).
``install()`` arms the watches once every group is bound; each call compares the names
by identity (the engine's ``NameWatch``) and, when any differs or the watch is unarmed
(during install, or after a failed one), sends the call to the SDK's original, which
sees the rebinding. Details: docs/design.md, "Drop-in accelerator" ("Rebinding").
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

from histcore.engine import _support as engine_support

__all__ = ["Watch", "intact", "looked_up", "names_used"]

# Names whose objects are typing constructs (``cast``, ``Any``): rebinding them does
# not change what a helper computes.
_IGNORED_MODULES = frozenset({"typing", "typing_extensions", "builtins"})

Namespace = dict[str, Any]


def names_used(code: types.CodeType) -> set[str]:
    """The global and attribute names ``code`` mentions, its nested functions' included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_used(const)
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
        names = names_used(function.__code__)
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


class Watch:
    """Identity checks over the (namespace, name) pairs a helper's original reads, made
    by the engine's ``NameWatch`` (a few dict lookups per call on the Rust engine)."""

    __slots__ = ("_lookups", "check")

    def __init__(
        self,
        lookups: Iterable[tuple[Namespace, str]],
        contents: Iterable[tuple[Namespace, str]] = (),
    ) -> None:
        grouped: dict[int, tuple[Namespace, list[str]]] = {}
        for namespace, name in lookups:
            grouped.setdefault(id(namespace), (namespace, []))[1].append(name)
        self._lookups = tuple((namespace, tuple(names)) for namespace, names in grouped.values())
        #: The engine's check; ``check.intact`` is what a replacement calls.
        self.check = engine_support.NameWatch(self._lookups, tuple(contents))

    @classmethod
    def over(
        cls,
        functions: Iterable[Callable[..., Any]],
        extra: Iterable[tuple[Namespace, str]] = (),
        contents: Iterable[tuple[Namespace, str]] = (),
    ) -> Watch:
        """A watch over what ``functions`` look up (``looked_up``) and ``extra``; the
        ``contents`` names (mutable constants such as a dict of types) are also
        compared member by member, so a change made in place is noticed too."""
        contents = tuple(contents)
        return cls(looked_up(functions, [*extra, *contents]), contents)

    @property
    def armed(self) -> bool:
        return bool(self.check.armed)

    def arm(self) -> None:
        """Note what every watched name holds now (``install()``, after binding)."""
        self.check.arm()

    def disarm(self) -> None:
        self.check.disarm()

    def intact(self) -> bool:
        """Whether every watched name still holds the object it held when armed (and
        every watched constant the same value)."""
        return bool(self.check.intact())

    def names(self) -> list[str]:
        """The watched names, ``module.name`` (for tests and diagnostics)."""
        labels: list[str] = []
        for namespace, names in self._lookups:
            owner = namespace.get("__name__", "?")
            labels += map(".".join, zip(repeat(str(owner)), names, strict=False))
        return labels


def _always() -> bool:
    return True


def intact(watch: Watch | None) -> Callable[[], bool]:
    """The check a replacement makes before taking its own path: that nothing its
    original looks up was rebound (``_watch``). Without a watch, always true."""
    return _always if watch is None else watch.check.intact
