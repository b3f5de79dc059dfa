"""Item-level history passes: the one public path of each engine function (bound in
``histcore.engine.items`` and ``histcore.engine.input_rules``).

``__all__`` is where the item passes are written (see ``histcore.engine.names``)."""

from __future__ import annotations

from histcore.engine.input_rules import LOST_OUTPUT_TEXT, StoredHistory
from histcore.engine.items import (
    BACKEND,
    MAX_DEPTH,
    InputProblem,
    canonical_json,
    classify_callback_output,
    content_key,
    content_keys,
    dedupe_key,
    dedupe_keys,
    deduplicate_input_items,
    deduplicate_input_items_preferring_latest,
    deep_copy_items,
    drop_orphan_function_calls,
    input_problems,
    plain_json_copy,
    repair_input,
)

__all__ = [
    "BACKEND",
    "LOST_OUTPUT_TEXT",
    "MAX_DEPTH",
    "InputProblem",
    "StoredHistory",
    "canonical_json",
    "classify_callback_output",
    "content_key",
    "content_keys",
    "dedupe_key",
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "deep_copy_items",
    "drop_orphan_function_calls",
    "input_problems",
    "plain_json_copy",
    "repair_input",
]
