"""Pure twins of the engine's support for drop-in replacements (``histcore._core``'s
``screened_dedupe_key``, ``screened_deduplicate`` and ``NameWatch``).

A replacement of a helper of another library asks these on every call: the screened
functions answer NotImplemented for input whose result the engine cannot promise to be
the other library's (then its original runs), and a ``NameWatch`` says whether anything
the original looks up was rebound since the replacement was installed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import is_
from typing import Any

from histcore.engine.pure import (
    dedupe_key,
    deduplicate_input_items,
    deduplicate_input_items_preferring_latest,
    sorted_json_text,
)
from histcore.engine.pure_args import as_list, index_mask, str_tuple
from histcore.engine.pure_orphans import drop_orphan_function_calls

__all__ = [
    "DictText",
    "NameWatch",
    "ScreenedKey",
    "dict_sorted_json_texts",
    "screened_dedupe_key",
    "screened_deduplicate",
    "screened_drop_orphan_function_calls",
    "shallow_dict_copies",
]

_ID_FIELDS = ("call_id", "id", "approval_request_id")

Namespace = dict[str, Any]


def _screened(item: Any) -> bool:
    """An exact dict whose ``type`` is an exact str or missing/None, with no str subclass
    in an id field: the OpenAI Agents SDK formats ``type`` and the ids with an f-string
    and looks ``type`` up in sets, which a subclass or another type may answer its own
    way."""
    if type(item) is not dict:
        return False
    kind = item.get("type")
    if kind is not None and type(kind) is not str:
        return False
    for field in _ID_FIELDS:
        value = item.get(field)
        if type(value) is not str and isinstance(value, str):
            return False
    return True


def screened_dedupe_key(item: Any, watch: NameWatch | None = None) -> Any:
    """``dedupe_key(item)`` when that is the OpenAI Agents SDK's ``_dedupe_key(item)`` by
    construction, else NotImplemented: for anything but an exact dict whose ``type`` is
    a str or missing and whose id fields hold no str subclass, and whenever ``watch``
    (a NameWatch) is given and not intact."""
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


def _plain_text(value: Any) -> bool:
    return value is None or type(value) is str


def _orphan_screened(items: list[Any], prunable: list[bool] | None) -> bool:
    """The screen of ``screened_drop_orphan_function_calls`` (its docstring)."""
    for position, item in enumerate(items):
        if type(item) is not dict:
            return False
        kind = item.get("type")
        if not _plain_text(kind) or not _plain_text(item.get("call_id")):
            return False
        if kind == "shell_call" and not _plain_text(item.get("status")):
            return False
        if kind == "reasoning" and prunable is not None and not prunable[position]:
            return False
        caller = item.get("caller")
        if isinstance(caller, dict) and (
            type(caller) is not dict
            or not _plain_text(caller.get("type"))
            or not _plain_text(caller.get("caller_id"))
        ):
            return False
    return True


def screened_drop_orphan_function_calls(
    items: Any,
    pruning_indexes: Any = None,
    *,
    output_pruning_indexes: Any = None,
    watch: NameWatch | None = None,
) -> Any:
    """``drop_orphan_function_calls(items, pruning_indexes, output_pruning_indexes=...)``
    when that is the OpenAI Agents SDK's result by construction, else NotImplemented:
    for anything but an exact list of exact dicts whose ``type`` and ``call_id`` (and a
    shell call's ``status``) are exact str or missing, whose dict ``caller`` is an exact
    dict with such ``type`` and ``caller_id``, with index sets that are None or exact
    sets of ints, and no reasoning item outside ``pruning_indexes``; and whenever
    ``watch`` is given and not intact."""
    if watch is not None and not watch.intact():
        return NotImplemented
    if type(items) is not list or not all(
        indexes is None or type(indexes) is set
        for indexes in (pruning_indexes, output_pruning_indexes)
    ):
        return NotImplemented
    try:
        prunable = index_mask(pruning_indexes, "pruning_indexes", len(items))
        index_mask(output_pruning_indexes, "output_pruning_indexes", len(items))
    except TypeError:
        return NotImplemented  # positions that are not ints: the SDK's membership tests decide
    if not _orphan_screened(items, prunable):
        return NotImplemented
    return drop_orphan_function_calls(
        items, pruning_indexes, output_pruning_indexes=output_pruning_indexes
    )


def shallow_dict_copies(items: Any, without: tuple[str, ...]) -> Any:
    """A shallow copy (``dict(item)``) of every item, when ``items`` is an exact list of
    exact dicts none of which holds a key named in ``without`` (a tuple of str);
    NotImplemented otherwise."""
    keys = str_tuple(without, "without")
    if type(items) is not list:
        return NotImplemented
    items = as_list(items, "items")
    for item in items:
        if type(item) is not dict or any(map(item.__contains__, keys)):
            return NotImplemented
    if any(type(item) is not dict for item in items):
        # The list changed under a key comparison's user code.
        raise RuntimeError("items changed during the copy")
    return list(map(dict.copy, items))


def dict_sorted_json_texts(items: Any, skip: tuple[str, ...] | None = None) -> list[str | None]:
    """``sorted_json_text(item, skip)`` of each item that is an exact dict, None for any
    other item (and where that text is None), in order: one call for a whole list."""
    if skip is not None:
        skip = str_tuple(skip, "skip")
    items = as_list(items, "items")
    return [sorted_json_text(item, skip) if type(item) is dict else None for item in items]


class DictText:
    """``DictText(fallback, skip, skip_with_ids, watch=None)``: called as
    ``(item, *, ignore_ids_for_matching=False)``, returns ``sorted_json_text(item, skip)``
    (``skip_with_ids`` when ``ignore_ids_for_matching`` is True) for an exact dict whose
    text the engine writes, while ``watch`` (if given) is intact; every other call,
    with whatever arguments, is ``fallback``'s."""

    def __init__(
        self,
        fallback: Any,
        skip: tuple[str, ...],
        skip_with_ids: tuple[str, ...],
        watch: NameWatch | None = None,
    ) -> None:
        self._skip = str_tuple(skip, "skip")
        self._skip_with_ids = str_tuple(skip_with_ids, "skip_with_ids")
        self._fallback = fallback
        self._watch = watch

    def __call__(self, item: Any, *args: Any, **kwargs: Any) -> Any:
        if type(item) is dict and not args and len(kwargs) <= 1:
            ignore_ids = kwargs.get("ignore_ids_for_matching", False)
            if (
                (not kwargs or "ignore_ids_for_matching" in kwargs)
                and type(ignore_ids) is bool
                and (self._watch is None or self._watch.intact())
            ):
                text = sorted_json_text(item, self._skip_with_ids if ignore_ids else self._skip)
                if text is not None:
                    return text
        return self._fallback(item, *args, **kwargs)


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


def _members(value: Any) -> tuple[Any, ...] | None:
    """The members of an exact dict (keys and values, interleaved), list or set, in
    order; None for anything else."""
    kind = type(value)
    if kind is dict:
        return tuple(chain.from_iterable(value.items()))
    if kind is list or kind is set:
        return tuple(value)
    return None


def _snapshot(value: Any) -> tuple[Any, tuple[Any, ...] | None]:
    """What a watched constant holds: a container's type and members (a change made in
    place shows as another length or another object somewhere), else the object."""
    found = _members(value)
    return (value, None) if found is None else (type(value), found)


def _matches(snapshot: tuple[Any, tuple[Any, ...] | None], value: Any) -> bool:
    held, expected = snapshot
    if expected is None:
        return value is held
    found = _members(value) if type(value) is held else None
    return found is not None and len(found) == len(expected) and all(map(is_, found, expected))


class NameWatch:
    """Whether names in namespaces still hold the objects they held when the watch was
    armed (and watched constants the same members)."""

    __slots__ = ("_checks", "_constants", "_contents", "_lookups", "armed")

    def __init__(
        self,
        lookups: Iterable[tuple[Namespace, Sequence[str]]],
        contents: Iterable[tuple[Namespace, str]] | None = None,
    ) -> None:
        """``lookups``: (namespace, names) pairs compared by identity; ``contents``:
        (namespace, name) pairs whose contents are also compared, member by member."""
        self._lookups = tuple((namespace, tuple(names)) for namespace, names in lookups)
        self._contents = tuple(contents or ())
        for namespace, _ in (*self._lookups, *self._contents):
            if not isinstance(namespace, dict):
                raise TypeError(f"a namespace must be a dict, not {type(namespace).__name__}")
        self._checks: tuple[tuple[Any, tuple[str, ...], tuple[Any, ...]], ...] = ()
        self._constants: tuple[tuple[Namespace, str, Any], ...] = ()
        self.armed = False

    def arm(self) -> None:
        """Note what every watched name holds now."""
        self._checks = tuple(
            (namespace.get, names, tuple(map(namespace.get, names)))
            for namespace, names in self._lookups
        )
        self._constants = tuple(
            (namespace, name, _snapshot(namespace.get(name))) for namespace, name in self._contents
        )
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    def intact(self) -> bool:
        """Whether the watch is armed and every watched name still holds the object it
        held then (every watched constant container the same members, by identity)."""
        if not self.armed:
            return False
        for get, names, expected in self._checks:
            if not all(map(is_, map(get, names), expected)):
                return False
        return all(
            _matches(snapshot, namespace.get(name)) for namespace, name, snapshot in self._constants
        )

    def __repr__(self) -> str:
        names = sum(len(names) for _, names in self._lookups)
        state = "armed" if self.armed else "unarmed"
        return f"<NameWatch over {names} names and {len(self._contents)} constants, {state}>"
