"""Tool calls and their outputs: which items pair up, and in which order they stand.

One source for the pairing rule that the prepare path, the runner and the doctor share.
A *call* is an item whose ``type`` is a key of ``CALL_TO_OUTPUT_TYPE`` and whose
``call_id`` is a string; its *output* is the item of the matching output type with the
same ``call_id``. Both share one *pair key*: ``(call type, call_id)``. Message-shaped
items (with a ``role``) never pair, which is also the dedupe rule (docs/design.md,
rule 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE, OUTPUT_TO_CALL_TYPE

__all__ = [
    "outputs_after_calls",
    "outputs_before_call",
    "pair_key",
    "tool_role",
]


def tool_role(item: Any) -> Literal["call", "output"] | None:
    """``"call"`` or ``"output"`` for a tool call or output with a string call_id."""
    if not isinstance(item, dict) or item.get("role") is not None:
        return None
    kind = item.get("type")
    if not isinstance(kind, str) or not isinstance(item.get("call_id"), str):
        return None
    if kind in CALL_TO_OUTPUT_TYPE:
        return "call"
    if kind in OUTPUT_TO_CALL_TYPE:
        return "output"
    return None


def pair_key(item: dict[str, Any]) -> tuple[str, str]:
    """``(call type, call_id)`` of an item ``tool_role`` names: what pairs an output with
    its call."""
    kind = item["type"]
    return OUTPUT_TO_CALL_TYPE.get(kind, kind), item["call_id"]


def _first_calls(items: Sequence[Any]) -> dict[tuple[str, str], int]:
    first: dict[tuple[str, str], int] = {}
    for position, item in enumerate(items):
        if tool_role(item) == "call":
            first.setdefault(pair_key(item), position)
    return first


def outputs_before_call(items: Sequence[Any]) -> dict[int, int]:
    """``{output position: position of its first call}`` for every output that stands
    before its call."""
    first_call = _first_calls(items)
    if not first_call:
        return {}
    early: dict[int, int] = {}
    for position, item in enumerate(items):
        if tool_role(item) == "output":
            call_position = first_call.get(pair_key(item))
            if call_position is not None and call_position > position:
                early[position] = call_position
    return early


def outputs_after_calls(items: list[Any]) -> list[Any]:
    """``items`` with every tool output that came before its call moved just after it
    (several such outputs keep their order). Without any, ``items`` itself."""
    early = outputs_before_call(items)
    if not early:
        return items
    after: dict[int, list[int]] = {}
    for output_position, call_position in early.items():
        after.setdefault(call_position, []).append(output_position)
    ordered: list[Any] = []
    for position, item in enumerate(items):
        if position in early:
            continue
        ordered.append(item)
        for output_position in after.get(position, ()):
            ordered.append(items[output_position])
    return ordered
