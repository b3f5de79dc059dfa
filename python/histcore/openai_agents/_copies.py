"""Whole-history copies by histcore's engine, taken only where they equal the SDK's own.

An SDK turn copies the full history several times in pure Python: ``copy.deepcopy``
(the copies handed to a session callback, the run state's original input) and
``_to_dump_compatible`` (each time the runner turns its input into a list). Both
rebuild every dict and list and keep every scalar (str, int, float, bool, None) as the
very same object. They part only on other shapes: ``_to_dump_compatible`` turns tuples
into lists and any mapping into a dict, ``deepcopy`` keeps shared sub-objects shared,
cycles break both, and other types go their own ways. So the copies here come from the
engine's ``plain_json_copy``, which copies only trees of exact builtin dicts, lists and
scalars (for deepcopy, nothing shared), at most ``MAX_DEPTH`` deep, and otherwise
returns None: then the caller uses the original. (Tuples are left to the originals too:
deepcopy may return a tuple itself.)
"""

from __future__ import annotations

from typing import Any

from histcore.engine import items as engine_items
from histcore.engine.collector import paused_for
from histcore.engine.vocabulary import all_exact_dicts

__all__ = ["deep_copy", "dump_compatible_copy"]


def _plain_copy(
    value: list[Any], allow_shared: bool, without: tuple[str, ...] = ()
) -> list[Any] | None:
    copied: list[Any] | None
    if engine_items.BACKEND != "rust":
        # The pure twin runs Python code while it copies: it copies with the collector on.
        copied = engine_items.plain_json_copy(value, allow_shared=allow_shared, without=without)
        return copied
    with paused_for(value):
        copied = engine_items.plain_json_copy(value, allow_shared=allow_shared, without=without)
    return copied


def dump_compatible_copy(
    value: list[Any], without: frozenset[str] = frozenset()
) -> list[Any] | None:
    """What the SDK's ``_to_dump_compatible(value)`` returns, or None if not provable
    (or an item holds a key in ``without``)."""
    # Sharing is fine: the SDK's function copies a shared container once per reference,
    # as the engine does.
    return _plain_copy(value, allow_shared=True, without=tuple(without))


def deep_copy(value: list[Any], without: frozenset[str] = frozenset()) -> list[Any] | None:
    """What ``copy.deepcopy(value)`` returns for a list of dicts, or None if not provable
    (or an item holds a key in ``without``).

    The items themselves must be dicts: the SDK tells history copies from new-item
    copies by the identity of the items, and deepcopy would return a str item itself.
    """
    if not value or not all_exact_dicts(value):
        return None
    return _plain_copy(value, allow_shared=False, without=tuple(without))
