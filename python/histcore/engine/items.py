"""Item-level history passes, backed by whichever module ``histcore.engine.backend`` loaded.

Items are JSON-like dicts or objects with ``model_dump()`` (read as
``model_dump(exclude_unset=True)``). Nothing here mutates its input, and apart from
``deep_copy_items`` and ``plain_json_copy`` the returned lists hold the very same
objects as the input.

The names are the item passes of ``histcore.items``, their one public path (but
``histcore.engine.names.INTERNAL_NAMES``), bound here one by one so that type checkers
see each; ``tests/engine/test_parity.py`` checks them. What only the SDK drop-in and
the session codec use is bound in ``histcore.engine._support``.
"""

from __future__ import annotations

from histcore.engine.backend import BACKEND as BACKEND
from histcore.engine.backend import backend_module
from histcore.engine.input_rules import InputProblem as InputProblem
from histcore.engine.input_rules import input_problems as input_problems
from histcore.engine.input_rules import repair_input as repair_input

dedupe_key = backend_module.dedupe_key
dedupe_keys = backend_module.dedupe_keys
deduplicate_input_items = backend_module.deduplicate_input_items
deduplicate_input_items_preferring_latest = backend_module.deduplicate_input_items_preferring_latest
canonical_json = backend_module.canonical_json
content_key = backend_module.content_key
content_keys = backend_module.content_keys
drop_orphan_function_calls = backend_module.drop_orphan_function_calls
deep_copy_items = backend_module.deep_copy_items
plain_json_copy = backend_module.plain_json_copy
classify_callback_output = backend_module.classify_callback_output
MAX_DEPTH: int = backend_module.MAX_DEPTH

# Bound for histcore.items, their one public path: none is exported from here too.
__all__: list[str] = []
