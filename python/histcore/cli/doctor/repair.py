"""``--fix``: the row changes that repair one session, and the rows it leaves.

Two steps, both on the session's items (rows the rules cannot place are left where they
are, or with ``--drop-invalid-rows`` deleted):

1. the dedupe of tool calls and outputs (``dedupe.py``): a call keeps its first row and
   an output its last, each holding the latest stored text;
2. the model-input units (``histcore.items.repair_input``, the stored items as
   ``history``): units that break a rule are dropped whole, user messages never, and a
   call at the end awaiting its output is kept so the run can resume; with
   ``dangling="synthesize"`` a call missing its output gets ``LOST_OUTPUT_TEXT`` instead.

Rows keep their ids and exact stored text; from the first synthesized output on, each
row takes the data of the row before it, and the last rows are appended with new ids.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.cli.doctor.diagnose import AWAITING, Analysis
from histcore.cli.doctor.read import RowFacts, Source, Synthesized, text_facts
from histcore.engine.items import repair_input
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE

__all__ = ["DANGLING", "Repair", "Source", "Synthesized", "plan_repair", "repaired_rows"]

#: ``--dangling``: what becomes of a call whose output is missing (``repair_input``).
DANGLING = ("drop", "synthesize")


@dataclass(frozen=True)
class Repair:
    """Row changes that repair one session: rewritten rows, deleted rows, and rows
    appended (new ids, in this order) after every row the session keeps."""

    #: (row id, where its data comes from)
    updates: tuple[tuple[int, Source], ...]
    deletions: tuple[int, ...]
    #: how many of the deletions each step made
    deduped: int = 0
    dropped_units: int = 0
    dropped_invalid: int = 0
    appended: tuple[Source, ...] = ()
    #: the outputs synthesized, in order
    synthesized: tuple[Synthesized, ...] = ()

    @property
    def changes(self) -> bool:
        return bool(self.updates or self.deletions or self.appended)

    @property
    def row_sources(self) -> list[int]:
        """The rows whose stored data the repair copies (read before anything changes)."""
        found = [source for _, source in self.updates if isinstance(source, int)]
        return found + [source for source in self.appended if isinstance(source, int)]


def plan_repair(analysis: Analysis, drop_invalid: bool = False, dangling: str = "drop") -> Repair:
    """The repair of one analysed session (no changes when there is nothing to do)."""
    rows, plan = analysis.rows, analysis.dedupe
    item_row = [rows[position] for position in analysis.item_rows]
    deduped = [item_row[position].row_id for position in plan.removed]
    drops, lost = _unit_plan(analysis, dangling)
    dropped = {analysis.row_of(position).row_id for position in drops}
    invalid = analysis.findings.set_aside if drop_invalid else []
    deletions = tuple(sorted([*deduped, *dropped, *invalid]))
    gone = set(deletions)
    content = {
        item_row[anchor].row_id: item_row[source].row_id
        for anchor, source in zip(plan.kept, plan.content, strict=True)
    }
    after = {analysis.row_of(position).row_id: output for position, output in lost.items()}
    # The repaired order, laid over the rows that stay; what does not fit is appended.
    slots = [row.row_id for row in rows if row.row_id not in gone]
    order: list[Source] = []
    for row_id in slots:
        order.append(content.get(row_id, row_id))
        if row_id in after:
            order.append(after[row_id])
    updates = tuple(
        (slot, source) for slot, source in zip(slots, order, strict=False) if source != slot
    )
    return Repair(
        updates,
        deletions,
        len(deduped),
        len(dropped),
        len(invalid),
        tuple(order[len(slots) :]),
        tuple(output for output in order if isinstance(output, Synthesized)),
    )


def _unit_plan(analysis: Analysis, dangling: str) -> tuple[list[int], dict[int, Synthesized]]:
    """Positions (into ``analysis.deduped``) of the items in units to drop, and the
    outputs to synthesize, by the position of their call."""
    awaiting = [problem.position for problem in analysis.problems if problem.kind == AWAITING]
    if len(awaiting) == len(analysis.problems):
        return [], {}
    # A call awaiting approval is no problem here: an output standing in for the one
    # the resumed run will store makes the engine keep its unit like any other.
    deduped = analysis.deduped
    probe = deduped + [_stand_in_output(deduped[position]) for position in awaiting]
    stand_ins = {id(item) for item in probe[len(deduped) :]}
    position_of = {id(item): position for position, item in enumerate(deduped)}
    kept: set[int] = set()
    lost: dict[int, Synthesized] = {}
    previous: int | None = None
    for item in repair_input(probe, history=analysis.items, dangling=dangling):
        position = position_of.get(id(item))
        if position is not None:
            kept.add(position)
            previous = position
        elif id(item) not in stand_ins:
            # The engine puts a synthesized output right after its call.
            call_id = item.get("call_id")
            if previous is None or deduped[previous].get("call_id") != call_id:
                raise AssertionError("a synthesized output does not follow its call")
            lost[previous] = Synthesized(str(call_id), json.dumps(item))
    return [position for position in range(len(deduped)) if position not in kept], lost


def _stand_in_output(call: dict[str, Any]) -> dict[str, Any]:
    return {"type": CALL_TO_OUTPUT_TYPE[call["type"]], "call_id": call["call_id"], "output": ""}


def repaired_rows(rows: Sequence[RowFacts], repair: Repair) -> list[RowFacts]:
    """The session's rows as they read after ``repair`` (appended rows numbered on from
    the session's newest id; the store gives them their ids)."""
    deleted = set(repair.deletions)
    source = dict(repair.updates)
    wanted = set(repair.row_sources)
    by_id = {row.row_id: row for row in rows if row.row_id in wanted}

    def facts(row_id: int, origin: Source) -> RowFacts:
        if isinstance(origin, Synthesized):
            return text_facts(row_id, origin.text)
        return dataclasses.replace(by_id[origin], row_id=row_id)

    kept = [
        row if row.row_id not in source else facts(row.row_id, source[row.row_id])
        for row in rows
        if row.row_id not in deleted
    ]
    newest = max((row.row_id for row in rows), default=0)
    return kept + [
        facts(newest + number, origin) for number, origin in enumerate(repair.appended, 1)
    ]
