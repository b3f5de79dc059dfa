"""Items to stored JSON text and back, fast, and readable by the Agents SDK both ways.

Encoding uses orjson. What orjson refuses but the standard ``json`` module writes
(non-str dict keys, ints beyond 64 bits, lone surrogates, very deep nesting) and
non-finite floats (which orjson would silently turn into ``null``) are written by
``json.dumps``, exactly as the SDK writes every row. Models (objects with
``model_dump()``) are stored as ``model_dump(exclude_unset=True)``.

Decoding uses orjson and retries what it rejects with ``json.loads`` (the SDK writes
``NaN``/``Infinity`` tokens that orjson does not read). A row that may hold an integer
beyond 64 bits (19 or more digits in a row), which orjson would read as a float, is
read by ``json.loads`` directly, so integers of any size come back exact. A row
neither can read, or one that is JSON but not an object (``42``, ``null``, ``[1]``), holds
no item: it is corrupt, and the caller skips and reports it.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate, compress, count, repeat
from operator import contains, ge, itemgetter
from typing import Any

import orjson

from histcore.engine.exact_json import NULL, has_non_finite, loads_as_json, long_integer_candidates
from histcore.engine.items import MAX_DEPTH

__all__ = [
    "CorruptRow",
    "decode_row",
    "decode_rows",
    "encode_items",
    "encode_items_utf8",
]


_ROW_ID = itemgetter(0)
_DATA = itemgetter(1)


class CorruptRow(ValueError):
    """A stored row that holds no item: it is not JSON, JSON but not an object, or
    nested deeper than ``MAX_DEPTH``. The message says which, for the log line that
    reports the skipped row."""


# --- nesting depth of JSON text ---------------------------------------------------------
#
# The engine copies, keys and compares items nested at most MAX_DEPTH containers deep
# (the item itself counted): a store writes no deeper item and reads no deeper row,
# measured on the text by the one function below, so the limit is the same both ways.

# A text nested deeper than MAX_DEPTH holds at least MAX_DEPTH + 1 bracket pairs.
_LONGEST_SHALLOW = 2 * MAX_DEPTH + 1
# JSON strings (their brackets are no structure), and every byte that is no bracket.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_BRACKET_STEP = [0] * 256
_BRACKET_STEP[ord("[")] = _BRACKET_STEP[ord("{")] = 1
_BRACKET_STEP[ord("]")] = _BRACKET_STEP[ord("}")] = -1


def _too_deep(text: bytes | str) -> bool:
    """Whether JSON ``text`` nests deeper than MAX_DEPTH (for text that is not JSON the
    answer does not matter: it holds no item either way)."""
    if len(text) <= _LONGEST_SHALLOW:
        return False
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH


def _deep_positions(texts: list[Any]) -> list[int]:
    """The positions of the texts nested deeper than MAX_DEPTH (most are too short to
    be: only their lengths are looked at)."""
    long_enough = compress(count(), map(ge, map(len, texts), repeat(_LONGEST_SHALLOW + 1)))
    return [position for position in long_enough if _too_deep(texts[position])]


def _too_deep_error(index: int) -> TypeError:
    return TypeError(
        f"items[{index}] cannot be encoded as JSON: it is nested deeper than {MAX_DEPTH} "
        "levels, which no session stores"
    )


# What a JSON value that is not an object is, for messages.
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number"}


def _not_an_item(value: Any) -> CorruptRow:
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "true" if value else "false"
    else:
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
    return CorruptRow(f"not an input item: it is a JSON {kind}, not an object")


class _DumpFailed(TypeError):
    """A model's ``model_dump()`` raised; the original exception is the cause."""


def _dump(value: Any, dump: Any) -> Any:
    try:
        return dump(exclude_unset=True)
    except Exception as exc:
        raise _DumpFailed(
            f"model_dump() of a {type(value).__name__} raised {type(exc).__name__}: {exc}"
        ) from exc


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None and callable(dump):
        return _dump(value, dump)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _stdlib_text(item: Any, index: int, cause: BaseException | None) -> bytes:
    try:
        return json.dumps(item, default=_default).encode()
    except _DumpFailed as exc:
        raise TypeError(f"items[{index}] cannot be encoded as JSON: {exc}") from exc.__cause__
    except RecursionError:
        raise _too_deep_error(index) from None
    except (TypeError, ValueError) as exc:
        reason = cause if cause is not None else exc
        raise TypeError(f"items[{index}] cannot be encoded as JSON: {reason}") from exc


def _as_dict(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None and callable(dump):
        try:
            dumped = _dump(item, dump)
        except _DumpFailed as exc:
            raise TypeError(f"items[{index}] cannot be encoded as JSON: {exc}") from exc.__cause__
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(
        f"items[{index}] is a {type(item).__name__}, not an input item "
        "(a dict or a model with model_dump())"
    )


def encode_items(items: list[Any]) -> list[str]:
    """The stored JSON text of every item, in order (see ``encode_items_utf8``)."""
    return [data.decode() for data in encode_items_utf8(items)]


def encode_items_utf8(items: list[Any]) -> list[bytes]:
    """The stored JSON text of every item as UTF-8 bytes, in order.

    Raises TypeError naming the first item that is not an input item or cannot be
    encoded (``items[3] cannot be encoded as JSON: ...``); then nothing is returned, so
    a caller that encodes before writing writes nothing.
    """
    if not set(map(type, items)) <= {dict}:
        items = [_as_dict(item, index) for index, item in enumerate(items)]
    dumps = orjson.dumps
    try:
        encoded = [dumps(item, default=_default) for item in items]
    except TypeError:
        encoded = []
        for index, item in enumerate(items):
            try:
                encoded.append(dumps(item, default=_default))
            except TypeError as exc:
                # orjson refuses some values json writes (big ints, int keys, ...).
                encoded.append(_stdlib_text(item, index, exc))
    # Only an item whose text holds "null" can hold a non-finite float (C-level scan).
    for index in compress(range(len(encoded)), map(contains, encoded, repeat(NULL))):
        if has_non_finite(items[index]):
            encoded[index] = _stdlib_text(items[index], index, None)
    for index in _deep_positions(encoded):
        raise _too_deep_error(index)
    return encoded


def decode_row(data: object) -> Any:
    """The item stored as ``data`` (bytes or str); CorruptRow when it is not JSON, not
    an item (a JSON object), or nested deeper than MAX_DEPTH."""
    if not isinstance(data, (bytes, str)):
        raise CorruptRow(f"not JSON: message_data is {type(data).__name__}, not JSON text")
    if _too_deep(data):
        raise CorruptRow(f"nested deeper than {MAX_DEPTH} levels, deeper than any item")
    try:
        item = loads_as_json(data)
    except (ValueError, RecursionError) as exc:
        raise CorruptRow(f"not JSON ({exc})") from None
    if type(item) is not dict:
        raise _not_an_item(item)
    return item


def _fast_decoded(texts: list[Any]) -> list[Any] | None:
    """Every text decoded, when every one holds an item; None when one may not (it is
    then found, and reported, by the row-by-row decode)."""
    if _deep_positions(texts):
        return None
    try:
        exact = long_integer_candidates(texts)
        items = list(map(orjson.loads, texts))
    except (orjson.JSONDecodeError, TypeError):
        return None
    if not set(map(type, items)) <= {dict}:
        return None
    try:
        for position in exact:
            items[position] = decode_row(texts[position])
    except CorruptRow:
        return None
    return items


def decode_rows(
    rows: list[tuple[int, Any]],
) -> tuple[list[int], list[Any], list[tuple[int, str]]]:
    """Decode ``(row_id, message_data)`` rows: ``(ids, items, corrupt)``.

    ``corrupt`` lists ``(row_id, reason)`` of the rows that hold no item (see
    ``decode_row``); they are left out of ``ids`` and ``items``.
    """
    items = _fast_decoded(list(map(_DATA, rows)))
    if items is not None:
        return list(map(_ROW_ID, rows)), items, []
    ids: list[int] = []
    items = []
    corrupt: list[tuple[int, str]] = []
    for row_id, data in rows:
        try:
            item = decode_row(data)
        except CorruptRow as exc:
            corrupt.append((row_id, str(exc)))
            continue
        ids.append(row_id)
        items.append(item)
    return ids, items, corrupt
