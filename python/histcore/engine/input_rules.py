"""Model input the Responses API accepts: the checker, the repair and unit windows.

``input_problems`` and ``repair_input`` run in whichever engine loaded; this module
adds the readable ``InputProblem`` and the window rule that sessions use. The rules,
each with the API error it prevents, are in docs/design.md ("Model input the API
accepts").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from histcore.engine.backend import backend_module
from histcore.engine.units import LOST_OUTPUT_TEXT as LOST_OUTPUT_TEXT
from histcore.engine.units import unit_roots
from histcore.engine.vocabulary import PROBLEM_KINDS, USER_SIDE_ROLES, exact_text

# InputProblem, LOST_OUTPUT_TEXT, StoredHistory, input_problems and repair_input are
# public at histcore.items alone.
__all__ = [
    "PROBLEM_KINDS",
    "drop_units",
    "window_start",
]

if TYPE_CHECKING:
    from histcore._core import StoredHistory as StoredHistory
else:
    #: Rules (e) and (f) of a stored history read once (the loaded engine's): pass it
    #: as ``history`` in place of the items, and ``extend`` it as the store grows.
    StoredHistory = backend_module.StoredHistory

_MESSAGES = {
    "output_without_call": "tool output for call_id {detail!r} has no call of its type before it",
    "call_without_output": "tool call {detail!r} has no output after it",
    "call_awaiting_output": "tool call {detail!r} at the end still awaits its output (approval)",
    "duplicate_id": "item id {detail!r} appeared earlier in the list",
    "reasoning_without_item": "reasoning item {detail!r} is not followed by the item it produced",
    "item_without_reasoning": (
        "item {detail!r} was stored right after a reasoning item that is not directly before it"
    ),
    "reasoning_without_successor": (
        "reasoning item {detail!r} is not directly followed by the item stored after it"
        " (without a history that knows it: is followed by another reasoning item)"
    ),
}


class InputProblem(NamedTuple):
    """One broken rule: where, which rule (``"a"`` to ``"f"``), which kind, and why."""

    position: int
    rule: str
    kind: str
    message: str
    #: the call_id or item id concerned, when there is one
    detail: str | None


def input_problems(
    items: Iterable[Any], *, history: Iterable[Any] | StoredHistory | None = None
) -> list[InputProblem]:
    """Every way ``items`` would make the Responses API reject a request.

    Sorted by position, then rule. With the stored ``history`` the input came from,
    rule (e) applies too, and rule (f) knows each stored reasoning item's successor.
    Linear in the number of items.
    """
    return [
        InputProblem(
            position,
            PROBLEM_KINDS[kind],
            kind,
            f"input[{position}]: " + _MESSAGES[kind].format(detail=detail),
            detail,
        )
        for position, kind, detail in backend_module.input_problems(items, history=history)
    ]


def repair_input(
    items: Iterable[Any],
    *,
    history: Iterable[Any] | StoredHistory | None = None,
    dangling: str = "drop",
) -> list[Any]:
    """``items`` without the units that break the rules: a list ``input_problems``
    finds clean (duplicate ids between user messages aside: those are never dropped).

    A unit is a reasoning run with the item it produced (a reasoning item that lost
    the item stored after it stands alone), or a tool call with its outputs: kept whole
    or dropped whole, never split. User messages stay. A list
    without problems comes back with the very same objects in the same order.

    ``dangling`` says what becomes of a function or custom tool call whose output is
    missing (a trailing call awaiting its output aside): ``"drop"`` its unit, or
    ``"synthesize"`` an output right after it whose ``output`` is ``LOST_OUTPUT_TEXT``,
    so the model still sees the action ran. Other calls are dropped either way.
    """
    result: list[Any] = backend_module.repair_input(items, history=history, dangling=dangling)
    return result


def window_start(tail: list[Any], limit: int) -> tuple[int, bool]:
    """Where a window of at least the last ``limit`` items of ``tail`` must start so
    that it cuts no unit, and whether the unit may reach back before ``tail``.

    ``tail`` is the newest part of a stored history, oldest first. The second value is
    True when the window reaches ``tail``'s first item (or holds an output whose call
    ``tail`` does not hold): the caller should read further back and ask again.
    """
    length = len(tail)
    start = max(length - limit, 0)
    if start == 0:
        return 0, length > 0
    roots, orphan_outputs = unit_roots(tail)
    position = length - 1
    while position >= start:
        start = min(start, roots[position])
        position -= 1
    reaches_back = start == 0 or any(p >= start for p in orphan_outputs)
    return start, reaches_back


def drop_units(items: list[Any], positions: Iterable[int]) -> list[Any]:
    """``items`` without the units holding ``positions`` (user messages always stay).

    For the short lists of one turn: the work is per item in Python.
    """
    roots, _ = unit_roots(items)
    broken = {roots[position] for position in positions}
    if not broken:
        return items
    return [
        item
        for position, item in enumerate(items)
        if roots[position] not in broken or _is_user_message(item)
    ]


def _is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and exact_text(dict.get(item, "role")) in USER_SIDE_ROLES
