"""The model-input rules: ``input_problems`` and ``repair_input`` (the Rust engine's
``rust/core/input_rules.rs``, items read as ``rust/py/input_rules.rs`` reads them).

The rules (docs/design.md, "Model input the API accepts") are checked in one linear
pass each. A problem is ``(position, kind, detail)``: ``kind`` names the rule broken
and ``detail`` is the ``call_id`` or item id concerned (or None);
``histcore.engine.input_rules`` turns these into ``InputProblem`` values with messages.

The repair works on *units*: a reasoning run together with the item it produced (a
reasoning item that lost its stored successor, rule (f), stands alone), and a tool call
together with its outputs. A unit is kept whole or dropped whole, user messages are
never dropped, and a list without problems comes back with the very same objects in
the same order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from histcore.engine.pure.args import as_list as _as_list
from histcore.engine.units import CALL as _CALL
from histcore.engine.units import OUTPUT as _OUTPUT
from histcore.engine.units import PRODUCED as _PRODUCED
from histcore.engine.units import REASONING as _REASONING
from histcore.engine.units import USER as _USER
from histcore.engine.units import ItemFacts as _Facts
from histcore.engine.units import check_dangling as _check_dangling
from histcore.engine.units import find_root as _find
from histcore.engine.units import item_payload as _payload
from histcore.engine.units import lost_output as _lost_output
from histcore.engine.units import pair_bounds as _pair_bounds
from histcore.engine.units import unit_forest as _units
from histcore.engine.vocabulary import FAKE_ID, PROBLEM_KINDS
from histcore.engine.vocabulary import exact_text as _text

# StoredHistory, input_problems and repair_input are public at histcore.items alone; the
# item facts and units the rules read items through are histcore.engine.units'.
__all__ = ["repair_unit_roots"]

Problem = tuple[int, str, "str | None"]


def _last_issued(facts: _Facts) -> dict[str, int]:
    """program call_id -> position of the last item that program issued."""
    last: dict[str, int] = {}
    for position, caller in enumerate(facts.caller):
        if caller is not None:
            last[caller] = position
    return last


def _exempt_calls(facts: _Facts) -> list[bool]:
    """Calls that may stand without an output: a program that issued later items, and a
    pending hosted shell call issued by a program (the API runs both)."""
    last_issued = _last_issued(facts)
    exempt = [False] * len(facts.kinds)
    for position, pair in enumerate(facts.pairs):
        if pair is None or facts.kinds[position] != _CALL:
            continue
        kind, call_id = pair
        if kind == "program" and last_issued.get(call_id, -1) > position:
            exempt[position] = True
        elif facts.caller[position] is not None and facts.pending_hosted[position]:
            exempt[position] = True
    return exempt


def _trailing_start(facts: _Facts) -> int:
    """Start of the trailing run of calls and reasoning: calls there await approval."""
    start = len(facts.kinds)
    while start > 0 and facts.kinds[start - 1] in (_CALL, _REASONING):
        start -= 1
    return start


class StoredHistory:
    """Rules (e) and (f) of a stored history, read once: pass it as ``history`` to
    ``input_problems`` and ``repair_input`` in place of the items, and ``extend`` it as
    the store grows.

    Reads only what those rules need: each item's ``type`` (its ``role`` when the type
    is ``reasoning``), and the ``id`` of a reasoning item and of the item after it."""

    __slots__ = ("_before", "_count", "_required", "_successor")

    def __init__(self, items: Iterable[Any] | None = None) -> None:
        #: item id -> id of the reasoning item stored directly before it (rule (e))
        self._required: dict[str, str] = {}
        #: reasoning item id -> id of the item stored directly after it (rule (f))
        self._successor: dict[str, str] = {}
        self._before: str | None = None  # the id of the item read last, when reasoning
        self._count = 0
        if items is not None:
            self._read(_as_list(items, "items"))

    def extend(self, items: Iterable[Any]) -> None:
        """Read ``items``, stored after those read so far."""
        self._read(_as_list(items, "items"))

    def __len__(self) -> int:
        return self._count

    def _read(self, items: list[Any]) -> None:
        for item in items:
            payload = _payload(item)
            reasoning = (
                payload is not None
                and _text(dict.get(payload, "type")) == "reasoning"
                and dict.get(payload, "role") is None
            )
            item_id = None
            if payload is not None and (reasoning or self._before is not None):
                item_id = _text(dict.get(payload, "id"))
                item_id = None if item_id == FAKE_ID else item_id
            if self._before is not None and item_id is not None:
                self._successor[self._before] = item_id
                if not reasoning:
                    self._required[item_id] = self._before
            self._before = item_id if reasoning else None
            self._count += 1


def _stored(history: Any) -> list[Any] | StoredHistory | None:
    """The ``history`` argument, a list materialised (a ``StoredHistory`` as it is)."""
    if history is None or type(history) is StoredHistory:
        return history
    return _as_list(history, "history")


def _read_history(stored: list[Any] | StoredHistory | None) -> StoredHistory:
    """What rules (e) and (f) read of the stored history (nothing without one)."""
    if isinstance(stored, StoredHistory):
        return stored
    kept = StoredHistory()
    if stored is not None:
        kept._read(stored)
    return kept


def _lost_successors(facts: _Facts, successor: dict[str, str]) -> set[int]:
    """Positions breaking rule (f): a reasoning item not directly followed by the item
    stored after it; where the history does not know that item (no history, no id,
    stored last), one directly followed by another reasoning item."""
    kinds, ids = facts.kinds, facts.ids
    length = len(kinds)
    lost: set[int] = set()
    for position in [at for at, kind in enumerate(kinds) if kind == _REASONING]:
        item_id = ids[position]
        known = successor.get(item_id) if item_id is not None else None
        after = position + 1
        if known is not None:
            gone = after == length or ids[after] != known
        else:
            gone = after < length and kinds[after] == _REASONING
        if gone:
            lost.add(position)
    return lost


def _pair_problems(facts: _Facts, exempt: list[bool], out: list[Problem]) -> None:
    first_call, last_output = _pair_bounds(facts)
    trailing = _trailing_start(facts)
    for position, pair in enumerate(facts.pairs):
        if pair is None:
            continue
        if facts.kinds[position] == _OUTPUT:
            if first_call.get(pair, position) >= position:
                out.append((position, "output_without_call", pair[1]))
        elif last_output.get(pair, -1) < position and not exempt[position]:
            kind = "call_awaiting_output" if position >= trailing else "call_without_output"
            out.append((position, kind, pair[1]))


def _reasoning_problems(facts: _Facts, lost: set[int], out: list[Problem]) -> None:
    kinds = facts.kinds
    length = len(kinds)
    position = 0
    while position < length:
        if kinds[position] != _REASONING:
            position += 1
            continue
        start = position
        while position < length and kinds[position] == _REASONING:
            position += 1
        if position == length or kinds[position] not in (_CALL, _PRODUCED):
            out.extend(
                (index, "reasoning_without_item", facts.ids[index])
                for index in range(start, position)
            )
    out.extend((position, "reasoning_without_successor", facts.ids[position]) for position in lost)


def _lacks_reasoning(
    facts: _Facts, required: dict[str, str], position: int, before: int | None
) -> bool:
    """Rule (e) at ``position``, whose item comes after the one at ``before``."""
    item_id = facts.ids[position]
    if item_id is None or facts.kinds[position] == _REASONING:
        return False
    needed = required.get(item_id)
    if needed is None:
        return False
    return before is None or facts.kinds[before] != _REASONING or facts.ids[before] != needed


def _history_problems(facts: _Facts, required: dict[str, str], out: list[Problem]) -> None:
    if not required:
        return
    for position in range(len(facts.ids)):
        if _lacks_reasoning(facts, required, position, position - 1 if position else None):
            out.append((position, "item_without_reasoning", facts.ids[position]))


def _id_problems(facts: _Facts, out: list[Problem]) -> None:
    seen: set[str] = set()
    for position, item_id in enumerate(facts.ids):
        if item_id is None:
            continue
        if item_id in seen:
            out.append((position, "duplicate_id", item_id))
        else:
            seen.add(item_id)


def _problems(facts: _Facts, required: dict[str, str], lost: set[int]) -> list[Problem]:
    found: list[Problem] = []
    _pair_problems(facts, _exempt_calls(facts), found)
    _id_problems(facts, found)
    _reasoning_problems(facts, lost, found)
    _history_problems(facts, required, found)
    found.sort(key=lambda problem: (problem[0], PROBLEM_KINDS[problem[1]]))
    return found


def input_problems(
    items: Iterable[Any], *, history: Iterable[Any] | StoredHistory | None = None
) -> list[Problem]:
    """Every way ``items`` breaks the model-input rules, as (position, kind, detail).

    Sorted by position, then rule. ``history`` (the stored history the input came
    from, or a ``StoredHistory`` of it) adds rule (e): an item stored right after a
    reasoning item needs that reasoning item directly before it; and tells rule (f)
    which item a reasoning item needs directly after it (without it, rule (f) finds
    only a reasoning item directly followed by another). Linear in the number of items.
    """
    items = _as_list(items, "items")
    stored = _stored(history)
    facts = _Facts(items)  # the items are read before the history (the Rust engine too)
    kept = _read_history(stored)
    return _problems(facts, kept._required, _lost_successors(facts, kept._successor))


# --- repair ------------------------------------------------------------------------


def repair_unit_roots(
    items: list[Any], *, history: Iterable[Any] | StoredHistory | None = None
) -> list[int]:
    """For each position, the first position of its unit as ``repair_input`` forms
    them: a reasoning item that breaks rule (f) is not joined to the item after it."""
    facts = _Facts(items)
    parent = _units(facts, _lost_successors(facts, _read_history(_stored(history))._successor))
    return [_find(parent, position) for position in range(len(parent))]


def _fixable(facts: _Facts, problems: list[Problem]) -> list[Problem]:
    # A duplicate id on a user message cannot be fixed: user messages are never dropped.
    return [problem for problem in problems if facts.kinds[problem[0]] != _USER]


def _second_round(facts: _Facts, required: dict[str, str], dropped: list[bool]) -> list[int]:
    """Positions breaking rule (e) once the first round's drops are made. Only an item
    whose predecessor went can break it anew: the others kept the item before them,
    and had no fixable problem."""
    found: list[int] = []
    if not required:
        return found
    before: int | None = None
    for position in range(len(dropped)):
        if dropped[position]:
            continue
        moved = position > 0 and dropped[position - 1]
        if moved and facts.kinds[position] != _USER:
            if _lacks_reasoning(facts, required, position, before):
                found.append(position)
        before = position
    return found


class _Cascade:
    """The rounds after the first: dropping the units whose problems earlier drops
    uncovered. Only a program call can lose its exemption, when every item it issued
    after it went; it is followed per program."""

    def __init__(self, facts: _Facts, roots: list[int], dropped: list[bool]) -> None:
        self.facts, self.roots, self.dropped = facts, roots, dropped
        _, last_output = _pair_bounds(facts)
        # Per program call_id: its kept calls with no output after them (each exempt
        # while the program issued a later item), and the positions of what it issued.
        self.calls: dict[str, list[int]] = {}
        for position, pair in enumerate(facts.pairs):
            if (
                pair is not None
                and pair[0] == "program"
                and facts.kinds[position] == _CALL
                and not dropped[position]
                and last_output.get(pair, -1) < position
            ):
                self.calls.setdefault(pair[1], []).append(position)
        self.issued: dict[str, list[int]] = {program: [] for program in self.calls}
        if self.calls:
            for position, caller in enumerate(facts.caller):
                if caller in self.issued:
                    self.issued[caller].append(position)
        self.members: dict[int, list[int]] | None = None

    def run(self, second_round: list[int]) -> None:
        """Drop the units of ``second_round``, then every program call that loses its
        exemption, with its unit, until none does."""
        dirty: list[str] = []
        for position in second_round:
            self._drop_unit(position, dirty)
        dirty.extend(self.calls)
        while dirty:
            program = dirty.pop()
            issued, calls = self.issued[program], self.calls[program]
            while issued and self.dropped[issued[-1]]:
                issued.pop()
            last_issued = issued[-1] if issued else -1
            # From the back: once a call is still exempt, so are the calls before it.
            while calls and last_issued <= calls[-1]:
                call = calls.pop()
                if not self.dropped[call]:
                    self._drop_unit(call, dirty)

    def _drop_unit(self, position: int, dirty: list[str]) -> None:
        if self.members is None:
            self.members = {}
            for member, root in enumerate(self.roots):
                self.members.setdefault(root, []).append(member)
        for member in self.members[self.roots[position]]:
            if self.dropped[member] or self.facts.kinds[member] == _USER:
                continue
            self.dropped[member] = True
            caller = self.facts.caller[member]
            if caller is not None and caller in self.issued:
                dirty.append(caller)


def _with_lost_outputs(current: list[Any], problems: list[Problem]) -> list[Any]:
    """``current`` with a synthesized output right after each call whose output is
    missing (``call_without_output``: a trailing call awaiting its output is not one)."""
    dangling = {position for position, kind, _ in problems if kind == "call_without_output"}
    if not dangling:
        return current
    augmented: list[Any] = []
    for position, item in enumerate(current):
        augmented.append(item)
        if position in dangling and (output := _lost_output(item)) is not None:
            augmented.append(output)
    return augmented


def repair_input(
    items: Iterable[Any],
    *,
    history: Iterable[Any] | StoredHistory | None = None,
    dangling: str = "drop",
) -> list[Any]:
    """``items`` without the units that break the model-input rules.

    A unit is a reasoning run with the item it produced, or a tool call with its
    outputs; it is kept or dropped whole, so no turn is split. A reasoning item that
    lost the item stored after it (rule (f)) is a unit of its own. User messages are
    never dropped. Without problems the result holds the very same objects in the same
    order. Linear in the number of items. ``dangling="synthesize"``: a function or
    custom tool call whose output is missing gets a synthesized output
    (``histcore.engine.units.lost_output``) right after it instead of being dropped.
    """
    synthesize = _check_dangling(dangling)
    current = list(_as_list(items, "items"))
    stored = _stored(history)
    if synthesize:
        found = input_problems(current, history=stored)
        if not found:
            return current  # the common case: one pass, as under "drop"
        current = _with_lost_outputs(current, found)
    kept = _read_history(stored)
    required = kept._required
    facts = _Facts(current)
    lost = _lost_successors(facts, kept._successor)
    problems = _fixable(facts, _problems(facts, required, lost))
    if not problems:
        return current
    # Round one drops the units holding a problem. The rounds after it are followed
    # incrementally, so that a chain of rounds stays linear. That is exact because units
    # are kept or dropped whole: a kept reasoning item keeps the item after it (it broke
    # neither (d) nor (f), so it is joined to it), a kept pair keeps its first call and
    # last output, so rules (a), (c), (d) and (f) never break anew and the units of the
    # kept items do not change. Two rules can: (e), at an item whose reasoning went in
    # round one, and (b), at a program call whose issued items all went.
    parent = _units(facts, lost)
    roots = [_find(parent, position) for position in range(len(current))]
    broken = {roots[position] for position, _, _ in problems}
    dropped = [
        facts.kinds[position] != _USER and roots[position] in broken
        for position in range(len(current))
    ]
    _Cascade(facts, roots, dropped).run(_second_round(facts, required, dropped))
    return [item for position, item in enumerate(current) if not dropped[position]]
