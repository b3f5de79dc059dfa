"""``--fix``: the row changes that repair one session, and the rows it leaves.

Two steps, both on the session's items (rows the rules cannot place are left where they
are, or with ``--drop-invalid-rows`` deleted):

1. the dedupe of tool calls and outputs (``dedupe.py``): a call keeps its first row and
   an output its last, each holding the latest stored text;
2. the model-input units (``histcore.items.repair_input``, with the stored items as
   ``history``): a reasoning run with the item it produced, and a tool call with its
   outputs, are kept or dropped whole; every unit that breaks a rule is dropped. User
   messages are never dropped, and a call at the end awaiting its output (a run paused
   for approval) is kept with its unit, so the run can resume.

Rows keep their ids (the order) and their exact stored text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.cli.doctor.diagnose import AWAITING, Analysis
from histcore.cli.doctor.read import RowFacts
from histcore.engine.items import repair_input
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE

__all__ = ["Repair", "plan_repair", "repaired_rows"]


@dataclass(frozen=True)
class Repair:
    """Row changes that repair one session: rewritten rows, then deleted rows."""

    #: (row id, id of the row whose stored data it takes)
    updates: tuple[tuple[int, int], ...]
    deletions: tuple[int, ...]
    #: how many of the deletions each step made
    deduped: int = 0
    dropped_units: int = 0
    dropped_invalid: int = 0

    @property
    def changes(self) -> bool:
        return bool(self.updates or self.deletions)


def plan_repair(analysis: Analysis, drop_invalid: bool = False) -> Repair:
    """The repair of one analysed session (no changes when there is nothing to do)."""
    rows, plan = analysis.rows, analysis.dedupe
    item_row = [rows[position] for position in analysis.item_rows]
    deduped = [item_row[position].row_id for position in plan.removed]
    dropped = {analysis.row_of(position).row_id for position in _unit_drops(analysis)}
    updates = tuple(
        (item_row[anchor].row_id, item_row[source].row_id)
        for anchor, source in zip(plan.kept, plan.content, strict=True)
        if anchor != source and item_row[anchor].row_id not in dropped
    )
    invalid = analysis.findings.set_aside if drop_invalid else []
    deletions = tuple(sorted([*deduped, *dropped, *invalid]))
    return Repair(updates, deletions, len(deduped), len(dropped), len(invalid))


def _unit_drops(analysis: Analysis) -> list[int]:
    """Positions (into ``analysis.deduped``) of the items in units to drop."""
    awaiting = [problem.position for problem in analysis.problems if problem.kind == AWAITING]
    if len(awaiting) == len(analysis.problems):
        return []
    # A call awaiting approval is no problem here: an output standing in for the one
    # the resumed run will store makes the engine keep its unit like any other.
    deduped = analysis.deduped
    probe = deduped + [_stand_in_output(deduped[position]) for position in awaiting]
    kept = {id(item) for item in repair_input(probe, history=analysis.items)}
    return [position for position, item in enumerate(deduped) if id(item) not in kept]


def _stand_in_output(call: dict[str, Any]) -> dict[str, Any]:
    return {"type": CALL_TO_OUTPUT_TYPE[call["type"]], "call_id": call["call_id"], "output": ""}


def repaired_rows(rows: Sequence[RowFacts], repair: Repair) -> list[RowFacts]:
    """The session's rows as they read after ``repair``."""
    deleted = set(repair.deletions)
    source = dict(repair.updates)
    sources = set(source.values())
    by_id = {row.row_id: row for row in rows if row.row_id in sources}
    return [
        row
        if row.row_id not in source
        else dataclasses.replace(by_id[source[row.row_id]], row_id=row.row_id)
        for row in rows
        if row.row_id not in deleted
    ]
