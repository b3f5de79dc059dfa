"""Pure-Python twin of the Rust engine (``histcore._core``).

Every public name here has the same signature, results and exceptions as its Rust
counterpart; ``tests/engine/test_parity.py`` and the differential tests hold both to that.
The twin is the executable specification: when the two disagree, read this file.

Values of user-defined types follow docs/design.md, "User-defined types": subclasses of
builtins are read by what they hold (``dict.get``, ``dict.items``, ``list.copy``,
``str.__str__``), never through methods they override; only str values name types; items
are read one at a time, in list order; and containers are read at once when reached.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import xxhash

from histcore.engine.pure_args import as_list as _as_list
from histcore.engine.pure_args import str_tuple
from histcore.engine.pure_input import input_problems, repair_input
from histcore.engine.vocabulary import (
    CALL_AND_OUTPUT_TYPES,
    CALL_TO_OUTPUT_TYPE,
    FAKE_ID,
    METADATA_KEYS,
    OUTPUT_TYPES,
    PRECURSOR_TYPES,
    PROGRAM_OWNED_HOSTED_TYPES,
)

__all__ = [
    "MAX_DEPTH",
    "DictText",
    "NameWatch",
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

#: Containers nested deeper than this raise ValueError (also catches cycles).
MAX_DEPTH = 256


_CHANGED_SIZE = "the list of items changed size during the call"


# --- argument handling -------------------------------------------------------------


def _read(items: list[Any], length: int, index: int) -> Any:
    """``items[index]`` of a list read in place, which held ``length`` items when the call
    began: RuntimeError if user code run meanwhile changed its size."""
    if len(items) != length:
        raise RuntimeError(_CHANGED_SIZE)
    return items[index]


def _each(items: list[Any], length: int) -> Iterator[Any]:
    """The items of a list read in place, in order (see ``_read``)."""
    for index in range(length):
        yield _read(items, length, index)


def _pick(items: list[Any], length: int, indexes: Iterable[int]) -> list[Any]:
    """A new list of the items now at ``indexes`` (see ``_read``)."""
    if len(items) != length:
        raise RuntimeError(_CHANGED_SIZE)
    return [items[index] for index in indexes]


def _index_mask(value: Any, name: str, length: int) -> list[bool] | None:
    """Positions named by ``value`` (an iterable of ints) as a mask over ``length``."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a set of int positions, not {type(value).__name__}")
    mask = [False] * length
    for index in value:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"{name} must hold ints, not {type(index).__name__}")
        position = int.__index__(index)  # the value of an int subclass, not its methods
        if 0 <= position < length:
            mask[position] = True
    return mask


_NO_DUMP: Any = object()


def _dumped(item: Any) -> Any:
    """The item as the engine sees it: pydantic-style models become their dump (the
    attribute is looked up once)."""
    if isinstance(item, dict):
        return item
    model_dump = getattr(item, "model_dump", _NO_DUMP)
    if model_dump is not _NO_DUMP:
        return model_dump(exclude_unset=True)
    return item


def _plain_str(value: str) -> str:
    """The characters of a str (or str subclass) as an exact str."""
    return value if type(value) is str else str.__str__(value)


def _str_field(payload: dict[Any, Any], name: str) -> str | None:
    """The text of ``payload[name]`` when it is a str (or str subclass), else None."""
    value = dict.get(payload, name)
    return _plain_str(value) if isinstance(value, str) else None


# --- dedupe keys ---------------------------------------------------------------------


def _kind_of(payload: dict[Any, Any]) -> tuple[str, bool]:
    """The kind an item's dedupe key names (``type or None``), and whether it is a str:
    a str by its text, any other value by its truth value and ``str()``."""
    kind = dict.get(payload, "type")
    if isinstance(kind, str):
        text = _plain_str(kind)
        return (text, True) if text else ("None", False)
    if kind is None or not kind:
        return "None", False
    return _plain_str(str(kind)), False


def _key_of(payload: Any) -> tuple[str | None, bool]:
    """The dedupe key of a payload, and whether its type is a precursor."""
    if not isinstance(payload, dict):
        return None, False
    if dict.get(payload, "role") is not None:
        return None, False
    kind, kind_is_str = _kind_of(payload)
    if kind_is_str and kind == "message":
        return None, False
    precursor = kind_is_str and kind in PRECURSOR_TYPES
    call_id = _str_field(payload, "call_id")
    if call_id is not None and kind_is_str and kind in CALL_AND_OUTPUT_TYPES:
        return f"call_id:{kind}:{call_id}", precursor
    item_id = _str_field(payload, "id")
    if item_id is not None and item_id != FAKE_ID:
        return f"id:{kind}:{item_id}", precursor
    if call_id is not None:
        return f"call_id:{kind}:{call_id}", precursor
    approval_request_id = _str_field(payload, "approval_request_id")
    if approval_request_id is not None:
        return f"approval_request_id:{kind}:{approval_request_id}", precursor
    return None, False


def dedupe_key(item: Any) -> str | None:
    """Identity key of an item, or None when it never collapses (see docs/design.md)."""
    return _key_of(_dumped(item))[0]


def dedupe_keys(items: Iterable[Any]) -> list[str | None]:
    """``dedupe_key`` of every item, in order."""
    items = _as_list(items, "items")
    return [_key_of(_dumped(item))[0] for item in _each(items, len(items))]


def deduplicate_input_items(items: Iterable[Any]) -> list[Any]:
    """Keep the first occurrence (value and position) of every key."""
    items = _as_list(items, "items")
    length = len(items)
    seen: set[str] = set()
    kept: list[int] = []
    for index, item in enumerate(_each(items, length)):
        key = _key_of(_dumped(item))[0]
        if key is None:
            kept.append(index)
        elif key not in seen:
            seen.add(key)
            kept.append(index)
    return _pick(items, length, kept)


def deduplicate_input_items_preferring_latest(items: Iterable[Any]) -> list[Any]:
    """One item per key holding its latest value, anchored per docs/design.md.

    Precursors (calls, approval requests, reasoning) stay at their earliest position,
    every other keyed item at its latest one; unkeyed items stay where they are.
    """
    items = _as_list(items, "items")
    length = len(items)
    keys: list[str | None] = []
    latest: dict[str, int] = {}
    anchor: dict[str, int] = {}
    for index, item in enumerate(_each(items, length)):
        key, precursor = _key_of(_dumped(item))
        keys.append(key)
        if key is None:
            continue
        latest[key] = index
        if key not in anchor or not precursor:
            anchor[key] = index
    slots: list[int] = []
    for index, key in enumerate(keys):
        if key is None:
            slots.append(index)
        elif anchor[key] == index:
            slots.append(latest[key])
    return _pick(items, length, slots)


# --- canonical content form ----------------------------------------------------------


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    # other control characters, and lone surrogates (no UTF-8 form): \uXXXX
    return f"\\u{ord(char):04x}"


_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# Quotes, backslashes, control characters and lone surrogates: a C-level scan tells
# whether the slow per-character path is needed at all.
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _encode_str(text: str, out: list[str]) -> None:
    text = _plain_str(text)
    if _NEEDS_ESCAPE.search(text) is not None:
        text = _NEEDS_ESCAPE.sub(_escape_char, text)
    out.append('"')
    out.append(text)
    out.append('"')


def _encode_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _encode(value: Any, out: list[str], depth: int, top: bool = False) -> None:  # noqa: C901 (one flat branch per JSON kind)
    """Append the canonical text of ``value``; ``top`` for an item's own payload, whose
    metadata keys are dropped."""
    if isinstance(value, str):
        _encode_str(value, out)
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_encode_float(value))
    elif isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        # Read at once, before str() of a key or value runs any user code.
        pairs = list(dict.items(value))
        entries: list[tuple[str, Any]] = []
        for key, member in pairs:
            if isinstance(key, str):
                text = _plain_str(key)
                if top and text in METADATA_KEYS:
                    continue
            else:
                text = _plain_str(str(key))
            entries.append((text, member))
        entries.sort(key=_entry_key)
        out.append("{")
        for position, (key, member) in enumerate(entries):
            if position:
                out.append(",")
            _encode_str(key, out)
            out.append(":")
            _encode(member, out, depth + 1)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        # A list is read at once, like a dict; a tuple cannot change.
        members = list.copy(value) if isinstance(value, list) else tuple.__iter__(value)
        out.append("[")
        for position, member in enumerate(members):
            if position:
                out.append(",")
            _encode(member, out, depth + 1)
        out.append("]")
    else:
        _encode_str(str(value), out)


def _entry_key(entry: tuple[str, Any]) -> str:
    return entry[0]


def _canonical_text(item: Any) -> str:
    out: list[str] = []
    _encode(_dumped(item), out, 0, top=True)
    return "".join(out)


def canonical_json(item: Any) -> bytes:
    """The canonical JSON encoding of an item's content (see docs/design.md)."""
    return _canonical_text(item).encode("utf-8")


def content_key(item: Any) -> bytes:
    """16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian)."""
    return xxhash.xxh3_128_digest(canonical_json(item))


def content_keys(items: Iterable[Any]) -> list[bytes]:
    """``content_key`` of every item, in order."""
    items = _as_list(items, "items")
    return [content_key(item) for item in _each(items, len(items))]


# --- deep copy -----------------------------------------------------------------------


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    # A dict or list is copied at once (dict.copy(), a slice), then its members that
    # are not shared scalars are replaced by their copies.
    if kind is dict:
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        copied = value.copy()
        for key, member in list(copied.items()):
            if not _is_plain_scalar(member):
                copied[key] = _copy(member, depth + 1)
        return copied
    if kind is list:
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        copied_list = value[:]
        for index, member in enumerate(copied_list):
            if not _is_plain_scalar(member):
                copied_list[index] = _copy(member, depth + 1)
        return copied_list
    if kind is tuple:
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        return tuple(_copy(v, depth + 1) for v in value)
    return copy.deepcopy(value)


def deep_copy_items(items: Iterable[Any]) -> list[Any]:
    """An independent deep copy of JSON-like items.

    Exact dict/list/tuple are rebuilt, str/int/float/bool/None shared (immutable), any
    other value is handed to ``copy.deepcopy``. Shared sub-objects are copied once per
    reference (no memo), and nesting deeper than MAX_DEPTH raises ValueError.
    """
    items = _as_list(items, "items")
    return [_copy(item, 0) for item in _each(items, len(items))]


class _NotPlain(Exception):
    """Raised inside ``plain_json_copy`` when the copy has to give up."""


# Containers a plain copy may hold per item, and in any case.
_PLAIN_BUDGET_PER_ITEM = 1024
_PLAIN_BUDGET_BASE = 1 << 20


def _is_plain_scalar(value: Any) -> bool:
    kind = type(value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def plain_json_copy(items: Iterable[Any], *, allow_shared: bool = False) -> list[Any] | None:
    """A copy of items that are plain JSON trees, or None.

    Copies items made only of exact dict, list, str, int, float, bool and None (dict
    keys of those scalar types too), nested at most MAX_DEPTH deep: the copy
    ``copy.deepcopy`` would give. Returns None instead when anything else appears, when
    nesting goes deeper (cycles included), when a container is reached twice unless
    ``allow_shared`` (shared containers are then copied once per reference), or when
    the copy would hold more than 1024 containers per item plus 2**20 (sharing can make
    a copy far larger than its input). Runs no Python code of the items.
    """
    if type(allow_shared) is not bool:  # worded as the extension's argument parser words it
        what = "'None'" if allow_shared is None else f"'{type(allow_shared).__name__}' object"
        error = TypeError(f"{what} is not an instance of 'bool'")
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note("while processing 'allow_shared'")
        raise error
    items = _as_list(items, "items")
    seen: set[int] = set()
    budget = _PLAIN_BUDGET_PER_ITEM * len(items) + _PLAIN_BUDGET_BASE
    containers = 0

    def copy(value: Any, depth: int) -> Any:
        nonlocal containers
        if _is_plain_scalar(value):
            return value
        kind = type(value)
        if (kind is not dict and kind is not list) or depth >= MAX_DEPTH:
            raise _NotPlain
        containers += 1
        if containers > budget:
            raise _NotPlain
        if not allow_shared:
            if id(value) in seen:
                raise _NotPlain
            seen.add(id(value))
        if kind is list:
            return [copy(member, depth + 1) for member in value]
        copied = {}
        for key, member in value.items():
            if not _is_plain_scalar(key):
                raise _NotPlain
            copied[key] = copy(member, depth + 1)
        return copied

    try:
        return [copy(item, 0) for item in items]
    except _NotPlain:
        return None


# --- orphan-call pruning -------------------------------------------------------------


class _Facts(NamedTuple):
    """What orphan pruning reads of one dict item, read once (the Rust engine's
    ``ItemFacts``). Texts are exact str; a value that is not a str is None."""

    kind: str | None
    call_id: str | None
    #: ``caller["caller_id"]`` when ``caller`` is a dict whose ``type`` is "program"
    program_owner: str | None
    #: ``status`` is missing, None or "in_progress" (read for shell calls only)
    pending: bool


def _orphan_facts(payload: Any) -> _Facts | None:
    """The facts of a payload (None when it is not a dict), its fields read in this
    order: type, call_id, caller (its type, then its caller_id), status."""
    if not isinstance(payload, dict):
        return None
    kind = _str_field(payload, "type")
    call_id = _str_field(payload, "call_id")
    program_owner = None
    caller = dict.get(payload, "caller")
    if isinstance(caller, dict) and _str_field(caller, "type") == "program":
        program_owner = _str_field(caller, "caller_id")
    pending = False
    if kind == "shell_call":
        status = dict.get(payload, "status")
        pending = status is None or (
            isinstance(status, str) and _plain_str(status) == "in_progress"
        )
    return _Facts(kind, call_id, program_owner, pending)


def _is_pending_hosted_shell_call(facts: _Facts) -> bool:
    return facts.kind == "shell_call" and facts.pending


def drop_orphan_function_calls(
    items: Iterable[Any],
    pruning_indexes: Iterable[int] | None = None,
    *,
    output_pruning_indexes: Iterable[int] | None = None,
) -> list[Any]:
    """Drop tool calls that have no output, with the reasoning run directly before them.

    A call (one of the eight call types) is kept when an output of its output type
    with the same ``call_id`` is anywhere in the list. Also kept: an anonymous
    ``tool_search_call`` answered by a later anonymous output, a ``program`` that still
    owns retained items, a pending hosted ``shell_call`` issued by a program. Items
    issued by an orphan program are dropped with it. With ``pruning_indexes`` only
    those positions may be dropped (reasoning included). With
    ``output_pruning_indexes``, outputs at those positions whose call is gone are
    dropped too. Linear in the number of items.
    """
    items = _as_list(items, "items")
    length = len(items)
    prunable = _index_mask(pruning_indexes, "pruning_indexes", length)
    output_prunable = _index_mask(output_pruning_indexes, "output_pruning_indexes", length)
    # Each item is read once, dump and fields, before the next (as the Rust engine does).
    facts = [_orphan_facts(_dumped(item)) for item in _each(items, length)]

    # The six passes of the Rust engine's orphans::kept, with the same names and order.
    completed, retained_owner_ids = _completed_and_retained_owners(facts, prunable)
    matched_anonymous = _matched_anonymous_searches(facts)
    programs = _active_and_orphan_programs(facts, prunable, completed, retained_owner_ids)
    dropped, orphaned = _drop_orphans(facts, prunable, completed, matched_anonymous, programs)
    if output_prunable is not None:
        _drop_outputs_without_calls(facts, output_prunable, dropped)
    if any(dropped):
        _drop_reasoning_before_orphans(facts, prunable, dropped, orphaned)
    return _pick(items, length, [index for index in range(length) if not dropped[index]])


def _completed_and_retained_owners(
    items: list[_Facts | None], prunable: list[bool] | None
) -> tuple[dict[str, set[str]], set[str]]:
    """Pass 1: the call ids of the outputs present (per output type), and the program
    ids that still own a retained item."""
    completed: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
    retained_owner_ids: set[str] = set()
    for index, facts in enumerate(items):
        if facts is None:
            continue
        kind = facts.kind
        if kind in OUTPUT_TYPES and facts.call_id is not None:
            completed[kind].add(facts.call_id)
        owner = facts.program_owner
        if owner is None:
            continue
        if prunable is not None:
            retained = not prunable[index]
        else:
            retained = _is_pending_hosted_shell_call(facts) or (
                kind in PROGRAM_OWNED_HOSTED_TYPES or kind in OUTPUT_TYPES
            )
        if retained:
            retained_owner_ids.add(owner)
    return completed, retained_owner_ids


def _matched_anonymous_searches(items: list[_Facts | None]) -> set[int]:
    """Pass 2: anonymous tool searches pair with later anonymous outputs, innermost
    first. The positions of the searches that found their output."""
    matched_anonymous: set[int] = set()
    pending_outputs = 0
    for index in range(len(items) - 1, -1, -1):
        facts = items[index]
        if facts is None or facts.call_id is not None:
            continue
        if facts.kind == "tool_search_output":
            pending_outputs += 1
        elif facts.kind == "tool_search_call" and pending_outputs > 0:
            matched_anonymous.add(index)
            pending_outputs -= 1
    return matched_anonymous


def _active_and_orphan_programs(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    completed: dict[str, set[str]],
    retained_owner_ids: set[str],
) -> tuple[set[str], set[str]]:
    """Pass 3: the prunable programs without an output, active while they own a
    retained item, orphan otherwise."""
    active_programs: set[str] = set()
    orphan_programs: set[str] = set()
    for index, facts in enumerate(items):
        if facts is None or facts.kind != "program":
            continue
        if prunable is not None and not prunable[index]:
            continue
        call_id = facts.call_id
        if call_id is None or call_id in completed["program_output"]:
            continue
        (active_programs if call_id in retained_owner_ids else orphan_programs).add(call_id)
    return active_programs, orphan_programs


def _drop_orphans(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    completed: dict[str, set[str]],
    matched_anonymous: set[int],
    programs: tuple[set[str], set[str]],
) -> tuple[list[bool], list[bool]]:
    """Pass 4: drop the prunable calls without an output (unless still answered in some
    other way) and the items that orphan programs issued. Returns ``(dropped,
    orphaned)``: orphaned marks a drop as an orphan (not merely as an output whose call
    is gone), which also takes the reasoning run directly before it."""
    active_programs, orphan_programs = programs
    dropped = [False] * len(items)
    orphaned = [False] * len(items)
    for index, facts in enumerate(items):
        if facts is None or (prunable is not None and not prunable[index]):
            continue
        kind = facts.kind
        if kind is None:
            continue
        owner = facts.program_owner
        if owner is not None and owner in orphan_programs:
            dropped[index] = orphaned[index] = True
            continue
        output_type = CALL_TO_OUTPUT_TYPE.get(kind)
        if output_type is None:
            continue
        if owner is not None and _is_pending_hosted_shell_call(facts):
            continue
        call_id = facts.call_id
        if call_id is not None:
            if kind == "program" and call_id in active_programs:
                continue
            if call_id in completed[output_type]:
                continue
        elif kind == "tool_search_call" and index in matched_anonymous:
            continue
        dropped[index] = orphaned[index] = True
    return dropped, orphaned


def _drop_outputs_without_calls(
    items: list[_Facts | None], output_prunable: list[bool], dropped: list[bool]
) -> None:
    """Pass 5 (with ``output_pruning_indexes``): drop the outputs at ``output_prunable``
    positions whose call did not stay."""
    available: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
    for index, facts in enumerate(items):
        if facts is None or dropped[index] or facts.kind is None:
            continue
        output_type = CALL_TO_OUTPUT_TYPE.get(facts.kind)
        if output_type is not None and facts.call_id is not None:
            available[output_type].add(facts.call_id)
    for index, facts in enumerate(items):
        if facts is None or dropped[index] or not output_prunable[index]:
            continue
        kind = facts.kind
        if (
            kind in OUTPUT_TYPES
            and facts.call_id is not None
            and facts.call_id not in available[kind]
        ):
            dropped[index] = True


def _drop_reasoning_before_orphans(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    dropped: list[bool],
    orphaned: list[bool],
) -> None:
    """Pass 6: a reasoning item belongs to the next non-reasoning item; it goes when
    that item was dropped as an orphan (one backward sweep, so long reasoning runs stay
    linear)."""
    follower_dropped = False
    for index in range(len(items) - 1, -1, -1):
        facts = items[index]
        if facts is not None and facts.kind == "reasoning":
            if follower_dropped and not dropped[index]:
                if prunable is None or prunable[index]:
                    dropped[index] = True
        else:
            follower_dropped = orphaned[index]


# --- session-callback classification -----------------------------------------------


def classify_callback_output(
    history: Iterable[Any], new_items: Iterable[Any], combined: Iterable[Any]
) -> tuple[list[int], list[int]]:
    """Classify what a session input callback returned (docs/design.md, rules 1-6).

    ``history`` and ``new_items`` are the copies the callback received, ``combined``
    what it returned. Returns ``(history_positions, persisted_positions)``: ascending
    positions of ``combined`` that are history, and those to persist as this turn's
    items. Positions in neither are repeats (model input only).
    """
    history = _as_list(history, "history")
    history_length = len(history)
    new_items = _as_list(new_items, "new_items")
    new_length = len(new_items)
    combined = _as_list(combined, "combined")
    combined_length = len(combined)
    history_ids = {id(item) for item in _each(history, history_length)}
    new_index_by_id: dict[int, int] = {}
    for index, item in enumerate(_each(new_items, new_length)):
        new_index_by_id.setdefault(id(item), index)
    combined_ids = [id(item) for item in _each(combined, combined_length)]

    # Pass 1: identity. None marks positions left for the content pass.
    HISTORY, PERSIST, REPEAT = 0, 1, 2
    labels: list[int | None] = [None] * combined_length
    placed = [False] * new_length
    for position, item_id in enumerate(combined_ids):
        if item_id in history_ids:
            labels[position] = HISTORY
            continue
        new_index = new_index_by_id.get(item_id)
        if new_index is None:
            continue
        labels[position] = REPEAT if placed[new_index] else PERSIST
        placed[new_index] = True

    # Pass 2: content, in list order, for reconstructions. Each item is keyed once:
    # the unplaced new items last to first, then the other new items in order, then the
    # leftover returned items in order; the history in order when first needed.
    if None in labels:
        keys_of_new: list[bytes | None] = [None] * new_length
        unplaced_by_key: dict[bytes, list[int]] = {}
        for index in range(new_length - 1, -1, -1):
            if not placed[index]:
                key = content_key(_read(new_items, new_length, index))
                keys_of_new[index] = key
                unplaced_by_key.setdefault(key, []).append(index)
        new_keys = {
            content_key(_read(new_items, new_length, index)) if key is None else key
            for index, key in enumerate(keys_of_new)
        }
        history_keys: set[bytes] | None = None
        for position in range(combined_length):
            if labels[position] is not None:
                continue
            key = content_key(_read(combined, combined_length, position))
            waiting = unplaced_by_key.get(key)
            if waiting:
                waiting.pop()  # stored last-first, so this is the earliest unplaced one
                labels[position] = PERSIST
                continue
            if history_keys is None:
                history_keys = {content_key(h) for h in _each(history, history_length)}
            if key in history_keys:
                labels[position] = HISTORY
            elif key in new_keys:
                labels[position] = REPEAT
            else:
                labels[position] = PERSIST

    history_positions = [p for p, label in enumerate(labels) if label == HISTORY]
    persisted_positions = [p for p, label in enumerate(labels) if label == PERSIST]
    return history_positions, persisted_positions


# --- exact JSON decoding ---------------------------------------------------------------

# Digits in a row from which a JSON integer may not fit in 64 bits (orjson would read it
# as a float): every integer of up to 18 digits fits in i64.
_LONG_RUN = b"0" * 19
# Maps each digit to "0" and every other byte to a space, so a run becomes a substring.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def long_integer_candidates(texts: Iterable[Any]) -> list[int]:
    """Positions of the texts (str or bytes) holding 19 or more consecutive ASCII digits.

    A JSON integer there may not fit in 64 bits, which orjson would read as a float;
    such texts are decoded by the standard library instead. A long run inside a string
    is reported too (it only costs a slower decode). Other values raise TypeError
    naming their position.
    """
    texts = _as_list(texts, "texts")
    positions = []
    for position, text in enumerate(_each(texts, len(texts))):
        # Subclasses by their contents, not their methods.
        if isinstance(text, bytes):
            data = text
        elif isinstance(text, str):
            data = str.encode(text, "utf-8", "surrogatepass")
        else:
            raise TypeError(f"texts[{position}] must be str or bytes, not {type(text).__name__}")
        if _LONG_RUN in bytes.translate(data, _DIGITS_AS_ZEROS):
            positions.append(position)
    return positions


# --- json.dumps(value, sort_keys=True, default=str) text ------------------------------

_JSON_SCALARS = (str, int, float, bool, type(None))


def _walkable(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind in _JSON_SCALARS:
        if kind is int:
            try:
                int.__repr__(value)
            except ValueError:
                return False  # beyond the digit limit: json.dumps raises its own error
        return True
    if kind is dict:
        return depth < MAX_DEPTH and all(
            type(key) is str and _walkable(member, depth + 1) for key, member in value.items()
        )
    if kind is list or kind is tuple:
        return depth < MAX_DEPTH and all(_walkable(member, depth + 1) for member in value)
    return False


def sorted_json_text(value: Any, skip: tuple[str, ...] | None = None) -> str | None:
    """``json.dumps(value, sort_keys=True, default=str)`` of a value made only of exact
    dicts with str keys, lists, tuples, str, int, float, bool and None, nested at most
    MAX_DEPTH levels, leaving out the top-level dict keys named in ``skip`` (a tuple of
    str); None for any other value (json.dumps then decides: its text or its error)."""
    if skip is not None:
        skip = str_tuple(skip, "skip")
    if not _walkable(value, 0):
        return None
    if skip and type(value) is dict:
        value = {key: member for key, member in value.items() if key not in skip}
    return json.dumps(value, sort_keys=True, default=str)


# The drop-in support reads the functions above: imported once they exist.
from histcore.engine.pure_dropin import (  # noqa: E402
    DictText,
    NameWatch,
    dict_sorted_json_texts,
    screened_dedupe_key,
    screened_deduplicate,
    screened_drop_orphan_function_calls,
    shallow_dict_copies,
)
from histcore.engine.pure_rows import decode_rows  # noqa: E402
