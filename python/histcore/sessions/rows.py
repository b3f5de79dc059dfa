"""What a stored session row is: the one rule every reader of stored rows applies.

The sessions (SQLite, PostgreSQL, memory) and ``histcore doctor`` decode a row's
``message_data`` with ``decode_stored``. A row it refuses (``CorruptRow``, whose message
says why) holds no item: the sessions skip it (``pop_item`` leaves it where it is), the
doctor reports it as not valid JSON. A row it reads is an item to all of them.

Rules: bytes are JSON text in the encoding ``json.loads`` detects (UTF-8, UTF-16 or
UTF-32, with or without a byte order mark), decoded strictly (CESU-8 and lone
surrogates refused); a str may start with one byte order mark; the text is JSON as
``json.loads`` reads it (``NaN``/``Infinity`` included, integers exact), nested at most
``MAX_DEPTH`` deep (measured on the text), and an object. See docs/design.md,
"Sessions".
"""

from __future__ import annotations

import json
import re
from itertools import accumulate, compress, count, repeat
from operator import ge
from typing import Any

from histcore.engine.exact_json import loads_like_stdlib
from histcore.engine.items import MAX_DEPTH

__all__ = [
    "CorruptRow",
    "decode_json",
    "decode_stored",
    "deep_positions",
    "stored_text",
    "too_deep",
]


class CorruptRow(ValueError):
    """A stored row that holds no item: it is not JSON text, not JSON, JSON but not an
    object, or nested deeper than ``MAX_DEPTH``. The message says which, for the log
    line that names the row; ``reason`` says it in a few words that many rows share (a
    report groups rows by it)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


# --- the text of a row ------------------------------------------------------------------

_BOM = "\ufeff"
# A surrogate code point (U+D800-U+DFFF) in UTF-8's three-byte form, which UTF-8 forbids.
_UTF8_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")


def stored_text(data: Any) -> str:
    """The JSON text of a row stored as ``data`` (see the module docstring);
    CorruptRow when it is not text."""
    if isinstance(data, str):
        return data[1:] if data.startswith(_BOM) else data
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        kind = "NULL" if data is None else type(data).__name__
        raise CorruptRow(f"not JSON: message_data is {kind}, not JSON text", f"{kind}, not text")
    encoding = json.detect_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
        short = f"not valid {name}"
        detail = exc.reason
        if name == "UTF-8" and _UTF8_SURROGATE.match(data, exc.start):
            short += " (a surrogate written as UTF-8 bytes: CESU-8)"
            detail = "a surrogate code point written as UTF-8 bytes (CESU-8)"
        raise CorruptRow(
            f"not JSON text: not valid {name} ({detail} at byte {exc.start})", short
        ) from None
    # utf-8-sig, utf-16 and utf-32 drop a leading byte order mark; the others keep it.
    return text[1:] if text.startswith(_BOM) else text


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


def too_deep(text: bytes | str) -> bool:
    """Whether JSON ``text`` (a str, or UTF-8 bytes) nests deeper than MAX_DEPTH (for
    text that is not JSON the answer does not matter: it holds no item either way)."""
    if len(text) <= _LONGEST_SHALLOW:
        return False
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH


def deep_positions(texts: list[Any]) -> list[int]:
    """The positions of the texts (str or UTF-8 bytes) nested deeper than MAX_DEPTH
    (most are too short to be: only their lengths are looked at)."""
    long_enough = compress(count(), map(ge, map(len, texts), repeat(_LONGEST_SHALLOW + 1)))
    return [position for position in long_enough if too_deep(texts[position])]


# --- the item -------------------------------------------------------------------------

# What a JSON value that is not an object is, for messages.
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number"}


def _not_an_item(value: Any) -> CorruptRow:
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "true" if value else "false"
    else:
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
    return CorruptRow(f"not an input item: it is a JSON {kind}, not an object", "not an item")


def decode_json(data: Any) -> Any:
    """The JSON value stored as ``data``, whatever its kind: every step of
    ``decode_stored`` but the last (CorruptRow when the row is not JSON text, not JSON,
    or nested too deeply)."""
    text = stored_text(data)
    if too_deep(text):
        raise CorruptRow(
            f"nested deeper than {MAX_DEPTH} levels, deeper than any item",
            f"nested deeper than {MAX_DEPTH} levels",
        )
    try:
        return loads_like_stdlib(text)
    except (ValueError, RecursionError) as exc:
        raise CorruptRow(f"not JSON ({exc})", "not JSON") from None


def decode_stored(data: Any) -> dict[str, Any]:
    """The item stored as ``data`` (bytes or str); CorruptRow, saying why, when the row
    holds none (see the module docstring)."""
    item = decode_json(data)
    if type(item) is not dict:
        raise _not_an_item(item)
    return item
