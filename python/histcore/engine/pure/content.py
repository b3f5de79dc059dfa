"""Content keys of items: the XXH3-128 digest of their canonical form (the Rust engine's
``rust/py/content.rs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import xxhash

from histcore.engine.pure.args import as_list, each
from histcore.engine.pure.canonical import canonical_json

# The item passes here are public at histcore.items alone.
__all__: list[str] = []


def content_key(item: Any) -> bytes:
    """16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian)."""
    return xxhash.xxh3_128_digest(canonical_json(item))


def content_keys(items: Iterable[Any]) -> list[bytes]:
    """``content_key`` of every item, in order."""
    items = as_list(items, "items")
    return [content_key(item) for item in each(items, len(items))]
