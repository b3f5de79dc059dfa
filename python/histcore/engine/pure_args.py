"""How the pure twin reads a list argument, in one place for all its modules (the Rust
engine's ``Items::of`` in ``rust/py/args.rs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["as_list"]

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
