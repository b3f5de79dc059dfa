"""Dedupe keys of items (docs/design.md, "Dedupe key"; the Rust engine's
``rust/core/keys.rs``): ``dedupe_key`` and ``dedupe_keys``, and ``key_of``, which also
tells whether the item's type is a precursor."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list, each
from histcore.engine.pure.extract import dumped, plain_str, str_field
from histcore.engine.vocabulary import CALL_AND_OUTPUT_TYPES, FAKE_ID, PRECURSOR_TYPES

# The item passes here are public at histcore.items alone.
__all__ = ["key_of"]


def _kind_of(payload: dict[Any, Any]) -> tuple[str, bool]:
    """The kind an item's dedupe key names (``type or None``), and whether it is a str:
    a str by its text, any other value by its truth value and ``str()``."""
    kind = dict.get(payload, "type")
    if isinstance(kind, str):
        text = plain_str(kind)
        return (text, True) if text else ("None", False)
    if kind is None or not kind:
        return "None", False
    return plain_str(str(kind)), False


def key_of(payload: Any) -> tuple[str | None, bool]:
    """The dedupe key of a payload, and whether its type is a precursor."""
    if not isinstance(payload, dict):
        return None, False
    if dict.get(payload, "role") is not None:
        return None, False
    kind, kind_is_str = _kind_of(payload)
    if kind_is_str and kind == "message":
        return None, False
    precursor = kind_is_str and kind in PRECURSOR_TYPES
    call_id = str_field(payload, "call_id")
    if call_id is not None and kind_is_str and kind in CALL_AND_OUTPUT_TYPES:
        return f"call_id:{kind}:{call_id}", precursor
    item_id = str_field(payload, "id")
    if item_id is not None and item_id != FAKE_ID:
        return f"id:{kind}:{item_id}", precursor
    if call_id is not None:
        return f"call_id:{kind}:{call_id}", precursor
    approval_request_id = str_field(payload, "approval_request_id")
    if approval_request_id is not None:
        return f"approval_request_id:{kind}:{approval_request_id}", precursor
    return None, False


def dedupe_key(item: Any) -> str | None:
    """Identity key of an item, or None when it never collapses (see docs/design.md)."""
    return key_of(dumped(item))[0]


def dedupe_keys(items: Iterable[Any]) -> list[str | None]:
    """``dedupe_key`` of every item, in order."""
    items = as_list(items, "items")
    return [key_of(dumped(item))[0] for item in each(items, len(items))]
