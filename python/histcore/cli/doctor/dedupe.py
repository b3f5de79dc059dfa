"""The first step of a repair: histcore's latest-value dedupe, restricted to tool calls
and outputs.

One row per call and per output: a call keeps its first row and an output its last,
each holding the latest stored content. Every plan is cross-checked against the
engine's dedupe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.engine import items as engine_items
from histcore.engine.pairing import pair_key, tool_role

__all__ = ["Dedupe", "dedupe"]

#: (role, call type, call_id) -> positions of that call's (or output's) items, in order
_Groups = dict[tuple[str, str, str], list[int]]


@dataclass(frozen=True)
class Dedupe:
    """The dedupe of a list of items, as positions into it."""

    #: the positions that stay, in order
    kept: tuple[int, ...]
    #: for each kept position, the position whose content it holds afterwards
    content: tuple[int, ...]
    #: the positions removed
    removed: tuple[int, ...]
    #: call_id -> rows beyond the first, of calls and of outputs
    duplicate_calls: dict[str, int]
    duplicate_outputs: dict[str, int]


class _Placeholder:
    """Stands in for an item the dedupe leaves alone (never keyed, so never moved)."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position


def dedupe(items: Sequence[Any]) -> Dedupe:
    """Which items stay, holding which content, when duplicate tool items collapse."""
    groups = _tool_groups(items)
    content_of: dict[int, int] = {}  # kept position -> position whose content it holds
    removed: list[int] = []
    duplicates: dict[str, dict[str, int]] = {"call": {}, "output": {}}
    for (role, _, call_id), positions in groups.items():
        latest = positions[-1]
        # The anchoring rules: a call stays where it first was, an output where it last was.
        anchor = positions[0] if role == "call" else latest
        content_of[anchor] = latest
        removed += [p for p in positions if p != anchor]
        if len(positions) > 1:
            found = duplicates[role]
            found[call_id] = found.get(call_id, 0) + len(positions) - 1
    gone = set(removed)
    kept = tuple(p for p in range(len(items)) if p not in gone)
    content = tuple(content_of.get(p, p) for p in kept)
    # Cross-check: what remains must read back as histcore's dedupe result.
    if list(content) != _dedupe_positions(items, groups):
        raise AssertionError("doctor repair plan disagrees with the dedupe rules")
    return Dedupe(kept, content, tuple(sorted(removed)), duplicates["call"], duplicates["output"])


def _tool_groups(items: Sequence[Any]) -> _Groups:
    groups: _Groups = {}
    for position, item in enumerate(items):
        kind = tool_role(item)
        if kind is not None:
            groups.setdefault((kind, *pair_key(item)), []).append(position)
    return groups


def _dedupe_positions(items: Sequence[Any], groups: _Groups) -> list[int]:
    # The engine's dedupe of the items, with every non-tool item hidden behind a
    # placeholder (so only tool items collapse), as positions into ``items``; a tool
    # item comes back holding its group's latest value, so it maps to that position.
    proxies = [
        item if tool_role(item) is not None else _Placeholder(position)
        for position, item in enumerate(items)
    ]
    latest_position = {id(items[positions[-1]]): positions[-1] for positions in groups.values()}
    return [
        proxy.position if isinstance(proxy, _Placeholder) else latest_position[id(proxy)]
        for proxy in engine_items.deduplicate_input_items_preferring_latest(proxies)
    ]
