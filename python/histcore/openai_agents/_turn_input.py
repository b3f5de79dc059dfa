"""The SDK's ``_prepare_turn_input_items`` (the model input of every turn), one copy fewer.

The SDK's function copies the caller's input with ``_to_dump_compatible`` (through
``ItemHelpers.input_to_new_input_list``), and ``prepare_model_input_items`` copies every
dict of that copy again while it normalises; nothing else reads the first copy. So when
the input is an exact list of plain JSON trees and no item holds a key the SDK strips,
the engine's dump-compatible copy is already what normalising returns: new dicts with
the same values (other items are the copy's own, as the SDK appends them). The runner's
items after it are the SDK's, by the SDK's helpers.

It takes that path only while nothing the original looks up was rebound (its watch also
follows ``input_to_new_input_list``) and that method is still the SDK's, and only where
both functions have the source it follows (checked at install). Details: docs/design.md,
"Drop-in accelerator" ("Fewer copies in the callback path").
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from histcore.openai_agents._copies import dump_compatible_copy
from histcore.openai_agents._replacements import intact, named_after, stripped_keys
from histcore.openai_agents._versions import (
    CONVERSION_DIGESTS,
    PREPARE_MODEL_INPUT_DIGESTS,
    function_digest,
)
from histcore.openai_agents._watch import Watch

__all__ = ["make_prepare_turn_input_items", "watch_for"]

PrepareTurnInput = Callable[[Any, Any, Any], list[Any]]


def _converter(original: PrepareTurnInput) -> tuple[Any, Any]:
    """(``ItemHelpers``, what its class dict holds for ``input_to_new_input_list``)."""
    helpers = original.__globals__["ItemHelpers"]
    return helpers, vars(helpers)["input_to_new_input_list"]


def watch_for(original: PrepareTurnInput) -> Watch:
    """A watch over what ``original`` looks up, and what the caller-input conversion it
    reaches through a class attribute looks up (``_to_dump_compatible`` and on)."""
    _, convert = _converter(original)
    return Watch.over([original, convert.__func__])


def make_prepare_turn_input_items(
    original: PrepareTurnInput, module: ModuleType, watch: Watch | None = None
) -> PrepareTurnInput:
    prepare_model_input = module.prepare_model_input_items
    helpers, convert = _converter(original)
    items_module = sys.modules[prepare_model_input.__module__]
    stripped = stripped_keys(items_module.strip_internal_input_item_metadata)
    without = stripped or frozenset()
    # All decided here, at install: a function rebound before it is not the SDK's, and a
    # stripping that does more than drop keys is no plain copy.
    follows = (
        stripped is not None
        and function_digest("prepare_model_input_items", prepare_model_input)
        in PREPARE_MODEL_INPUT_DIGESTS
        and function_digest(
            "ItemHelpers.input_to_new_input_list", getattr(convert, "__func__", None)
        )
        in CONVERSION_DIGESTS
    )
    unchanged = intact(watch)

    @named_after(original)
    def _prepare_turn_input_items(
        caller_input: Any, generated_items: Any, reasoning_item_id_policy: Any
    ) -> list[Any]:
        caller_items = None
        if (
            follows
            and type(caller_input) is list
            and unchanged()
            and vars(helpers).get("input_to_new_input_list") is convert
        ):
            caller_items = dump_compatible_copy(caller_input, without)
        if caller_items is None:
            return original(caller_input, generated_items, reasoning_item_id_policy)
        # From here on the SDK's steps, by its own helpers (``prepare_model_input_items``
        # after its normalisation of the caller's items).
        continuation = module.run_items_to_input_items(generated_items, reasoning_item_id_policy)
        if not continuation:
            return caller_items
        normalized = items_module.normalize_input_items_for_api(list(continuation))
        filtered: list[Any] = items_module.drop_orphan_function_calls(normalized)
        return caller_items + filtered

    return _prepare_turn_input_items
