"""histcore: the conversation-history core of an agent runtime, with a Rust engine."""

from __future__ import annotations

from ._backend import BACKEND
from .items import (
    MAX_DEPTH,
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
)

__version__ = "0.1.0"

__all__ = [
    "BACKEND",
    "MAX_DEPTH",
    "__version__",
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
]
