"""The engine's public names, written once.

``ENGINE_NAMES`` is what both engines export: the Rust extension ``histcore._core``
(whose stub ``histcore/_core.pyi`` must list them literally, with
``CORE_ONLY_NAMES``) and its pure twin ``histcore.engine.pure``.
``tests/engine/test_parity.py`` checks the stub, the extension and the twin against
this list; ``histcore.engine.items`` binds these names from the loaded engine.
"""

from __future__ import annotations

__all__ = ["CORE_ONLY_NAMES", "ENGINE_NAMES", "INTERNAL_NAMES"]

ENGINE_NAMES: tuple[str, ...] = (
    "MAX_DEPTH",
    "DictText",
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
    "long_integer_candidates",
    "plain_json_copy",
    "repair_input",
    "screened_dedupe_key",
    "screened_deduplicate",
    "screened_drop_orphan_function_calls",
    "shallow_dict_copies",
    "sorted_json_text",
)

#: Names only the extension has: which build it is, for benchmarks that refuse debug.
CORE_ONLY_NAMES: tuple[str, ...] = ("build_profile",)

#: Engine names ``histcore.engine.items`` does not bind from the engine:
#: ``input_problems`` and ``repair_input`` come wrapped by ``histcore.engine.input_rules``,
#: ``long_integer_candidates`` serves ``histcore.engine.exact_json`` alone.
INTERNAL_NAMES: tuple[str, ...] = ("input_problems", "long_integer_candidates", "repair_input")
