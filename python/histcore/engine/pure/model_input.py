"""``prepared_model_input`` (the Rust engine's ``rust/py/model_input.rs``): a session
turn's model input from its items, orphan calls pruned, the latest-value dedupe applied and
what is left repaired. The engine reads each item once for all three; the twin is their
composition, which is what the engine's answer must equal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import each, str_tuple
from histcore.engine.pure.dedupe import deduplicate_input_items_preferring_latest
from histcore.engine.pure.input_rules import StoredHistory, repair_input
from histcore.engine.pure.orphans import drop_orphan_function_calls

__all__ = ["prepared_model_input"]


def prepared_model_input(
    items: Iterable[Any],
    pruning_indexes: Iterable[int] | None = None,
    *,
    output_pruning_indexes: Iterable[int] | None = None,
    history: Iterable[Any] | StoredHistory | None = None,
    without: tuple[str, ...] | None = None,
) -> Any:
    """``repair_input(deduplicate_input_items_preferring_latest(drop_orphan_function_calls(
    items, pruning_indexes, output_pruning_indexes=output_pruning_indexes)),
    history=history)``, each item read once for the three.

    With ``without`` (a tuple of str): NotImplemented unless ``items`` is an exact list of
    exact dicts none of which holds a key named in it, checked before anything else.
    """
    if without is not None:
        keys = str_tuple(without, "without")
        if type(items) is not list:
            return NotImplemented
        for item in each(items, len(items)):
            if type(item) is not dict or any(map(item.__contains__, keys)):
                return NotImplemented
    pruned = drop_orphan_function_calls(
        items, pruning_indexes, output_pruning_indexes=output_pruning_indexes
    )
    return repair_input(deduplicate_input_items_preferring_latest(pruned), history=history)
