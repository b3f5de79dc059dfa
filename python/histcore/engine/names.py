"""The engine's public names, written once.

``ENGINE_NAMES`` is what both engines export: the Rust extension ``histcore._core``
(whose stub ``histcore/_core.pyi`` must list them literally, with
``CORE_ONLY_NAMES``) and its pure twin ``histcore.engine.pure``: the item passes
(``ITEM_NAMES``) and what the drop-in and the session codec use (``SUPPORT_NAMES``).
``tests/engine/test_parity.py`` checks the stub, the extension and the twin against
this list; ``histcore.engine.items`` and ``histcore.engine._support`` bind these
names from the loaded engine.
"""

from __future__ import annotations

__all__ = ["CORE_ONLY_NAMES", "ENGINE_NAMES", "INTERNAL_NAMES", "ITEM_NAMES", "SUPPORT_NAMES"]

#: The item passes: ``histcore.engine.items`` binds them, ``histcore.items`` is their one
#: public path.
ITEM_NAMES: tuple[str, ...] = (
    "MAX_DEPTH",
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
)

#: What serves only the SDK drop-in, the session codec and the session-input preparation:
#: ``histcore.engine._support`` binds them.
SUPPORT_NAMES: tuple[str, ...] = (
    "DictText",
    "NameWatch",
    "ScreenedKey",
    "decode_rows",
    "dict_sorted_json_texts",
    "long_integer_candidates",
    "prepared_model_input",
    "screened_dedupe_key",
    "screened_deduplicate",
    "screened_deduplicate_checked",
    "screened_drop_orphan_function_calls",
    "shallow_dict_copies",
    "sorted_json_text",
)

ENGINE_NAMES: tuple[str, ...] = (*ITEM_NAMES, *SUPPORT_NAMES)

#: Names only the extension has: which build it is, for benchmarks that refuse debug.
CORE_ONLY_NAMES: tuple[str, ...] = ("build_profile",)

#: Names ``histcore.engine.items`` and ``histcore.engine._support`` do not bind:
#: ``input_problems``, ``repair_input`` and their ``StoredHistory`` come through
#: ``histcore.engine.input_rules``, ``long_integer_candidates`` serves
#: ``histcore.engine.exact_json`` alone.
INTERNAL_NAMES: tuple[str, ...] = (
    "StoredHistory",
    "input_problems",
    "long_integer_candidates",
    "repair_input",
)
