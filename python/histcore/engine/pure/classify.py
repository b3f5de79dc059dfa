"""Classification of what a session input callback returned (docs/design.md, rules 1-6;
the Rust engine's ``rust/core/classify.rs``): by identity first, then by content key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list, each, read_item
from histcore.engine.pure.content import content_key

# The item passes here are public at histcore.items alone.
__all__: list[str] = []


def classify_callback_output(
    history: Iterable[Any], new_items: Iterable[Any], combined: Iterable[Any]
) -> tuple[list[int], list[int]]:
    """Classify what a session input callback returned (docs/design.md, rules 1-6).

    ``history`` and ``new_items`` are the copies the callback received, ``combined``
    what it returned. Returns ``(history_positions, persisted_positions)``: ascending
    positions of ``combined`` that are history, and those to persist as this turn's
    items. Positions in neither are repeats (model input only).
    """
    history = as_list(history, "history")
    history_length = len(history)
    new_items = as_list(new_items, "new_items")
    new_length = len(new_items)
    combined = as_list(combined, "combined")
    combined_length = len(combined)
    history_ids = {id(item) for item in each(history, history_length)}
    new_index_by_id: dict[int, int] = {}
    for index, item in enumerate(each(new_items, new_length)):
        new_index_by_id.setdefault(id(item), index)
    combined_ids = [id(item) for item in each(combined, combined_length)]

    # Pass 1: identity. None marks positions left for the content pass.
    HISTORY, PERSIST, REPEAT = 0, 1, 2
    labels: list[int | None] = [None] * combined_length
    placed = [False] * new_length
    for position, item_id in enumerate(combined_ids):
        if item_id in history_ids:
            labels[position] = HISTORY
            continue
        new_index = new_index_by_id.get(item_id)
        if new_index is None:
            continue
        labels[position] = REPEAT if placed[new_index] else PERSIST
        placed[new_index] = True

    # Pass 2: content, in list order, for reconstructions. Each item is keyed once:
    # the unplaced new items last to first, then the other new items in order, then the
    # leftover returned items in order; the history in order when first needed.
    if None in labels:
        keys_of_new: list[bytes | None] = [None] * new_length
        unplaced_by_key: dict[bytes, list[int]] = {}
        for index in range(new_length - 1, -1, -1):
            if not placed[index]:
                key = content_key(read_item(new_items, new_length, index))
                keys_of_new[index] = key
                unplaced_by_key.setdefault(key, []).append(index)
        new_keys = {
            content_key(read_item(new_items, new_length, index)) if key is None else key
            for index, key in enumerate(keys_of_new)
        }
        history_keys: set[bytes] | None = None
        for position in range(combined_length):
            if labels[position] is not None:
                continue
            key = content_key(read_item(combined, combined_length, position))
            waiting = unplaced_by_key.get(key)
            if waiting:
                waiting.pop()  # stored last-first, so this is the earliest unplaced one
                labels[position] = PERSIST
                continue
            if history_keys is None:
                history_keys = {content_key(h) for h in each(history, history_length)}
            if key in history_keys:
                labels[position] = HISTORY
            elif key in new_keys:
                labels[position] = REPEAT
            else:
                labels[position] = PERSIST

    history_positions = [p for p, label in enumerate(labels) if label == HISTORY]
    persisted_positions = [p for p, label in enumerate(labels) if label == PERSIST]
    return history_positions, persisted_positions
