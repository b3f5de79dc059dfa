"""Runs of ASCII digits in JSON text (the Rust engine's ``rust/core/digits.rs``): the texts
that may hold an integer beyond 64 bits, which orjson would read as a float."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list, each

__all__ = ["long_integer_candidates"]


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
