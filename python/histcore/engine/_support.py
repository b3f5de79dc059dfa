"""What the loaded engine offers the SDK drop-in, the session codec and the session-input
preparation, not item passes: screened SDK helpers, text and copy helpers, name watches,
the row decoder, and the fused passes of a session turn's model input.

The names are those of ``histcore.engine.names.SUPPORT_NAMES`` (but its
``INTERNAL_NAMES``), bound one by one so that type checkers see each;
``tests/engine/test_parity.py`` checks that they are exactly that list.
"""

from __future__ import annotations

from histcore.engine.backend import backend_module
from histcore.engine.names import INTERNAL_NAMES, SUPPORT_NAMES

decode_rows = backend_module.decode_rows
prepared_model_input = backend_module.prepared_model_input
sorted_json_text = backend_module.sorted_json_text
screened_dedupe_key = backend_module.screened_dedupe_key
screened_deduplicate = backend_module.screened_deduplicate
screened_deduplicate_checked = backend_module.screened_deduplicate_checked
screened_drop_orphan_function_calls = backend_module.screened_drop_orphan_function_calls
shallow_dict_copies = backend_module.shallow_dict_copies
dict_sorted_json_texts = backend_module.dict_sorted_json_texts
NameWatch = backend_module.NameWatch
DictText = backend_module.DictText
ScreenedKey = backend_module.ScreenedKey

__all__ = [name for name in SUPPORT_NAMES if name not in INTERNAL_NAMES]
