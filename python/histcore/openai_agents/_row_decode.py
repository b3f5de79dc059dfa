"""How the drop-in's reads of the SDK's stores decode rows: what the SDK's loop over
``(message_data,)`` rows with its ``json`` returns, from the engine's batch decode
(orjson where it gives exactly what ``json.loads`` gives, ``loads`` for the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import orjson

from histcore.engine import _support as engine_support
from histcore.engine.collector import paused_for

__all__ = ["decode_rows", "decode_with"]


def _decode_each(
    rows: list[Any], loads: Callable[[Any], Any], skipped: tuple[type[BaseException], ...]
) -> list[Any]:
    """The SDK's ``_decode_rows``: each row unpacked and decoded, bad JSON skipped."""
    items: list[Any] = []
    for (message_data,) in rows:
        try:
            items.append(loads(message_data))
        except skipped:
            continue
    return items


def decode_with(
    rows: list[Any], loads: Callable[[Any], Any], skipped: tuple[type[BaseException], ...]
) -> list[Any]:
    """What a loop decoding each ``(text,)`` of ``rows`` with ``loads``, skipping the
    rows whose decoding raises one of ``skipped``, returns (orjson where it is exact)."""
    with paused_for(rows):
        decoded = engine_support.decode_rows(rows, orjson.loads, loads, skipped)
    if decoded is NotImplemented:
        return _decode_each(rows, loads, skipped)
    return cast("list[Any]", decoded)


def decode_rows(rows: list[Any], json_module: Any) -> list[Any]:
    """What the SDK's row loop returns for ``rows`` with ``json_module`` as ``json``."""
    return decode_with(rows, json_module.loads, (json_module.JSONDecodeError, TypeError))
