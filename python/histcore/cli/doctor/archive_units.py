"""Whether a session's archived rows are whole units (``archived_partial_unit``).

The archive exists so that nothing a ``replace_suffix``, ``pop_item`` or
``clear_session`` removed is lost: the transcript (live and archived rows together, in
row-id order, as ``transcript()`` reads it) must hold each archived item's whole unit.
The engine's ``input_problems`` runs once over the transcript's items; an archived row
is a problem where it reports: an output with no call of its pair before it, unless
one stands later (rule a); a call with no output of its pair after it (rule b), unless
one stands earlier, or it awaited its output when removed (among the trailing calls and
reasoning of the rows that removal took: a paused run popped or cleared) or still does;
a reasoning run not directly followed by a produced item (rule d: a turn stores the item
right after it). Repeats (rule c) and rules (e), (f), which read ids, are not checked:
a replacement re-stores items, so the transcript holds them twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from histcore.cli.doctor.read import ITEM, RowFacts
from histcore.cli.doctor.side import ARCHIVED_PARTIAL_UNIT, ArchivedItem, SideFacts
from histcore.engine.collector import paused_for
from histcore.engine.items import input_problems
from histcore.engine.pairing import outputs_before_call, pair_key
from histcore.engine.units import CALL, REASONING, ItemFacts

__all__ = ["partial_units", "transcript_units"]

# The engine's kinds that name a unit missing a member.
_MISSING = frozenset({"output_without_call", "call_without_output", "reasoning_without_item"})

#: One transcript entry: row id, item (stand-in), removing revision (None: live).
_Entry = tuple[int, dict[str, Any], int | None]


def transcript_units(side: SideFacts, live: Sequence[RowFacts]) -> SideFacts:
    """``side`` with ``archived_partial_unit`` checked against the session's ``live``
    rows (read before the archive, so a row archived meanwhile is in one of them; in
    both it is a repeat, which no rule checked here minds), its archived items let go."""
    if not side.archived_items:
        return side
    problems = dict(side.problems)
    found = partial_units(live, side.archived_items)
    if found:
        problems[ARCHIVED_PARTIAL_UNIT] = found
    return dataclasses.replace(side, problems=problems, archived_items=())


def partial_units(live: Sequence[RowFacts], archived: Sequence[ArchivedItem]) -> list[int]:
    """The ids of the ``archived`` rows whose unit is not whole in the transcript they
    make with the ``live`` rows (module docstring)."""
    # One tuple a row: collections meanwhile would traverse every row's stand-in.
    with paused_for(live):
        entries: list[_Entry] = [
            (row.row_id, row.item, None)
            for row in live
            if row.kind == ITEM and row.item is not None
        ]
        entries += archived
        # By id, live first on a tie (a table that reuses ids), as ``transcript.merge``.
        entries.sort(key=itemgetter(0))
        items = [entry[1] for entry in entries]
    flagged = [
        problem
        for problem in input_problems(items)
        if problem.kind in _MISSING and entries[problem.position][2] is not None
    ]
    if not flagged:
        return []
    early = outputs_before_call(items)
    answered = {pair_key(items[at]) for at in early}
    settled: dict[int | None, int] | None = None
    found: set[int] = set()
    for problem in flagged:
        position = problem.position
        if problem.kind == "output_without_call" and position in early:
            continue  # its call stands later: the unit is whole, stored out of order
        if problem.kind == "call_without_output":
            if pair_key(items[position]) in answered:
                continue  # its output stands earlier: whole, stored out of order
            settled = _settled(entries) if settled is None else settled
            if position > settled.get(entries[position][2], -1):
                continue  # it awaited its output when removed
        found.add(entries[position][0])
    return sorted(found)


def _settled(entries: Sequence[_Entry]) -> dict[int | None, int]:
    """Per removing revision, the last transcript position it removed that holds
    neither a call nor reasoning: the calls it removed after that one awaited their
    outputs (a removal takes a suffix of the history, so these were its last items)."""
    archived = [at for at, entry in enumerate(entries) if entry[2] is not None]
    kinds = ItemFacts([entries[at][1] for at in archived]).kinds
    last: dict[int | None, int] = {}
    for at, kind in zip(archived, kinds, strict=True):
        if kind not in (CALL, REASONING):
            last[entries[at][2]] = at
    return last
