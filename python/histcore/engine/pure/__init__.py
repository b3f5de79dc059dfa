"""Pure-Python twin of the Rust engine (``histcore._core``): its API, gathered here from
the modules of this package, each named after its Rust counterpart in ``rust/core/`` or
``rust/py/`` (``orphans.py`` is the twin of ``orphans.rs``).

Every engine name (see ``histcore.engine.names``) here has the same signature, results
and exceptions as its Rust counterpart; ``tests/engine/test_parity.py`` and the
differential tests hold both to that. The twin is the executable specification: when
the two disagree, read this package.

Values of user-defined types follow docs/design.md, "User-defined types": subclasses of
builtins are read by what they hold (``dict.get``, ``dict.items``, ``list.copy``,
``str.__str__``), never through methods they override; only str values name types; items
are read one at a time, in list order; and containers are read at once when reached.
"""

from __future__ import annotations

from histcore.engine.names import SUPPORT_NAMES
from histcore.engine.pure.canonical import (
    MAX_DEPTH as MAX_DEPTH,
)
from histcore.engine.pure.canonical import (
    canonical_json as canonical_json,
)
from histcore.engine.pure.checked_dedupe import (
    screened_deduplicate_checked as screened_deduplicate_checked,
)
from histcore.engine.pure.classify import (
    classify_callback_output as classify_callback_output,
)
from histcore.engine.pure.content import (
    content_key as content_key,
)
from histcore.engine.pure.content import (
    content_keys as content_keys,
)
from histcore.engine.pure.dedupe import (
    deduplicate_input_items as deduplicate_input_items,
)
from histcore.engine.pure.dedupe import (
    deduplicate_input_items_preferring_latest as deduplicate_input_items_preferring_latest,
)
from histcore.engine.pure.deepcopy import (
    deep_copy_items as deep_copy_items,
)
from histcore.engine.pure.deepcopy import (
    plain_json_copy as plain_json_copy,
)
from histcore.engine.pure.deepcopy import (
    shallow_dict_copies as shallow_dict_copies,
)
from histcore.engine.pure.dict_text import (
    DictText as DictText,
)
from histcore.engine.pure.digits import (
    long_integer_candidates as long_integer_candidates,
)
from histcore.engine.pure.input_rules import (
    StoredHistory as StoredHistory,
)
from histcore.engine.pure.input_rules import (
    input_problems as input_problems,
)
from histcore.engine.pure.input_rules import (
    repair_input as repair_input,
)
from histcore.engine.pure.keys import (
    dedupe_key as dedupe_key,
)
from histcore.engine.pure.keys import (
    dedupe_keys as dedupe_keys,
)
from histcore.engine.pure.model_input import (
    prepared_model_input as prepared_model_input,
)
from histcore.engine.pure.orphans import (
    drop_orphan_function_calls as drop_orphan_function_calls,
)
from histcore.engine.pure.orphans import (
    screened_drop_orphan_function_calls as screened_drop_orphan_function_calls,
)
from histcore.engine.pure.rows import (
    decode_rows as decode_rows,
)
from histcore.engine.pure.screened_key import (
    ScreenedKey as ScreenedKey,
)
from histcore.engine.pure.screened_key import (
    screened_dedupe_key as screened_dedupe_key,
)
from histcore.engine.pure.screened_key import (
    screened_deduplicate as screened_deduplicate,
)
from histcore.engine.pure.sorted_json import (
    dict_sorted_json_texts as dict_sorted_json_texts,
)
from histcore.engine.pure.sorted_json import (
    sorted_json_text as sorted_json_text,
)
from histcore.engine.pure.watch import (
    NameWatch as NameWatch,
)

# The twin holds every engine name, but exports only the support names: the item
# passes are public at histcore.items alone.
__all__ = list(SUPPORT_NAMES)
