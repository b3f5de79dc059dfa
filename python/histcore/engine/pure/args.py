"""How the pure twin reads its arguments (the Rust engine's ``rust/py/args.rs``): a list
argument and a tuple of names (``Items::of`` and ``str_tuple`` there), items read in place
from a list user code may change, and index sets."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "as_list",
    "each",
    "index_mask",
    "pick",
    "read_item",
    "str_tuple",
]


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


_CHANGED_SIZE = "the list of items changed size during the call"


def read_item(items: list[Any], length: int, index: int) -> Any:
    """``items[index]`` of a list read in place, which held ``length`` items when the call
    began: RuntimeError if user code run meanwhile changed its size."""
    if len(items) != length:
        raise RuntimeError(_CHANGED_SIZE)
    return items[index]


def each(items: list[Any], length: int) -> Iterator[Any]:
    """The items of a list read in place, in order (see ``read_item``)."""
    for index in range(length):
        yield read_item(items, length, index)


def pick(items: list[Any], length: int, indexes: Iterable[int]) -> list[Any]:
    """A new list of the items now at ``indexes`` (see ``read_item``)."""
    if len(items) != length:
        raise RuntimeError(_CHANGED_SIZE)
    return [items[index] for index in indexes]


def index_mask(value: Any, name: str, length: int) -> list[bool] | None:
    """Positions named by ``value`` (an iterable of ints) as a mask over ``length``."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a set of int positions, not {type(value).__name__}")
    mask = [False] * length
    for index in value:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"{name} must hold ints, not {type(index).__name__}")
        position = int.__index__(index)  # the value of an int subclass, not its methods
        if 0 <= position < length:
            mask[position] = True
    return mask
