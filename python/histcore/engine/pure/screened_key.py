"""Dedupe for a drop-in replacement of the OpenAI Agents SDK's helpers (the Rust engine's
``rust/py/screened_key.rs``): ``screened_dedupe_key``, ``screened_deduplicate`` and the
``ScreenedKey`` callable.

They answer NotImplemented (``ScreenedKey`` calls its fallback) for input whose result the
engine cannot promise to be the SDK's, and whenever a given ``NameWatch`` is not intact;
then the SDK's original runs."""

from __future__ import annotations

from typing import Any

from histcore.engine.pure.dedupe import (
    deduplicate_input_items,
    deduplicate_input_items_preferring_latest,
)
from histcore.engine.pure.keys import dedupe_key
from histcore.engine.pure.watch import NameWatch

__all__ = ["ScreenedKey", "screened_dedupe_key", "screened_deduplicate"]


_ID_FIELDS = ("call_id", "id", "approval_request_id")


def _screened(item: Any) -> bool:
    """An exact dict whose ``type`` is an exact str or missing/None, whose ``id`` is an
    exact str or missing/None, with no str subclass in another id field: the OpenAI
    Agents SDK formats ``type`` and the ids with an f-string, looks ``type`` up in sets
    and compares ``id`` with ``==``, which a subclass or another type may answer its
    own way (even by raising)."""
    if type(item) is not dict:
        return False
    kind = item.get("type")
    if kind is not None and type(kind) is not str:
        return False
    identity = item.get("id")
    if identity is not None and type(identity) is not str:
        return False
    for field in _ID_FIELDS:
        value = item.get(field)
        if type(value) is not str and isinstance(value, str):
            return False
    return True


def screened_dedupe_key(item: Any, watch: NameWatch | None = None) -> Any:
    """``dedupe_key(item)`` when that is the OpenAI Agents SDK's ``_dedupe_key(item)`` by
    construction, else NotImplemented: for anything but an exact dict whose ``type`` is
    a str or missing, whose ``id`` is a str or missing/None and whose other id fields
    hold no str subclass, and whenever ``watch`` (a NameWatch) is given and not intact."""
    if watch is not None and not watch.intact():
        return NotImplemented
    if not _screened(item):
        return NotImplemented
    return dedupe_key(item)


def screened_deduplicate(
    items: Any, preferring_latest: bool = False, watch: NameWatch | None = None
) -> Any:
    """The dedupe of an exact list whose every item passes ``screened_dedupe_key``'s
    screen (first wins, or ``preferring_latest``), else NotImplemented (also whenever
    ``watch`` is given and not intact)."""
    if watch is not None and not watch.intact():
        return NotImplemented
    if type(items) is not list or not all(map(_screened, items)):
        return NotImplemented
    if preferring_latest:
        return deduplicate_input_items_preferring_latest(items)
    return deduplicate_input_items(items)


class ScreenedKey:
    """``ScreenedKey(fallback, watch=None)``: called with one item, returns
    ``screened_dedupe_key(item, watch)`` where that is not NotImplemented; every other
    call, with whatever arguments, is ``fallback``'s."""

    def __init__(self, fallback: Any, watch: NameWatch | None = None) -> None:
        self._fallback = fallback
        self._watch = watch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs:
            key = screened_dedupe_key(args[0], self._watch)
            if key is not NotImplemented:
                return key
        return self._fallback(*args, **kwargs)
