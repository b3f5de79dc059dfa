"""The canonical content form of an item (docs/design.md, "Canonical content form"; the
Rust engine's ``rust/core/canonical.rs`` and its walker ``rust/py/encode.rs``):
``canonical_json``, and ``MAX_DEPTH``, the nesting limit of every walk over values."""

from __future__ import annotations

import math
import re
from typing import Any

from histcore.engine.pure.extract import dumped, plain_str
from histcore.engine.vocabulary import METADATA_KEYS

# The item passes here are public at histcore.items alone.
__all__: list[str] = []


#: Containers nested deeper than this raise ValueError (also catches cycles).
MAX_DEPTH = 256


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
