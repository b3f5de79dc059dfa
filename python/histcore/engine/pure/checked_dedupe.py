"""``screened_deduplicate_checked`` (the Rust engine's ``rust/py/checked_dedupe.rs``): the
screened dedupe and the model-input problems of what it keeps. The engine reads what
both need in one pass over the items; the twin is their composition, which is what the
engine's answer must equal."""

from __future__ import annotations

from typing import Any

from histcore.engine.pure.input_rules import StoredHistory, input_problems
from histcore.engine.pure.screened_key import screened_deduplicate
from histcore.engine.pure.watch import NameWatch

__all__ = ["screened_deduplicate_checked"]


def screened_deduplicate_checked(
    items: Any,
    preferring_latest: bool = False,
    watch: NameWatch | None = None,
    *,
    history: StoredHistory | None = None,
) -> Any:
    """``(kept, problems)`` of ``kept = screened_deduplicate(items, preferring_latest,
    watch)`` and ``problems = input_problems(kept, history=history)`` (``history``: a
    ``StoredHistory`` or None), or NotImplemented where the dedupe is."""
    if history is not None and type(history) is not StoredHistory:
        raise TypeError(f"history must be a StoredHistory or None, not {type(history).__name__}")
    kept = screened_deduplicate(items, preferring_latest, watch)
    if kept is NotImplemented:
        return NotImplemented
    return kept, input_problems(kept, history=history)
