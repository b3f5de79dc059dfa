"""What histcore is measured against: the OpenAI Agents SDK's helpers and bare baselines.

The SDK (``openai-agents``, import name ``agents``) is optional. Its private helpers
are looked up at run time, so a missing SDK, or one whose internals moved, only
removes the reference column instead of breaking the suite.
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import orjson

__all__ = ["Reference", "bare_loop", "load_reference", "orjson_sort_keys"]

Items = list[Any]


def bare_loop(items: Items) -> None:
    """The floor for any per-item pass: read ``type``, ``id`` and ``call_id`` of each item."""
    for item in items:
        item.get("type")
        item.get("id")
        item.get("call_id")


def orjson_sort_keys(items: Items) -> None:
    """The fastest general-purpose sorted-key serialisation of every item. The texts are
    not kept: an orjson result holds its first buffer (about 6 KB an item here, 580 MB
    at 10^5 items), which alone would take the default run past 1 GB."""
    dumps = orjson.dumps
    option = orjson.OPT_SORT_KEYS
    for item in items:
        dumps(item, option=option)


@dataclass(frozen=True)
class Reference:
    """The SDK's equivalents of the engine functions, bound to one installed version."""

    version: str
    dedupe_key: Callable[[Any], str | None]
    deduplicate_input_items: Callable[[Items], Items]
    deduplicate_input_items_preferring_latest: Callable[[Items], Items]
    drop_orphan_function_calls: Callable[[Items], Items]
    persistence: ModuleType

    def dedupe_keys(self, items: Items) -> list[str | None]:
        key = self.dedupe_key
        return [key(item) for item in items]

    @staticmethod
    def content_keys(items: Items) -> list[str]:
        # The SDK's per-item session key serialises each item this way.
        return [json.dumps(item, sort_keys=True, default=str) for item in items]

    @staticmethod
    def deep_copy_items(items: Items) -> Items:
        result: Items = copy.deepcopy(items)
        return result

    def classify_callback_output(
        self, history: Items, new_items: Items, combined: Items
    ) -> tuple[list[int], list[int]]:
        """The SDK's session-input classification, as ``(history, persisted)`` positions.

        Drives the SDK's own reference-map and frequency-map helpers the way its
        ``prepare_input_with_session`` loop does: per returned item, first the new-item
        references, then the history references, then identity with a history copy,
        then the remaining history and new-item counts; anything else is persisted.
        Like the SDK, it computes the serialisation key once per map for every item.
        """
        sp = self.persistence
        item_key = sp._session_item_key
        take = sp._consume_reference
        history_refs = sp._build_reference_map(history)
        new_refs = sp._build_reference_map(new_items)
        history_counts: dict[str, int] = sp._build_frequency_map(history)
        new_counts: dict[str, int] = sp._build_frequency_map(new_items)
        history_ids = {id(item) for item in history}
        history_positions: list[int] = []
        persisted_positions: list[int] = []
        for position, item in enumerate(combined):
            history_key = item_key(item)
            new_key = item_key(item)
            if take(new_refs, new_key, item):
                new_counts[new_key] = max(new_counts.get(new_key, 0) - 1, 0)
                if id(item) in history_ids:
                    history_positions.append(position)
                else:
                    persisted_positions.append(position)
            elif take(history_refs, history_key, item):
                history_counts[history_key] = max(history_counts.get(history_key, 0) - 1, 0)
                history_positions.append(position)
            elif id(item) in history_ids:
                history_positions.append(position)
            elif history_counts.get(history_key, 0) > 0:
                history_counts[history_key] -= 1
                history_positions.append(position)
            else:
                if new_counts.get(new_key, 0) > 0:
                    new_counts[new_key] -= 1
                persisted_positions.append(position)
        return history_positions, persisted_positions


def load_reference() -> Reference | None:
    """The installed SDK's helpers, or None when ``openai-agents`` is not importable."""
    try:
        items = importlib.import_module("agents.run_internal.items")
        persistence = importlib.import_module("agents.run_internal.session_persistence")
    except ImportError:
        return None
    return Reference(
        version=importlib.metadata.version("openai-agents"),
        dedupe_key=items._dedupe_key,
        deduplicate_input_items=items.deduplicate_input_items,
        deduplicate_input_items_preferring_latest=items.deduplicate_input_items_preferring_latest,
        drop_orphan_function_calls=items.drop_orphan_function_calls,
        persistence=persistence,
    )
