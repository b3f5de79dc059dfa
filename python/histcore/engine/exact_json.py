"""JSON text of stored values: orjson's speed with the standard library's exactness.

orjson refuses integers beyond 64 bits when writing and reads them as floats (dropping
digits) when reading, and writes non-finite floats as ``null``. The standard ``json``
module keeps all of these exact, as the Agents SDK does. ``dumps``, ``loads_strict``
(standard JSON: NaN and Infinity refused) and ``loads_like_stdlib`` (whatever
``json.loads`` accepts) use orjson and hand exactly those cases to ``json``; a text
goes to ``json.loads`` when it holds 19 or more digits in a row
(``long_integer_candidates``, one fast scan).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from histcore.engine.backend import backend_module
from histcore.engine.wording import with_article

__all__ = [
    "NULL",
    "dumps",
    "has_non_finite",
    "kind_of",
    "loads_like_stdlib",
    "loads_strict",
    "surrogate_pair",
]

#: What orjson writes for a non-finite float: only a text holding it may have lost one.
NULL = b"null"

long_integer_candidates = backend_module.long_integer_candidates

# A high and a low surrogate as two str characters: JSON text holds them only as the
# escapes of the one character they encode together, and reads them back as that.
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def surrogate_pair(text: str) -> str | None:
    """The first high and low surrogate that stand as two characters in ``text``
    (``"\\ud83d\\ude00"``), or None. No JSON text reads back as such a str: the
    escapes of the pair read as the one character they encode (``"😀"``), while a lone
    surrogate's escape reads back as itself. ``text`` must be an exact str."""
    if text.isascii():
        return None
    pair = _SURROGATE_PAIR.search(text)
    return None if pair is None else pair.group()


def has_non_finite(value: Any) -> bool:
    """True when a non-finite float sits anywhere in ``value`` (orjson writes it as null)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite(member) for member in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_non_finite(member) for member in value)
    return False


def dumps(value: Any) -> bytes:
    """``value`` as UTF-8 JSON text; what orjson refuses or would change (integers
    beyond 64 bits, non-str keys, non-finite floats) is written by ``json.dumps``.
    Raises TypeError or ValueError for values neither can write."""
    try:
        text = orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()
    if NULL in text and has_non_finite(value):
        return json.dumps(value).encode()
    return text


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not allowed", name, 0)


def _stdlib_loads_strict(data: str | bytes | bytearray) -> Any:
    """``json.loads`` refusing NaN and Infinity tokens, as orjson does."""
    return json.loads(data, parse_constant=_refuse_constant)


def loads_strict(data: str | bytes | bytearray) -> Any:
    """The value of standard JSON text ``data``: integers of any size exact, lone
    surrogates' ``\\udcxx`` escapes and deep nesting read as ``json`` reads them, bare
    NaN and Infinity tokens refused. orjson reads it where it reads it exactly; text
    that may hold an integer beyond 64 bits, and text orjson refuses, go to ``json``.

    Raises TypeError for data that is not str, bytes or bytearray, ValueError
    (``json.JSONDecodeError``) for text that is not JSON, and RecursionError for text
    nested too deeply even for ``json``.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, (str, bytes)):
        raise TypeError(f"JSON text must be str or bytes, not {type(data).__name__}")
    if long_integer_candidates([data]):
        return _stdlib_loads_strict(data)
    try:
        return orjson.loads(data)
    except (ValueError, RecursionError):
        pass
    return _stdlib_loads_strict(data)


def loads_like_stdlib(data: str | bytes) -> Any:
    """Exactly what ``json.loads(data)`` returns or raises (NaN and Infinity tokens
    included), read by orjson wherever that gives the same: text that may hold an
    integer beyond 64 bits, and text orjson refuses, go to ``json.loads``."""
    if long_integer_candidates([data]):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def kind_of(value: Any) -> str:
    """How an error message names the JSON kind of ``value`` ("a string", "null", "an
    array" for a list or tuple; "a datetime" for what JSON has no kind for).

    Asks only ``type(value)``, never the value (``isinstance`` would ask an object's
    ``__class__``, which may be anything)."""
    kind = type(value)
    if value is None:
        return "null"
    if issubclass(kind, bool):
        return "a boolean"
    if issubclass(kind, (int, float)):
        return "a number"
    if issubclass(kind, str):
        return "a string"
    if issubclass(kind, (list, tuple)):
        return "an array"
    if issubclass(kind, dict):
        return "an object"
    return with_article(kind.__name__)
