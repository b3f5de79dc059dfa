"""What is wrong with one session's rows: the findings reported and repaired."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from histcore.cli.doctor.read import Row
from histcore.engine import items as engine
from histcore.engine.pairing import outputs_before_call, pair_key, tool_role
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE

__all__ = ["Findings", "diagnose"]


@dataclass
class Findings:
    """What is wrong with one session. Counts are of items (rows) involved."""

    invalid_rows: list[int] = field(default_factory=list)
    outputs_before_call: list[str] = field(default_factory=list)
    duplicate_calls: dict[str, int] = field(default_factory=dict)
    duplicate_outputs: dict[str, int] = field(default_factory=dict)
    calls_without_output: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "invalid_json": len(self.invalid_rows),
            "output_before_call": len(self.outputs_before_call),
            "duplicate_calls": sum(self.duplicate_calls.values()),
            "duplicate_outputs": sum(self.duplicate_outputs.values()),
            "calls_without_output": len(self.calls_without_output),
        }

    @property
    def clean(self) -> bool:
        return not any(self.counts().values())

    def repairable_counts(self) -> dict[str, int]:
        """The problems ``--fix`` removes (all but calls without an output)."""
        counts = self.counts()
        counts.pop("calls_without_output")
        return counts


def diagnose(rows: Sequence[Row]) -> Findings:
    """The problems of one session's rows (in id order)."""
    findings = Findings(invalid_rows=[row.row_id for row in rows if not row.valid])
    items = [row.item for row in rows if row.valid]
    early = outputs_before_call(items)
    findings.outputs_before_call = [items[position]["call_id"] for position in early]
    findings.duplicate_calls, findings.duplicate_outputs = _duplicates(items)
    findings.calls_without_output = _calls_without_output(items)
    return findings


def _duplicates(items: Sequence[Any]) -> tuple[dict[str, int], dict[str, int]]:
    # Rows beyond the first of one (role, pair key), per call_id: of calls, of outputs.
    seen: dict[tuple[str, str, str], int] = {}
    for item in items:
        kind = tool_role(item)
        if kind is not None:
            key = (kind, *pair_key(item))
            seen[key] = seen.get(key, 0) + 1
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    for (role, _, call_id), count in seen.items():
        if count > 1:
            duplicates = calls if role == "call" else outputs
            duplicates[call_id] = duplicates.get(call_id, 0) + count - 1
    return calls, outputs


def _calls_without_output(items: Sequence[Any]) -> list[str]:
    # The calls the engine's orphan pruning drops (with their reasoning: hence the type
    # test). A call_id that is not a string is listed as "".
    kept = {id(item) for item in engine.drop_orphan_function_calls(items)}
    dangling = [
        item
        for item in items
        if id(item) not in kept
        and isinstance(item, dict)
        and item.get("type") in CALL_TO_OUTPUT_TYPE
    ]
    return [item["call_id"] if isinstance(item.get("call_id"), str) else "" for item in dangling]
