"""The engine's names, each written once.

Both engines export them: the Rust extension ``histcore._core`` (whose stub
``histcore/_core.pyi`` must list them literally, with ``CORE_ONLY_NAMES``) and its pure
twin ``histcore.engine.pure``. They are the item passes, written in ``histcore.items``'
``__all__`` (their one public path, whose list type checkers need literal) but for its
``FACE_NAMES``, and ``SUPPORT_NAMES`` here, what the drop-in and the session codec use.
``tests/engine/test_parity.py`` checks the stub, the extension, the twin and the
binders ``histcore.engine.items`` and ``histcore.engine._support`` against these lists.
"""

from __future__ import annotations

__all__ = ["CORE_ONLY_NAMES", "FACE_NAMES", "INTERNAL_NAMES", "SUPPORT_NAMES"]

#: The names of ``histcore.items`` that are not item passes: the loaded engine's name and
#: the readable problem type of ``histcore.engine.input_rules``.
FACE_NAMES: tuple[str, ...] = ("BACKEND", "InputProblem", "LOST_OUTPUT_TEXT")

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
