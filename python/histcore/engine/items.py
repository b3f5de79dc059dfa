"""Item-level history passes, backed by whichever engine ``histcore.engine.backend`` loaded.

Items are JSON-like dicts or objects with ``model_dump()`` (read as
``model_dump(exclude_unset=True)``). Nothing here mutates its input, and apart from
``deep_copy_items`` and ``plain_json_copy`` the returned lists hold the very same
objects as the input.
"""

from __future__ import annotations

from histcore.engine.backend import BACKEND, engine
from histcore.engine.model_input import InputProblem, input_problems, repair_input

dedupe_key = engine.dedupe_key
dedupe_keys = engine.dedupe_keys
deduplicate_input_items = engine.deduplicate_input_items
deduplicate_input_items_preferring_latest = engine.deduplicate_input_items_preferring_latest
canonical_json = engine.canonical_json
content_key = engine.content_key
content_keys = engine.content_keys
drop_orphan_function_calls = engine.drop_orphan_function_calls
deep_copy_items = engine.deep_copy_items
plain_json_copy = engine.plain_json_copy
decode_rows = engine.decode_rows
classify_callback_output = engine.classify_callback_output
sorted_json_text = engine.sorted_json_text
screened_dedupe_key = engine.screened_dedupe_key
screened_deduplicate = engine.screened_deduplicate
shallow_dict_copies = engine.shallow_dict_copies
dict_sorted_json_texts = engine.dict_sorted_json_texts
screened_drop_orphan_function_calls = engine.screened_drop_orphan_function_calls
NameWatch = engine.NameWatch
DictText = engine.DictText
ScreenedKey = engine.ScreenedKey
MAX_DEPTH: int = engine.MAX_DEPTH

__all__ = [
    "BACKEND",
    "MAX_DEPTH",
    "DictText",
    "InputProblem",
    "NameWatch",
    "ScreenedKey",
    "canonical_json",
    "classify_callback_output",
    "content_key",
    "content_keys",
    "decode_rows",
    "dedupe_key",
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "deep_copy_items",
    "dict_sorted_json_texts",
    "drop_orphan_function_calls",
    "input_problems",
    "plain_json_copy",
    "repair_input",
    "screened_dedupe_key",
    "screened_deduplicate",
    "screened_drop_orphan_function_calls",
    "shallow_dict_copies",
    "sorted_json_text",
]
