"""Units of a model input, read the same way by the pure twin's rules and by the window
rule (``histcore.engine.input_rules``): each item's facts (``ItemFacts``) and the
union-find forest of units, a reasoning run with the item it produced and a tool call
with its outputs (``unit_forest``, ``unit_roots``). The twin's checker and repair
(``histcore.engine.pure.input_rules``) read items through these; the Rust engine's
counterpart is ``rust/core/input_rules/facts.rs``.
"""

from __future__ import annotations

from typing import Any

from histcore.engine.vocabulary import (
    CALL_TO_OUTPUT_TYPE,
    FAKE_ID,
    OUTPUT_TO_CALL_TYPE,
    OUTPUT_TYPES,
    USER_SIDE_ROLES,
    exact_text,
)

__all__ = [
    "CALL",
    "DANGLING_MODES",
    "OTHER",
    "OUTPUT",
    "PRODUCED",
    "REASONING",
    "USER",
    "ItemFacts",
    "find_root",
    "item_payload",
    "lost_output",
    "pair_bounds",
    "unit_forest",
    "unit_roots",
]

# Items the user side supplies: a reasoning item never produced one of these.
_NOT_PRODUCED_TYPES = OUTPUT_TYPES | {"mcp_approval_response", "item_reference"}

# Per-item facts, one small int each, so the passes compare ints instead of strings.
OTHER, REASONING, CALL, OUTPUT, USER, PRODUCED = range(6)


def item_payload(item: Any) -> dict[str, Any] | None:
    """The item as the engine sees it: a model is read as its dump. Dicts, subclasses
    too, are read by what they hold (``dict.get``), never through overridden methods."""
    if isinstance(item, dict):
        return item
    if hasattr(item, "model_dump"):
        dumped = item.model_dump(exclude_unset=True)
        return dumped if isinstance(dumped, dict) else None
    return None


class ItemFacts:
    """What the rules need of each item: its class, pair key and id."""

    __slots__ = ("caller", "ids", "kinds", "pairs", "pending_hosted")

    def __init__(self, items: list[Any]) -> None:
        length = len(items)
        self.kinds = [OTHER] * length
        self.pairs: list[tuple[str, str] | None] = [None] * length
        self.ids: list[str | None] = [None] * length
        self.caller: list[str | None] = [None] * length
        self.pending_hosted = [False] * length
        for position, item in enumerate(items):
            payload = item_payload(item)
            if payload is not None:
                self._read(position, payload)

    def _read(self, position: int, payload: dict[str, Any]) -> None:
        kind = exact_text(dict.get(payload, "type"))
        role = dict.get(payload, "role")
        item_id = exact_text(dict.get(payload, "id"))
        if item_id is not None and item_id != FAKE_ID:
            self.ids[position] = item_id
        caller = dict.get(payload, "caller")
        if isinstance(caller, dict) and dict.get(caller, "type") == "program":
            self.caller[position] = exact_text(dict.get(caller, "caller_id"))
        if role is not None:
            user_side = exact_text(role) in USER_SIDE_ROLES
            self.kinds[position] = USER if user_side else PRODUCED
            return
        call_id = exact_text(dict.get(payload, "call_id"))
        if kind == "reasoning":
            self.kinds[position] = REASONING
        elif kind in CALL_TO_OUTPUT_TYPE and call_id is not None:
            self.kinds[position] = CALL
            self.pairs[position] = (kind, call_id)
            status = dict.get(payload, "status")
            self.pending_hosted[position] = kind == "shell_call" and (
                status is None or status == "in_progress"
            )
        elif kind in OUTPUT_TYPES and call_id is not None:
            self.kinds[position] = OUTPUT
            self.pairs[position] = (OUTPUT_TO_CALL_TYPE[kind], call_id)
        elif kind is not None and kind not in _NOT_PRODUCED_TYPES:
            self.kinds[position] = PRODUCED


#: ``repair_input``'s ``dangling`` options: what becomes of a call whose output is missing.
DANGLING_MODES = ("drop", "synthesize")
#: The ``output`` of a synthesized output. The Responses API rejects keys it does not
#: know, so this text, exactly, is what marks a synthesized output.
LOST_OUTPUT_TEXT = (
    "[histcore] the output of this call was lost from the stored history;"
    " the call ran, its result is unknown"
)
# Calls whose output can say so in text; the others (a screenshot, shell chunks, a
# patch status, ...) cannot, and are dropped as before.
_TEXT_OUTPUT_TYPES = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}


def check_dangling(dangling: Any) -> bool:
    """Whether ``dangling`` asks to synthesize; a ValueError unless it is an option."""
    if type(dangling) is not str or dangling not in DANGLING_MODES:
        raise ValueError(f"dangling must be 'drop' or 'synthesize', not {dangling!r}")
    return dangling == "synthesize"


def lost_output(call: Any) -> dict[str, Any] | None:
    """The output ``repair_input(dangling="synthesize")`` puts after ``call``, whose
    output is missing; None for a call whose output cannot carry text."""
    payload = item_payload(call)
    if payload is None:
        return None
    output_type = _TEXT_OUTPUT_TYPES.get(exact_text(dict.get(payload, "type")) or "")
    call_id = exact_text(dict.get(payload, "call_id"))
    if output_type is None or call_id is None:
        return None
    return {"type": output_type, "call_id": call_id, "output": LOST_OUTPUT_TEXT}


def pair_bounds(facts: ItemFacts) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """First call position and last output position of every pair key."""
    first_call: dict[tuple[str, str], int] = {}
    last_output: dict[tuple[str, str], int] = {}
    for position, pair in enumerate(facts.pairs):
        if pair is None:
            continue
        if facts.kinds[position] == CALL:
            first_call.setdefault(pair, position)
        else:
            last_output[pair] = position
    return first_call, last_output


def find_root(parent: list[int], position: int) -> int:
    root = position
    while parent[root] != root:
        root = parent[root]
    while parent[position] != root:
        parent[position], position = root, parent[position]
    return root


def _union(parent: list[int], first: int, second: int) -> None:
    first, second = find_root(parent, first), find_root(parent, second)
    if first != second:
        parent[max(first, second)] = min(first, second)


def unit_forest(facts: ItemFacts, lost: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """A union-find forest over positions: reasoning run + produced item, call + outputs.
    A reasoning item at a position in ``lost`` (rule (f)) is not joined to the item
    after it."""
    kinds = facts.kinds
    parent = list(range(len(kinds)))
    for position in range(1, len(kinds)):
        if (
            kinds[position - 1] == REASONING
            and kinds[position] in (REASONING, CALL, PRODUCED)
            and position - 1 not in lost
        ):
            _union(parent, position - 1, position)
    first_call, last_output = pair_bounds(facts)
    anchor: dict[tuple[str, str], int] = {}
    for position, pair in enumerate(facts.pairs):
        if pair is None:
            continue
        first, last = first_call.get(pair), last_output.get(pair)
        if first is None or last is None or not first <= position <= last:
            continue  # an output before every call, or a call after every output
        if pair in anchor:
            _union(parent, anchor[pair], position)
        else:
            anchor[pair] = position
    return parent


def unit_roots(items: list[Any]) -> tuple[list[int], list[int]]:
    """For each position, the first position of its unit; and the positions of outputs
    with no call before them (their unit may start before ``items``). For windows and
    stored turns, which are their own stored history: a reasoning run stays whole."""
    facts = ItemFacts(items)
    parent = unit_forest(facts)
    first_call, _ = pair_bounds(facts)
    orphans = [
        position
        for position, pair in enumerate(facts.pairs)
        if pair is not None
        and facts.kinds[position] == OUTPUT
        and first_call.get(pair, position) >= position
    ]
    return [find_root(parent, position) for position in range(len(parent))], orphans
