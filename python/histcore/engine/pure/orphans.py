"""Orphan-call pruning (``drop_orphan_function_calls``; the Rust engine's
``rust/core/orphans.rs`` holds the rules, ``rust/py/orphans.rs`` reads the items), and its
screened form for a drop-in replacement (``screened_drop_orphan_function_calls``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from histcore.engine.pure.args import as_list, each, index_mask, pick
from histcore.engine.pure.extract import dumped, plain_str, str_field
from histcore.engine.pure.watch import NameWatch
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE, OUTPUT_TYPES, PROGRAM_OWNED_HOSTED_TYPES

# The item passes here are public at histcore.items alone.
__all__ = ["screened_drop_orphan_function_calls"]


class _Facts(NamedTuple):
    """What orphan pruning reads of one dict item, read once (the Rust engine's
    ``ItemFacts``). Texts are exact str; a value that is not a str is None."""

    kind: str | None
    call_id: str | None
    #: ``caller["caller_id"]`` when ``caller`` is a dict whose ``type`` is "program"
    program_owner: str | None
    #: ``status`` is missing, None or "in_progress" (read for shell calls only)
    pending: bool


def _orphan_facts(payload: Any) -> _Facts | None:
    """The facts of a payload (None when it is not a dict), its fields read in this
    order: type, call_id, caller (its type, then its caller_id), status."""
    if not isinstance(payload, dict):
        return None
    kind = str_field(payload, "type")
    call_id = str_field(payload, "call_id")
    program_owner = None
    caller = dict.get(payload, "caller")
    if isinstance(caller, dict) and str_field(caller, "type") == "program":
        program_owner = str_field(caller, "caller_id")
    pending = False
    if kind == "shell_call":
        status = dict.get(payload, "status")
        pending = status is None or (isinstance(status, str) and plain_str(status) == "in_progress")
    return _Facts(kind, call_id, program_owner, pending)


def _is_pending_hosted_shell_call(facts: _Facts) -> bool:
    return facts.kind == "shell_call" and facts.pending


def drop_orphan_function_calls(
    items: Iterable[Any],
    pruning_indexes: Iterable[int] | None = None,
    *,
    output_pruning_indexes: Iterable[int] | None = None,
) -> list[Any]:
    """Drop tool calls that have no output, with the reasoning run directly before them.

    A call (one of the eight call types) is kept when an output of its output type
    with the same ``call_id`` is anywhere in the list. Also kept: an anonymous
    ``tool_search_call`` answered by a later anonymous output, a ``program`` that still
    owns retained items, a pending hosted ``shell_call`` issued by a program. Items
    issued by an orphan program are dropped with it. With ``pruning_indexes`` only
    those positions may be dropped (reasoning included). With
    ``output_pruning_indexes``, outputs at those positions whose call is gone are
    dropped too. Linear in the number of items.
    """
    items = as_list(items, "items")
    length = len(items)
    prunable = index_mask(pruning_indexes, "pruning_indexes", length)
    output_prunable = index_mask(output_pruning_indexes, "output_pruning_indexes", length)
    # Each item is read once, dump and fields, before the next (as the Rust engine does).
    facts = [_orphan_facts(dumped(item)) for item in each(items, length)]

    # The six passes of the Rust engine's orphans::kept, with the same names and order.
    completed, retained_owner_ids = _completed_and_retained_owners(facts, prunable)
    matched_anonymous = _matched_anonymous_searches(facts)
    programs = _active_and_orphan_programs(facts, prunable, completed, retained_owner_ids)
    dropped, orphaned = _drop_orphans(facts, prunable, completed, matched_anonymous, programs)
    if output_prunable is not None:
        _drop_outputs_without_calls(facts, output_prunable, dropped)
    if any(dropped):
        _drop_reasoning_before_orphans(facts, prunable, dropped, orphaned)
    return pick(items, length, [index for index in range(length) if not dropped[index]])


def _completed_and_retained_owners(
    items: list[_Facts | None], prunable: list[bool] | None
) -> tuple[dict[str, set[str]], set[str]]:
    """Pass 1: the call ids of the outputs present (per output type), and the program
    ids that still own a retained item."""
    completed: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
    retained_owner_ids: set[str] = set()
    for index, facts in enumerate(items):
        if facts is None:
            continue
        kind = facts.kind
        if kind in OUTPUT_TYPES and facts.call_id is not None:
            completed[kind].add(facts.call_id)
        owner = facts.program_owner
        if owner is None:
            continue
        if prunable is not None:
            retained = not prunable[index]
        else:
            retained = _is_pending_hosted_shell_call(facts) or (
                kind in PROGRAM_OWNED_HOSTED_TYPES or kind in OUTPUT_TYPES
            )
        if retained:
            retained_owner_ids.add(owner)
    return completed, retained_owner_ids


def _matched_anonymous_searches(items: list[_Facts | None]) -> set[int]:
    """Pass 2: anonymous tool searches pair with later anonymous outputs, innermost
    first. The positions of the searches that found their output."""
    matched_anonymous: set[int] = set()
    pending_outputs = 0
    for index in range(len(items) - 1, -1, -1):
        facts = items[index]
        if facts is None or facts.call_id is not None:
            continue
        if facts.kind == "tool_search_output":
            pending_outputs += 1
        elif facts.kind == "tool_search_call" and pending_outputs > 0:
            matched_anonymous.add(index)
            pending_outputs -= 1
    return matched_anonymous


def _active_and_orphan_programs(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    completed: dict[str, set[str]],
    retained_owner_ids: set[str],
) -> tuple[set[str], set[str]]:
    """Pass 3: the prunable programs without an output, active while they own a
    retained item, orphan otherwise."""
    active_programs: set[str] = set()
    orphan_programs: set[str] = set()
    for index, facts in enumerate(items):
        if facts is None or facts.kind != "program":
            continue
        if prunable is not None and not prunable[index]:
            continue
        call_id = facts.call_id
        if call_id is None or call_id in completed["program_output"]:
            continue
        (active_programs if call_id in retained_owner_ids else orphan_programs).add(call_id)
    return active_programs, orphan_programs


def _drop_orphans(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    completed: dict[str, set[str]],
    matched_anonymous: set[int],
    programs: tuple[set[str], set[str]],
) -> tuple[list[bool], list[bool]]:
    """Pass 4: drop the prunable calls without an output (unless still answered in some
    other way) and the items that orphan programs issued. Returns ``(dropped,
    orphaned)``: orphaned marks a drop as an orphan (not merely as an output whose call
    is gone), which also takes the reasoning run directly before it."""
    active_programs, orphan_programs = programs
    dropped = [False] * len(items)
    orphaned = [False] * len(items)
    for index, facts in enumerate(items):
        if facts is None or (prunable is not None and not prunable[index]):
            continue
        kind = facts.kind
        if kind is None:
            continue
        owner = facts.program_owner
        if owner is not None and owner in orphan_programs:
            dropped[index] = orphaned[index] = True
            continue
        output_type = CALL_TO_OUTPUT_TYPE.get(kind)
        if output_type is None:
            continue
        if owner is not None and _is_pending_hosted_shell_call(facts):
            continue
        call_id = facts.call_id
        if call_id is not None:
            if kind == "program" and call_id in active_programs:
                continue
            if call_id in completed[output_type]:
                continue
        elif kind == "tool_search_call" and index in matched_anonymous:
            continue
        dropped[index] = orphaned[index] = True
    return dropped, orphaned


def _drop_outputs_without_calls(
    items: list[_Facts | None], output_prunable: list[bool], dropped: list[bool]
) -> None:
    """Pass 5 (with ``output_pruning_indexes``): drop the outputs at ``output_prunable``
    positions whose call did not stay."""
    available: dict[str, set[str]] = {output: set() for output in OUTPUT_TYPES}
    for index, facts in enumerate(items):
        if facts is None or dropped[index] or facts.kind is None:
            continue
        output_type = CALL_TO_OUTPUT_TYPE.get(facts.kind)
        if output_type is not None and facts.call_id is not None:
            available[output_type].add(facts.call_id)
    for index, facts in enumerate(items):
        if facts is None or dropped[index] or not output_prunable[index]:
            continue
        kind = facts.kind
        if (
            kind in OUTPUT_TYPES
            and facts.call_id is not None
            and facts.call_id not in available[kind]
        ):
            dropped[index] = True


def _drop_reasoning_before_orphans(
    items: list[_Facts | None],
    prunable: list[bool] | None,
    dropped: list[bool],
    orphaned: list[bool],
) -> None:
    """Pass 6: a reasoning item belongs to the next non-reasoning item; it goes when
    that item was dropped as an orphan (one backward sweep, so long reasoning runs stay
    linear)."""
    follower_dropped = False
    for index in range(len(items) - 1, -1, -1):
        facts = items[index]
        if facts is not None and facts.kind == "reasoning":
            if follower_dropped and not dropped[index]:
                if prunable is None or prunable[index]:
                    dropped[index] = True
        else:
            follower_dropped = orphaned[index]


def _plain_text(value: Any) -> bool:
    return value is None or type(value) is str


def _orphan_screened(items: list[Any], prunable: list[bool] | None) -> bool:
    """The screen of ``screened_drop_orphan_function_calls`` (its docstring)."""
    for position, item in enumerate(items):
        if type(item) is not dict:
            return False
        kind = item.get("type")
        if not _plain_text(kind) or not _plain_text(item.get("call_id")):
            return False
        if kind == "shell_call" and not _plain_text(item.get("status")):
            return False
        if kind == "reasoning" and prunable is not None and not prunable[position]:
            return False
        caller = item.get("caller")
        if isinstance(caller, dict) and (
            type(caller) is not dict
            or not _plain_text(caller.get("type"))
            or not _plain_text(caller.get("caller_id"))
        ):
            return False
    return True


def screened_drop_orphan_function_calls(
    items: Any,
    pruning_indexes: Any = None,
    *,
    output_pruning_indexes: Any = None,
    watch: NameWatch | None = None,
) -> Any:
    """``drop_orphan_function_calls(items, pruning_indexes, output_pruning_indexes=...)``
    when that is the OpenAI Agents SDK's result by construction (docs/design.md, "Screening
    in the engine"), else NotImplemented, as whenever ``watch`` is given and not intact."""
    if watch is not None and not watch.intact():
        return NotImplemented
    if type(items) is not list or not all(
        indexes is None or type(indexes) is set
        for indexes in (pruning_indexes, output_pruning_indexes)
    ):
        return NotImplemented
    try:
        prunable = index_mask(pruning_indexes, "pruning_indexes", len(items))
        index_mask(output_pruning_indexes, "output_pruning_indexes", len(items))
    except TypeError:
        return NotImplemented  # positions that are not ints: the SDK's membership tests decide
    if not _orphan_screened(items, prunable):
        return NotImplemented
    return drop_orphan_function_calls(
        items, pruning_indexes, output_pruning_indexes=output_pruning_indexes
    )
