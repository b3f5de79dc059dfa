"""``decode_rows`` (the Rust engine's ``rust/py/rows.rs``): a session read's rows decoded
in one call, each by a fast decoder where it gives the exact one's answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histcore.engine.pure.args import as_list
from histcore.engine.pure.digits import long_integer_candidates

__all__ = ["decode_rows"]


def _decoded(text: Any, fast: Callable[[Any], Any], exact: Callable[[Any], Any]) -> Any:
    if type(text) is str and not long_integer_candidates([text]):
        try:
            return fast(text)
        except Exception:
            pass
    return exact(text)


def decode_rows(
    rows: Any,
    fast: Callable[[Any], Any],
    exact: Callable[[Any], Any],
    skipped: tuple[type[BaseException], ...],
) -> Any:
    """The JSON values of a session's rows, as a loop ``for (text,) in rows`` decoding
    each with ``exact`` would build them, skipping a row whose decoding raises an
    instance of ``skipped`` (a tuple of exception types) and raising anything else.

    Each exact str without 19 or more digits in a row is decoded by ``fast`` first,
    and by ``exact`` only if ``fast`` raises; every other text goes to ``exact``.
    ``fast`` must give what ``exact`` gives for every text it accepts (orjson and
    ``json.loads`` do, given that screen). NotImplemented when ``rows`` is not a list
    of exact 1-tuples (the loop then decides).
    """
    if not isinstance(skipped, tuple):
        raise TypeError(f"skipped must be a tuple of exception types, not {type(skipped).__name__}")
    if type(rows) is not list:
        return NotImplemented
    rows = as_list(rows, "rows")
    if any(type(row) is not tuple or len(row) != 1 for row in rows):
        return NotImplemented
    decoded = []
    for (text,) in rows:
        try:
            decoded.append(_decoded(text, fast, exact))
        except skipped:
            continue
    return decoded
