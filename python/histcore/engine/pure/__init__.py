"""Pure-Python twin of the Rust engine (``histcore._core``): its public API, gathered here
from the modules of this package, each named after its Rust counterpart in ``rust/core/``
or ``rust/py/`` (``orphans.py`` is the twin of ``orphans.rs``).

Every public name here has the same signature, results and exceptions as its Rust
counterpart; ``tests/engine/test_parity.py`` and the differential tests hold both to that.
The twin is the executable specification: when the two disagree, read this package.

Values of user-defined types follow docs/design.md, "User-defined types": subclasses of
builtins are read by what they hold (``dict.get``, ``dict.items``, ``list.copy``,
``str.__str__``), never through methods they override; only str values name types; items
are read one at a time, in list order; and containers are read at once when reached.
"""

from __future__ import annotations

from histcore.engine.pure.canonical import MAX_DEPTH, canonical_json
from histcore.engine.pure.classify import classify_callback_output
from histcore.engine.pure.content import content_key, content_keys
from histcore.engine.pure.dedupe import (
    deduplicate_input_items,
    deduplicate_input_items_preferring_latest,
)
from histcore.engine.pure.deepcopy import deep_copy_items, plain_json_copy, shallow_dict_copies
from histcore.engine.pure.dict_text import DictText
from histcore.engine.pure.digits import long_integer_candidates
from histcore.engine.pure.input_rules import input_problems, repair_input
from histcore.engine.pure.keys import dedupe_key, dedupe_keys
from histcore.engine.pure.orphans import (
    drop_orphan_function_calls,
    screened_drop_orphan_function_calls,
)
from histcore.engine.pure.rows import decode_rows
from histcore.engine.pure.screened_key import (
    ScreenedKey,
    screened_dedupe_key,
    screened_deduplicate,
)
from histcore.engine.pure.sorted_json import dict_sorted_json_texts, sorted_json_text
from histcore.engine.pure.watch import NameWatch

__all__ = [
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
]
