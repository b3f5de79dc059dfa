"""``NameWatch`` (the Rust engine's ``rust/py/watch.rs``): whether names in namespaces still
hold the objects they held when the watch was armed (and watched constants the same
members). A drop-in replacement asks it on every call before taking its own path."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import is_
from typing import Any

__all__ = ["NameWatch"]

Namespace = dict[str, Any]


def _members(value: Any) -> tuple[Any, ...] | None:
    """The members of an exact dict (keys and values, interleaved), list or set, in
    order; None for anything else."""
    kind = type(value)
    if kind is dict:
        return tuple(chain.from_iterable(value.items()))
    if kind is list or kind is set:
        return tuple(value)
    return None


def _snapshot(value: Any) -> tuple[Any, tuple[Any, ...] | None]:
    """What a watched constant holds: a container's type and members (a change made in
    place shows as another length or another object somewhere), else the object."""
    found = _members(value)
    return (value, None) if found is None else (type(value), found)


def _matches(snapshot: tuple[Any, tuple[Any, ...] | None], value: Any) -> bool:
    held, expected = snapshot
    if expected is None:
        return value is held
    found = _members(value) if type(value) is held else None
    return found is not None and len(found) == len(expected) and all(map(is_, found, expected))


class NameWatch:
    """Whether names in namespaces still hold the objects they held when the watch was
    armed (and watched constants the same members)."""

    __slots__ = ("_checks", "_constants", "_contents", "_lookups", "armed")

    def __init__(
        self,
        lookups: Iterable[tuple[Namespace, Sequence[str]]],
        contents: Iterable[tuple[Namespace, str]] | None = None,
    ) -> None:
        """``lookups``: (namespace, names) pairs compared by identity; ``contents``:
        (namespace, name) pairs whose contents are also compared, member by member."""
        self._lookups = tuple((namespace, tuple(names)) for namespace, names in lookups)
        self._contents = tuple(contents or ())
        for namespace, _ in (*self._lookups, *self._contents):
            if not isinstance(namespace, dict):
                raise TypeError(f"a namespace must be a dict, not {type(namespace).__name__}")
        self._checks: tuple[tuple[Any, tuple[str, ...], tuple[Any, ...]], ...] = ()
        self._constants: tuple[tuple[Namespace, str, Any], ...] = ()
        self.armed = False

    def arm(self) -> None:
        """Note what every watched name holds now."""
        self._checks = tuple(
            (namespace.get, names, tuple(map(namespace.get, names)))
            for namespace, names in self._lookups
        )
        self._constants = tuple(
            (namespace, name, _snapshot(namespace.get(name))) for namespace, name in self._contents
        )
        self.armed = True

    def disarm(self) -> None:
        """Stop taking the fast path, and let go of what was noted when armed (often the
        replacement that holds this watch: a cycle, freed now rather than by the collector)."""
        self.armed = False
        self._checks = ()
        self._constants = ()

    def intact(self) -> bool:
        """Whether the watch is armed and every watched name still holds the object it
        held then (every watched constant container the same members, by identity)."""
        if not self.armed:
            return False
        for get, names, expected in self._checks:
            if not all(map(is_, map(get, names), expected)):
                return False
        return all(
            _matches(snapshot, namespace.get(name)) for namespace, name, snapshot in self._constants
        )

    def __repr__(self) -> str:
        names = sum(len(names) for _, names in self._lookups)
        state = "armed" if self.armed else "unarmed"
        return f"<NameWatch over {names} names and {len(self._contents)} constants, {state}>"
