"""``json.dumps(value, sort_keys=True, default=str)`` text of values made only of exact
builtin JSON types (the Rust engine's ``rust/py/sorted_json.rs``, string rules in
``rust/core/pyjson_text.rs``): of one value, and of each dict of a list."""

from __future__ import annotations

import json
from typing import Any

from histcore.engine.pure.args import as_list, str_tuple
from histcore.engine.pure.canonical import MAX_DEPTH

__all__ = ["dict_sorted_json_texts", "sorted_json_text"]


_JSON_SCALARS = (str, int, float, bool, type(None))


def _walkable(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind in _JSON_SCALARS:
        if kind is int:
            try:
                int.__repr__(value)
            except ValueError:
                return False  # beyond the digit limit: json.dumps raises its own error
        return True
    if kind is dict:
        return depth < MAX_DEPTH and all(
            type(key) is str and _walkable(member, depth + 1) for key, member in value.items()
        )
    if kind is list or kind is tuple:
        return depth < MAX_DEPTH and all(_walkable(member, depth + 1) for member in value)
    return False


def sorted_json_text(value: Any, skip: tuple[str, ...] | None = None) -> str | None:
    """``json.dumps(value, sort_keys=True, default=str)`` of a value made only of exact
    dicts with str keys, lists, tuples, str, int, float, bool and None, nested at most
    MAX_DEPTH levels, leaving out the top-level dict keys named in ``skip`` (a tuple of
    str); None for any other value (json.dumps then decides: its text or its error)."""
    if skip is not None:
        skip = str_tuple(skip, "skip")
    if not _walkable(value, 0):
        return None
    if skip and type(value) is dict:
        value = {key: member for key, member in value.items() if key not in skip}
    return json.dumps(value, sort_keys=True, default=str)


def dict_sorted_json_texts(items: Any, skip: tuple[str, ...] | None = None) -> list[str | None]:
    """``sorted_json_text(item, skip)`` of each item that is an exact dict, None for any
    other item (and where that text is None), in order: one call for a whole list."""
    if skip is not None:
        skip = str_tuple(skip, "skip")
    items = as_list(items, "items")
    return [sorted_json_text(item, skip) if type(item) is dict else None for item in items]
