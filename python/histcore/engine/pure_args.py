"""How the pure twin reads a list argument and a tuple of names, in one place for all
its modules (the Rust engine's ``Items::of`` and ``str_tuple`` in ``rust/py/args.rs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["as_list", "str_tuple"]

_REJECTED_SEQUENCES = (str, bytes, bytearray, dict)


def as_list(value: Any, name: str) -> list[Any]:
    """Return ``value`` as a list, or raise TypeError naming the argument.

    An exact list is read in place; a list or tuple subclass is copied as it stands (its
    own methods are not called); any other iterable goes through ``list()``.
    """
    if type(value) is list:
        return value
    if isinstance(value, list):
        return list.copy(value)
    if isinstance(value, tuple):
        return list(tuple.__iter__(value))
    if isinstance(value, _REJECTED_SEQUENCES) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of items, not {type(value).__name__}")
    return list(value)


def str_tuple(value: Any, name: str) -> tuple[str, ...]:
    """The members of ``value``, which must be a tuple (or tuple subclass, read by what
    it holds) of exact str; TypeError naming the argument otherwise."""
    if not isinstance(value, tuple):
        raise TypeError(f"{name} must be a tuple of str, not {type(value).__name__}")
    members = tuple(tuple.__iter__(value))
    for member in members:
        if type(member) is not str:
            raise TypeError(
                f"{name} must be a tuple of str, not a tuple holding {type(member).__name__}"
            )
    return members
