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

``plain_tree`` checks the same kind of shape without copying, a level at a time with
C-level calls (``gc.get_referents`` on a whole level at once), for callers that only
need to know. A dict whose keys are all exact str does not report its keys; any other
dict does, so their types are checked too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from itertools import compress
from typing import Any

from .. import items as engine
from .._gc import collector_paused

__all__ = ["MAX_LEVELS", "deep_copy", "dump_compatible_copy", "plain_tree"]


#: Deeper trees go to the originals (well within their recursion limits and histcore's MAX_DEPTH).
MAX_LEVELS = 200

SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_CONTAINERS: frozenset[type] = frozenset({dict, list, tuple})
_JSON_TYPES: frozenset[type] = SCALARS | {dict, list}


def plain_tree(
    roots: Iterable[Any], allowed: frozenset[type] = _JSON_TYPES, *, shared: bool = False
) -> bool:
    """Whether the trees under ``roots`` hold only ``allowed`` types and end within
    ``MAX_LEVELS`` levels; unless ``shared``, also that no container appears twice.

    With ``shared`` (a container met twice is fine) a cycle still fails: its level
    never empties. A walk that meets more objects than a budget proportional to the
    roots stops too, so shared structures cannot make it blow up.
    """
    level = list(roots)
    budget = 1024 * len(level) + (1 << 20)
    seen: set[int] = set()
    visited = 0
    for _ in range(MAX_LEVELS):
        kinds = set(map(type, level))
        if not kinds <= allowed:
            return False
        if kinds.isdisjoint(_CONTAINERS):
            return True
        if shared:
            # Scalars have no referents: the next level is the containers' contents.
            visited += len(level)
            if visited > budget:
                return False
        else:
            if not kinds <= _CONTAINERS:
                level = list(compress(level, map(_CONTAINERS.__contains__, map(type, level))))
            visited += len(level)
            seen.update(map(id, level))
            if len(seen) != visited:
                return False
        level = gc.get_referents(*level)
    return False


def _plain_copy(value: list[Any], allow_shared: bool) -> list[Any] | None:
    copied: list[Any] | None
    if engine.BACKEND != "rust":
        # The pure twin runs Python code while it copies: it copies with the collector on.
        copied = engine.plain_json_copy(value, allow_shared=allow_shared)
        return copied
    with collector_paused():
        copied = engine.plain_json_copy(value, allow_shared=allow_shared)
    return copied


def dump_compatible_copy(value: list[Any]) -> list[Any] | None:
    """What the SDK's ``_to_dump_compatible(value)`` returns, or None if not provable."""
    # Sharing is fine: the SDK's function copies a shared container once per reference,
    # as the engine does.
    return _plain_copy(value, allow_shared=True)


def deep_copy(value: list[Any]) -> list[Any] | None:
    """What ``copy.deepcopy(value)`` returns for a list of dicts, or None if not provable.

    The items themselves must be dicts: the SDK tells history copies from new-item
    copies by the identity of the items, and deepcopy would return a str item itself.
    """
    if not value or set(map(type, value)) != {dict}:
        return None
    return _plain_copy(value, allow_shared=False)
