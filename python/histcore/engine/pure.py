"""Pure-Python twin of the Rust engine (``histcore._core``).

Every public name here has the same signature, results and exceptions as its Rust
counterpart; ``tests/engine/test_parity.py`` and the differential tests hold both to that.
The twin is the executable specification: when the two disagree, read this file.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterable
from typing import Any

import xxhash

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
    "canonical_json",
    "classify_callback_output",
    "content_key",
    "content_keys",
    "dedupe_key",
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "deep_copy_items",
    "drop_orphan_function_calls",
    "long_integer_candidates",
    "plain_json_copy",
    "sorted_json_text",
]

#: Containers nested deeper than this raise ValueError (also catches cycles).
MAX_DEPTH = 256


_REJECTED_SEQUENCES = (str, bytes, bytearray, dict)


# --- argument handling -------------------------------------------------------------


def _as_list(value: Any, name: str) -> list[Any]:
    """Return ``value`` as a list, or raise TypeError naming the argument."""
    if isinstance(value, list):
        return value
    if isinstance(value, _REJECTED_SEQUENCES) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of items, not {type(value).__name__}")
    return list(value)


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
        if 0 <= index < length:
            mask[index] = True
    return mask


def _dumped(item: Any) -> Any:
    """The item as the engine sees it: pydantic-style models become their dump."""
    if isinstance(item, dict):
        return item
    if hasattr(item, "model_dump"):
        return item.model_dump(exclude_unset=True)
    return item


def _plain_str(value: str) -> str:
    """The characters of a str (or str subclass) as an exact str."""
    return value if type(value) is str else str.__str__(value)


# --- dedupe keys ---------------------------------------------------------------------


def _key_of(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    if payload.get("role") is not None:
        return None
    kind: Any = payload.get("type") or None
    if isinstance(kind, str):
        kind_text = _plain_str(kind)
        if kind_text == "message":
            return None
    else:
        kind_text = str(kind)
    call_id = payload.get("call_id")
    if isinstance(call_id, str) and isinstance(kind, str) and kind_text in CALL_AND_OUTPUT_TYPES:
        return f"call_id:{kind_text}:{_plain_str(call_id)}"
    item_id = payload.get("id")
    if isinstance(item_id, str) and _plain_str(item_id) != FAKE_ID:
        return f"id:{kind_text}:{_plain_str(item_id)}"
    if isinstance(call_id, str):
        return f"call_id:{kind_text}:{_plain_str(call_id)}"
    approval_request_id = payload.get("approval_request_id")
    if isinstance(approval_request_id, str):
        return f"approval_request_id:{kind_text}:{_plain_str(approval_request_id)}"
    return None


def _is_precursor(payload: Any) -> bool:
    kind = payload.get("type")
    return isinstance(kind, str) and _plain_str(kind) in PRECURSOR_TYPES


def dedupe_key(item: Any) -> str | None:
    """Identity key of an item, or None when it never collapses (see DESIGN.md)."""
    return _key_of(_dumped(item))


def dedupe_keys(items: Iterable[Any]) -> list[str | None]:
    """``dedupe_key`` of every item, in order."""
    return [_key_of(_dumped(item)) for item in _as_list(items, "items")]


def deduplicate_input_items(items: Iterable[Any]) -> list[Any]:
    """Keep the first occurrence (value and position) of every key."""
    seen: set[str] = set()
    result: list[Any] = []
    for item in _as_list(items, "items"):
        key = _key_of(_dumped(item))
        if key is None:
            result.append(item)
        elif key not in seen:
            seen.add(key)
            result.append(item)
    return result


def deduplicate_input_items_preferring_latest(items: Iterable[Any]) -> list[Any]:
    """One item per key holding its latest value, anchored per DESIGN.md.

    Precursors (calls, approval requests, reasoning) stay at their earliest position,
    every other keyed item at its latest one; unkeyed items stay where they are.
    """
    items = _as_list(items, "items")
    keys: list[str | None] = []
    latest: dict[str, Any] = {}
    anchor: dict[str, int] = {}
    for index, item in enumerate(items):
        payload = _dumped(item)
        key = _key_of(payload)
        keys.append(key)
        if key is None:
            continue
        latest[key] = item
        if key not in anchor or not _is_precursor(payload):
            anchor[key] = index
    result: list[Any] = []
    for index, (item, key) in enumerate(zip(items, keys, strict=True)):
        if key is None:
            result.append(item)
        elif anchor[key] == index:
            result.append(latest[key])
    return result


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


def _encode(value: Any, out: list[str], depth: int) -> None:
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
        entries = sorted(
            ((_plain_str(k) if isinstance(k, str) else str(k), v) for k, v in value.items()),
            key=_entry_key,
        )
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
        out.append("[")
        for position, member in enumerate(value):
            if position:
                out.append(",")
            _encode(member, out, depth + 1)
        out.append("]")
    else:
        _encode_str(str(value), out)


def _entry_key(entry: tuple[str, Any]) -> str:
    return entry[0]


def _canonical_text(item: Any) -> str:
    payload = _dumped(item)
    if isinstance(payload, dict) and any(key in payload for key in METADATA_KEYS):
        payload = {k: v for k, v in payload.items() if k not in METADATA_KEYS}
    out: list[str] = []
    _encode(payload, out, 0)
    return "".join(out)


def canonical_json(item: Any) -> bytes:
    """The canonical JSON encoding of an item's content (see DESIGN.md)."""
    return _canonical_text(item).encode("utf-8")


def content_key(item: Any) -> bytes:
    """16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian)."""
    return xxhash.xxh3_128_digest(canonical_json(item))


def content_keys(items: Iterable[Any]) -> list[bytes]:
    """``content_key`` of every item, in order."""
    return [content_key(item) for item in _as_list(items, "items")]


# --- deep copy -----------------------------------------------------------------------


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        return {k: _copy(v, depth + 1) for k, v in value.items()}
    if kind is list:
        if depth >= MAX_DEPTH:
            raise ValueError(f"value nested deeper than {MAX_DEPTH} levels")
        return [_copy(v, depth + 1) for v in value]
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
    return [_copy(item, 0) for item in _as_list(items, "items")]


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
        if kind is not dict and kind is not list or depth >= MAX_DEPTH:
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


def _program_caller_id(payload: Any) -> str | None:
    caller = payload.get("caller")
    if not isinstance(caller, dict) or caller.get("type") != "program":
        return None
    caller_id = caller.get("caller_id")
    return caller_id if isinstance(caller_id, str) else None


def _is_pending_hosted_shell_call(payload: Any) -> bool:
    if payload.get("type") != "shell_call":
        return False
    status = payload.get("status")
    return status is None or status == "in_progress"


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
    payloads = [_dumped(item) for item in items]
    dicts = [p if isinstance(p, dict) else None for p in payloads]

    completed: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
    retained_owner_ids: set[str] = set()
    for index, payload in enumerate(dicts):
        if payload is None:
            continue
        kind = payload.get("type")
        if isinstance(kind, str) and kind in OUTPUT_TYPES:
            call_id = payload.get("call_id")
            if isinstance(call_id, str):
                completed[kind].add(call_id)
        owner = _program_caller_id(payload)
        if owner is None:
            continue
        if prunable is not None:
            retained = not prunable[index]
        else:
            retained = _is_pending_hosted_shell_call(payload) or (
                isinstance(kind, str)
                and (kind in PROGRAM_OWNED_HOSTED_TYPES or kind in OUTPUT_TYPES)
            )
        if retained:
            retained_owner_ids.add(owner)

    # Anonymous tool searches pair with later anonymous outputs, innermost first.
    matched_anonymous: set[int] = set()
    pending_outputs = 0
    for index in range(length - 1, -1, -1):
        payload = dicts[index]
        if payload is None or isinstance(payload.get("call_id"), str):
            continue
        kind = payload.get("type")
        if kind == "tool_search_output":
            pending_outputs += 1
        elif kind == "tool_search_call" and pending_outputs > 0:
            matched_anonymous.add(index)
            pending_outputs -= 1

    active_programs: set[str] = set()
    orphan_programs: set[str] = set()
    for index, payload in enumerate(dicts):
        if payload is None or payload.get("type") != "program":
            continue
        if prunable is not None and not prunable[index]:
            continue
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or call_id in completed["program_output"]:
            continue
        (active_programs if call_id in retained_owner_ids else orphan_programs).add(call_id)

    dropped = [False] * length
    # Dropped as an orphan (not merely as an output whose call is gone): such a drop
    # also takes the reasoning run directly before it.
    orphaned = [False] * length
    any_dropped = False
    for index, payload in enumerate(dicts):
        if payload is None or (prunable is not None and not prunable[index]):
            continue
        kind = payload.get("type")
        if not isinstance(kind, str):
            continue
        owner = _program_caller_id(payload)
        if owner is not None and owner in orphan_programs:
            dropped[index] = orphaned[index] = any_dropped = True
            continue
        output_type = CALL_TO_OUTPUT_TYPE.get(kind)
        if output_type is None:
            continue
        if owner is not None and _is_pending_hosted_shell_call(payload):
            continue
        call_id = payload.get("call_id")
        if isinstance(call_id, str):
            if kind == "program" and call_id in active_programs:
                continue
            if call_id in completed[output_type]:
                continue
        elif kind == "tool_search_call" and index in matched_anonymous:
            continue
        dropped[index] = orphaned[index] = any_dropped = True

    if output_prunable is not None:
        available: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
        for index, payload in enumerate(dicts):
            if payload is None or dropped[index]:
                continue
            kind = payload.get("type")
            output_type = CALL_TO_OUTPUT_TYPE.get(kind) if isinstance(kind, str) else None
            call_id = payload.get("call_id")
            if output_type is not None and isinstance(call_id, str):
                available[output_type].add(call_id)
        for index, payload in enumerate(dicts):
            if payload is None or dropped[index] or not output_prunable[index]:
                continue
            kind = payload.get("type")
            call_id = payload.get("call_id")
            if (
                isinstance(kind, str)
                and kind in OUTPUT_TYPES
                and isinstance(call_id, str)
                and call_id not in available[kind]
            ):
                dropped[index] = any_dropped = True

    if not any_dropped:
        return list(items)

    # A reasoning item belongs to the next non-reasoning item; it goes when that item
    # was dropped as an orphan (one backward sweep, so long reasoning runs stay linear).
    drop_reasoning = [False] * length
    follower_dropped = False
    for index in range(length - 1, -1, -1):
        payload = dicts[index]
        if payload is not None and payload.get("type") == "reasoning":
            if follower_dropped and not dropped[index]:
                if prunable is None or prunable[index]:
                    drop_reasoning[index] = True
        else:
            follower_dropped = orphaned[index]
    return [
        item for index, item in enumerate(items) if not dropped[index] and not drop_reasoning[index]
    ]


# --- session-callback classification -----------------------------------------------


def classify_callback_output(
    history: Iterable[Any], new_items: Iterable[Any], combined: Iterable[Any]
) -> tuple[list[int], list[int]]:
    """Classify what a session input callback returned (DESIGN.md, rules 1-6).

    ``history`` and ``new_items`` are the copies the callback received, ``combined``
    what it returned. Returns ``(history_positions, persisted_positions)``: ascending
    positions of ``combined`` that are history, and those to persist as this turn's
    items. Positions in neither are repeats (model input only).
    """
    history = _as_list(history, "history")
    new_items = _as_list(new_items, "new_items")
    combined = _as_list(combined, "combined")
    history_ids = {id(item) for item in history}
    new_index_by_id: dict[int, int] = {}
    for index, item in enumerate(new_items):
        new_index_by_id.setdefault(id(item), index)

    # Pass 1: identity. None marks positions left for the content pass.
    HISTORY, PERSIST, REPEAT = 0, 1, 2
    labels: list[int | None] = [None] * len(combined)
    placed = [False] * len(new_items)
    for position, item in enumerate(combined):
        if id(item) in history_ids:
            labels[position] = HISTORY
            continue
        new_index = new_index_by_id.get(id(item))
        if new_index is None:
            continue
        labels[position] = REPEAT if placed[new_index] else PERSIST
        placed[new_index] = True

    # Pass 2: content, in list order, for reconstructions.
    if None in labels:
        unplaced_by_key: dict[bytes, list[int]] = {}
        for index in range(len(new_items) - 1, -1, -1):
            if not placed[index]:
                unplaced_by_key.setdefault(content_key(new_items[index]), []).append(index)
        new_keys = {content_key(item) for item in new_items}
        history_keys: set[bytes] | None = None
        for position, item in enumerate(combined):
            if labels[position] is not None:
                continue
            key = content_key(item)
            waiting = unplaced_by_key.get(key)
            if waiting:
                waiting.pop()  # stored last-first, so this is the earliest unplaced one
                labels[position] = PERSIST
                continue
            if history_keys is None:
                history_keys = {content_key(h) for h in history}
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
    for position, text in enumerate(texts):
        if isinstance(text, bytes):
            data = text
        elif isinstance(text, str):
            data = text.encode("utf-8", "surrogatepass")
        else:
            raise TypeError(f"texts[{position}] must be str or bytes, not {type(text).__name__}")
        if _LONG_RUN in data.translate(_DIGITS_AS_ZEROS):
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
        if type(skip) is not tuple:
            raise TypeError(f"skip must be a tuple of str, not {type(skip).__name__}")
        for name in skip:
            if type(name) is not str:
                raise TypeError(
                    f"skip must be a tuple of str, not a tuple holding {type(name).__name__}"
                )
    if not _walkable(value, 0):
        return None
    if skip and type(value) is dict:
        value = {key: member for key, member in value.items() if key not in skip}
    return json.dumps(value, sort_keys=True, default=str)
