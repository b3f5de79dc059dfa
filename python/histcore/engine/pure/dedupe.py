"""First-wins and latest-value dedupe of items by their dedupe keys (docs/design.md,
"First-wins dedupe" and "Latest-value dedupe"; the Rust engine's ``rust/core/dedupe.rs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list, each, pick
from histcore.engine.pure.extract import dumped
from histcore.engine.pure.keys import key_of

# The item passes here are public at histcore.items alone.
__all__: list[str] = []


def deduplicate_input_items(items: Iterable[Any]) -> list[Any]:
    """Keep the first occurrence (value and position) of every key."""
    items = as_list(items, "items")
    length = len(items)
    seen: set[str] = set()
    kept: list[int] = []
    for index, item in enumerate(each(items, length)):
        key = key_of(dumped(item))[0]
        if key is None:
            kept.append(index)
        elif key not in seen:
            seen.add(key)
            kept.append(index)
    return pick(items, length, kept)


def deduplicate_input_items_preferring_latest(items: Iterable[Any]) -> list[Any]:
    """One item per key holding its latest value, anchored per docs/design.md.

    Precursors (calls, approval requests, reasoning) stay at their earliest position,
    every other keyed item at its latest one; unkeyed items stay where they are.
    """
    items = as_list(items, "items")
    length = len(items)
    keys: list[str | None] = []
    latest: dict[str, int] = {}
    anchor: dict[str, int] = {}
    for index, item in enumerate(each(items, length)):
        key, precursor = key_of(dumped(item))
        keys.append(key)
        if key is None:
            continue
        latest[key] = index
        if key not in anchor or not precursor:
            anchor[key] = index
    slots: list[int] = []
    for index, key in enumerate(keys):
        if key is None:
            slots.append(index)
        elif anchor[key] == index:
            slots.append(latest[key])
    return pick(items, length, slots)
