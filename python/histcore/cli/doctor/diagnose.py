"""What is wrong with one session's rows: the findings reported and repaired.

Rows the rules cannot place are set aside first: not valid JSON (not UTF-8, not JSON,
nested too deeply, NULL), JSON that is not an object, and items whose ``call_id`` is
not a string. On the other rows, the session's *items* (as ``facts.py`` stand-ins):
tool outputs stored before their call, and duplicate tool calls and outputs (what the
dedupe step of a repair collapses, ``dedupe.py``); then the engine's
``input_problems`` over the items as that dedupe leaves them, with the stored items as
``history``. A call at the end that awaits its output (a run paused for approval) is
information, not a problem. Each kind of finding: docs/doctor.md, "What it reports".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from histcore.cli.doctor.dedupe import Dedupe, dedupe
from histcore.cli.doctor.read import BAD_CALL_ID, INVALID, NOT_ITEM, RowFacts
from histcore.engine.items import InputProblem, input_problems
from histcore.engine.pairing import outputs_before_call

__all__ = ["AWAITING", "UNIT_KINDS", "Analysis", "Findings", "Spot", "analyse", "diagnose"]

#: The engine's problem kinds the doctor reports, each with its count's key.
UNIT_KINDS = {
    "output_without_call": "output_without_call",
    "call_without_output": "calls_without_output",
    "duplicate_id": "duplicate_id",
    "reasoning_without_item": "reasoning_without_item",
    "item_without_reasoning": "item_without_reasoning",
    "reasoning_without_successor": "reasoning_without_successor",
}
#: The one kind that is information: a call paused for approval, awaiting its output.
AWAITING = "call_awaiting_output"


@dataclass(frozen=True)
class Spot:
    """Where a model-input rule breaks: the row, and its call_id or item id ("" if none)."""

    row_id: int
    detail: str


@dataclass
class Findings:
    """What is wrong with one session. Counts are of items (rows) involved."""

    invalid_rows: list[int] = field(default_factory=list)
    #: row id -> why it is not valid JSON
    invalid_reasons: dict[int, str] = field(default_factory=dict)
    not_items: list[int] = field(default_factory=list)
    bad_call_ids: list[int] = field(default_factory=list)
    outputs_before_call: list[str] = field(default_factory=list)
    duplicate_calls: dict[str, int] = field(default_factory=dict)
    duplicate_outputs: dict[str, int] = field(default_factory=dict)
    #: engine kind (a key of UNIT_KINDS) -> where it breaks
    unit: dict[str, list[Spot]] = field(default_factory=dict)
    #: calls at the end awaiting their output (information)
    awaiting: list[Spot] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        spots = {key: len(self.unit.get(kind, ())) for kind, key in UNIT_KINDS.items()}
        return {
            "invalid_json": len(self.invalid_rows),
            "not_item": len(self.not_items),
            "non_string_call_id": len(self.bad_call_ids),
            "output_before_call": len(self.outputs_before_call),
            "output_without_call": spots["output_without_call"],
            "duplicate_calls": sum(self.duplicate_calls.values()),
            "duplicate_outputs": sum(self.duplicate_outputs.values()),
            "calls_without_output": spots["calls_without_output"],
            "duplicate_id": spots["duplicate_id"],
            "reasoning_without_item": spots["reasoning_without_item"],
            "item_without_reasoning": spots["item_without_reasoning"],
            "reasoning_without_successor": spots["reasoning_without_successor"],
        }

    def info(self) -> dict[str, int]:
        return {AWAITING: len(self.awaiting)}

    @property
    def clean(self) -> bool:
        return not any(self.counts().values())

    @property
    def set_aside(self) -> list[int]:
        """Row ids of the rows the rules cannot place (not JSON, not items, bad call_id)."""
        return sorted(self.invalid_rows + self.not_items + self.bad_call_ids)


@dataclass
class Analysis:
    """One session read through the rules: what ``diagnose`` reports and ``--fix`` uses."""

    rows: list[RowFacts]
    #: positions (into ``rows``) of the session's items, and the items (their stand-ins)
    item_rows: list[int]
    items: list[Any]
    dedupe: Dedupe
    #: the items as the dedupe leaves them (objects of ``items``)
    deduped: list[Any]
    #: the engine's problems of ``deduped``, by position into it
    problems: list[InputProblem]
    findings: Findings

    def row_of(self, deduped_position: int) -> RowFacts:
        """The row that holds the item at ``deduped_position`` after the dedupe."""
        return self.rows[self.item_rows[self.dedupe.kept[deduped_position]]]


def diagnose(rows: Sequence[RowFacts]) -> Findings:
    """The problems of one session's rows (in id order)."""
    return analyse(rows).findings


def analyse(rows: Sequence[RowFacts]) -> Analysis:
    """One session's rows (in id order) through every rule."""
    findings = Findings()
    item_rows = _set_aside(rows, findings)
    items: list[Any] = [rows[position].item for position in item_rows]  # their stand-ins
    early = outputs_before_call(items)
    findings.outputs_before_call = [items[position]["call_id"] for position in early]
    plan = dedupe(items)
    findings.duplicate_calls, findings.duplicate_outputs = (
        plan.duplicate_calls,
        plan.duplicate_outputs,
    )
    deduped = [items[position] for position in plan.content]
    problems = input_problems(deduped, history=items)
    analysis = Analysis(list(rows), item_rows, items, plan, deduped, problems, findings)
    for problem in problems:
        spot = Spot(analysis.row_of(problem.position).row_id, problem.detail or "")
        if problem.kind == AWAITING:
            findings.awaiting.append(spot)
        elif problem.kind == "output_without_call" and plan.kept[problem.position] in early:
            continue  # reported as stored before its call
        elif problem.kind in UNIT_KINDS:
            findings.unit.setdefault(problem.kind, []).append(spot)
    return analysis


def _set_aside(rows: Sequence[RowFacts], findings: Findings) -> list[int]:
    """Record the rows the rules cannot place; the positions of the others."""
    kept = []
    for position, row in enumerate(rows):
        if row.kind == INVALID:
            findings.invalid_rows.append(row.row_id)
            findings.invalid_reasons[row.row_id] = row.reason or "not JSON"
        elif row.kind == NOT_ITEM:
            findings.not_items.append(row.row_id)
        elif row.kind == BAD_CALL_ID:
            findings.bad_call_ids.append(row.row_id)
        else:
            kept.append(position)
    return kept
