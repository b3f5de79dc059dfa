"""``--fix``: the row changes that repair one session, the backup written before any,
and applying them inside the caller's transaction.

The rules are histcore's latest-value dedupe restricted to tool calls and outputs: one
row per call and per output, a call keeping its first row and an output its last, each
holding the latest stored text. Every plan is cross-checked against the engine's dedupe.
"""

from __future__ import annotations

import datetime
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histcore.cli.doctor.read import MESSAGES_TABLE, Row, row_ids_text
from histcore.engine import items as engine
from histcore.engine.pairing import outputs_before_call, pair_key, tool_role

__all__ = ["Repair", "apply_repair", "plan_repair", "write_backup"]

#: (role, call type, call_id) -> positions of that call's (or output's) rows, in order
_Groups = dict[tuple[str, str, str], list[int]]


@dataclass(frozen=True)
class Repair:
    """Row changes that repair one session: rewritten rows, then deleted rows."""

    updates: tuple[tuple[int, Any], ...]
    deletions: tuple[int, ...]


class _Placeholder:
    """Stands in for a row the repair leaves alone (never keyed, so never moved)."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position


def plan_repair(rows: Sequence[Row]) -> Repair | str:
    """The repair of one session, or why it cannot be repaired safely."""
    invalid = [row.row_id for row in rows if not row.valid]
    if invalid:
        return (
            f"{len(invalid)} row(s) are not valid JSON (ids {row_ids_text(invalid)}): their "
            "content is unknown, so no other row is moved or removed around them"
        )
    items = [row.item for row in rows]
    groups = _tool_groups(items)
    updates: list[tuple[int, Any]] = []
    deletions: list[int] = []
    content_row: dict[int, int] = {}  # kept position -> position whose stored text it holds
    for (role, _, _), positions in groups.items():
        latest = positions[-1]
        # The anchoring rules: a call stays where it first was, an output where it last was.
        anchor = positions[0] if role == "call" else latest
        content_row[anchor] = latest
        if anchor != latest:
            updates.append((rows[anchor].row_id, rows[latest].data))
        deletions += [rows[p].row_id for p in positions if p != anchor]

    removed = set(deletions)
    remaining = [p for p, row in enumerate(rows) if row.row_id not in removed]
    repaired_positions = [content_row.get(p, p) for p in remaining]
    # Cross-check: the rows that remain must read back as histcore's dedupe result.
    if repaired_positions != _dedupe_positions(items, groups):
        raise AssertionError("doctor repair plan disagrees with the dedupe rules")

    repaired = [items[p] for p in repaired_positions]
    early = [repaired[p]["call_id"] for p in outputs_before_call(repaired)]
    if early:
        return (
            f"the output of call {', '.join(sorted(set(early)))} is stored before its call "
            "with no later output: the dedupe rules cannot place it after the call, and "
            "moving it would rewrite the conversation"
        )
    return Repair(tuple(updates), tuple(deletions))


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
        for proxy in engine.deduplicate_input_items_preferring_latest(proxies)
    ]


def apply_repair(connection: sqlite3.Connection, session_id: str, repair: Repair) -> None:
    """Write ``repair`` in the caller's open transaction (committing is the caller's)."""
    connection.executemany(
        f"UPDATE {MESSAGES_TABLE} SET message_data = ? WHERE id = ? AND session_id = ?",
        [(data, row_id, session_id) for row_id, data in repair.updates],
    )
    connection.executemany(
        f"DELETE FROM {MESSAGES_TABLE} WHERE id = ? AND session_id = ?",
        [(row_id, session_id) for row_id in repair.deletions],
    )


def write_backup(path: str) -> str:
    """Copy the store to ``PATH.bak-<UTC time>`` (never overwriting one); return its path."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = f"{path}.bak-{stamp}"
    suffix = 1
    while os.path.exists(target):
        suffix += 1
        target = f"{path}.bak-{stamp}-{suffix}"
    # A second, read-only connection: it sees the last committed state, which the
    # caller's open write transaction keeps unchanged until it commits.
    source = sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro", uri=True)
    try:
        destination = sqlite3.connect(target)
        try:
            source.backup(destination)
        finally:
            destination.close()
    finally:
        source.close()
    return target
