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

import json
import math
import re
from collections.abc import Iterable
from typing import Any

import xxhash

from histcore.engine.pure_args import (
    MAX_DEPTH,
    as_list,
    dumped,
    each,
    pick,
    plain_str,
    read_item,
    str_field,
    str_tuple,
)
from histcore.engine.pure_copy import deep_copy_items, plain_json_copy
from histcore.engine.pure_input import input_problems, repair_input
from histcore.engine.pure_orphans import drop_orphan_function_calls
from histcore.engine.vocabulary import (
    CALL_AND_OUTPUT_TYPES,
    FAKE_ID,
    METADATA_KEYS,
    PRECURSOR_TYPES,
)

__all__ = [
    "MAX_DEPTH",
    "DictText",
    "NameWatch",
    "ScreenedKey",
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

# --- dedupe keys ---------------------------------------------------------------------


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
    return _key_of(dumped(item))[0]


def dedupe_keys(items: Iterable[Any]) -> list[str | None]:
    """``dedupe_key`` of every item, in order."""
    items = as_list(items, "items")
    return [_key_of(dumped(item))[0] for item in each(items, len(items))]


def deduplicate_input_items(items: Iterable[Any]) -> list[Any]:
    """Keep the first occurrence (value and position) of every key."""
    items = as_list(items, "items")
    length = len(items)
    seen: set[str] = set()
    kept: list[int] = []
    for index, item in enumerate(each(items, length)):
        key = _key_of(dumped(item))[0]
        if key is None:
            kept.append(index)
        elif key not in seen:
            seen.add(key)
            kept.append(index)
    return pick(items, length, kept)


def deduplicate_input_items_preferring_latest(items: Iterable[Any]) -> list[Any]:
    """One item per key holding its latest value, anchored per docs/design.md.

    Precursors (calls, approval requests, reasoning) stay at their earliest position,
    every other keyed item at its latest one; unkeyed items stay where they are.
    """
    items = as_list(items, "items")
    length = len(items)
    keys: list[str | None] = []
    latest: dict[str, int] = {}
    anchor: dict[str, int] = {}
    for index, item in enumerate(each(items, length)):
        key, precursor = _key_of(dumped(item))
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
    return pick(items, length, slots)


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
    text = plain_str(text)
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
                text = plain_str(key)
                if top and text in METADATA_KEYS:
                    continue
            else:
                text = plain_str(str(key))
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
    _encode(dumped(item), out, 0, top=True)
    return "".join(out)


def canonical_json(item: Any) -> bytes:
    """The canonical JSON encoding of an item's content (see docs/design.md)."""
    return _canonical_text(item).encode("utf-8")


def content_key(item: Any) -> bytes:
    """16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian)."""
    return xxhash.xxh3_128_digest(canonical_json(item))


def content_keys(items: Iterable[Any]) -> list[bytes]:
    """``content_key`` of every item, in order."""
    items = as_list(items, "items")
    return [content_key(item) for item in each(items, len(items))]


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
    history = as_list(history, "history")
    history_length = len(history)
    new_items = as_list(new_items, "new_items")
    new_length = len(new_items)
    combined = as_list(combined, "combined")
    combined_length = len(combined)
    history_ids = {id(item) for item in each(history, history_length)}
    new_index_by_id: dict[int, int] = {}
    for index, item in enumerate(each(new_items, new_length)):
        new_index_by_id.setdefault(id(item), index)
    combined_ids = [id(item) for item in each(combined, combined_length)]

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
                key = content_key(read_item(new_items, new_length, index))
                keys_of_new[index] = key
                unplaced_by_key.setdefault(key, []).append(index)
        new_keys = {
            content_key(read_item(new_items, new_length, index)) if key is None else key
            for index, key in enumerate(keys_of_new)
        }
        history_keys: set[bytes] | None = None
        for position in range(combined_length):
            if labels[position] is not None:
                continue
            key = content_key(read_item(combined, combined_length, position))
            waiting = unplaced_by_key.get(key)
            if waiting:
                waiting.pop()  # stored last-first, so this is the earliest unplaced one
                labels[position] = PERSIST
                continue
            if history_keys is None:
                history_keys = {content_key(h) for h in each(history, history_length)}
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
    texts = as_list(texts, "texts")
    positions = []
    for position, text in enumerate(each(texts, len(texts))):
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
    ScreenedKey,
    dict_sorted_json_texts,
    screened_dedupe_key,
    screened_deduplicate,
    screened_drop_orphan_function_calls,
    shallow_dict_copies,
)
from histcore.engine.pure_rows import decode_rows  # noqa: E402
