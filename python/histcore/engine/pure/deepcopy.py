"""Copies of items (the Rust engine's ``rust/py/deepcopy.rs``): ``deep_copy_items``,
``plain_json_copy`` and ``shallow_dict_copies``."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list, each, str_tuple
from histcore.engine.pure.canonical import MAX_DEPTH

# The item passes here are public at histcore.items alone.
__all__ = ["shallow_dict_copies"]


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is not dict and kind is not list and kind is not tuple:
        return copy.deepcopy(value)
    if depth >= MAX_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
    if kind is tuple:
        return tuple(_copy(v, depth + 1) for v in value)
    # A dict or list is copied at once (dict.copy(), a slice), then its members that
    # are not shared scalars are replaced by their copies.
    if kind is dict:
        copied = value.copy()
        for key, member in list(copied.items()):
            if not _is_plain_scalar(member):
                copied[key] = _copy(member, depth + 1)
        return copied
    copied_list = value[:]
    for index, member in enumerate(copied_list):
        if not _is_plain_scalar(member):
            copied_list[index] = _copy(member, depth + 1)
    return copied_list


def deep_copy_items(items: Iterable[Any]) -> list[Any]:
    """An independent deep copy of JSON-like items.

    Exact dict/list/tuple are rebuilt, str/int/float/bool/None shared (immutable), any
    other value is handed to ``copy.deepcopy``. Shared sub-objects are copied once per
    reference (no memo), and nesting deeper than MAX_DEPTH raises ValueError.
    """
    items = as_list(items, "items")
    return [_copy(item, 0) for item in each(items, len(items))]


class _NotPlain(Exception):
    """Raised inside ``plain_json_copy`` when the copy has to give up."""


# Containers a plain copy may hold per item, and in any case.
_PLAIN_BUDGET_PER_ITEM = 1024
_PLAIN_BUDGET_BASE = 1 << 20


def _is_plain_scalar(value: Any) -> bool:
    kind = type(value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def plain_json_copy(
    items: Iterable[Any], *, allow_shared: bool = False, without: tuple[str, ...] | None = None
) -> list[Any] | None:
    """A copy of items that are plain JSON trees, or None.

    Copies items made only of exact dict, list, str, int, float, bool and None (dict
    keys of those scalar types too), nested at most MAX_DEPTH deep: the copy
    ``copy.deepcopy`` would give. Returns None instead when anything else appears, when
    nesting goes deeper (cycles included), when a container is reached twice unless
    ``allow_shared`` (shared containers are then copied once per reference), or when
    the copy would hold more than 1024 containers per item plus 2**20 (sharing can make
    a copy far larger than its input). Also None when an item is a dict holding a key
    named in ``without`` (a tuple of str). Runs no Python code of the items.
    """
    if type(allow_shared) is not bool:  # worded as the extension's argument parser words it
        what = "'None'" if allow_shared is None else f"'{type(allow_shared).__name__}' object"
        error = TypeError(f"{what} is not an instance of 'bool'")
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note("while processing 'allow_shared'")
        raise error
    keys = () if without is None else str_tuple(without, "without")
    items = as_list(items, "items")
    seen: set[int] = set()
    budget = _PLAIN_BUDGET_PER_ITEM * len(items) + _PLAIN_BUDGET_BASE
    containers = 0

    def copy(value: Any, depth: int) -> Any:
        nonlocal containers
        if _is_plain_scalar(value):
            return value
        kind = type(value)
        if (kind is not dict and kind is not list) or depth >= MAX_DEPTH:
            raise _NotPlain
        containers += 1
        if containers > budget:
            raise _NotPlain
        if not allow_shared:
            if id(value) in seen:
                raise _NotPlain
            seen.add(id(value))
        if kind is list:
            return [copy(member, depth + 1) for member in value]
        copied = {}
        for key, member in value.items():
            if not _is_plain_scalar(key):
                raise _NotPlain
            copied[key] = copy(member, depth + 1)
        return copied

    copies = []
    try:
        for item in items:
            copied = copy(item, 0)
            # Looked up in the copy, whose keys are plain scalars: no user ``__eq__`` runs.
            if keys and type(copied) is dict and any(map(copied.__contains__, keys)):
                return None
            copies.append(copied)
    except _NotPlain:
        return None
    return copies


def shallow_dict_copies(items: Any, without: tuple[str, ...]) -> Any:
    """A shallow copy (``dict(item)``) of every item, when ``items`` is an exact list of
    exact dicts none of which holds a key named in ``without`` (a tuple of str);
    NotImplemented otherwise."""
    keys = str_tuple(without, "without")
    if type(items) is not list:
        return NotImplemented
    items = as_list(items, "items")
    for item in items:
        if type(item) is not dict or any(map(item.__contains__, keys)):
            return NotImplemented
    if any(type(item) is not dict for item in items):
        # The list changed under a key comparison's user code.
        raise RuntimeError("items changed during the copy")
    return list(map(dict.copy, items))
