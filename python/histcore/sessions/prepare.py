"""Session-input preparation and turn persistence (docs/design.md, "Session input preparation").

``prepare_input_with_session`` turns a turn's new input plus the session history into
the model input and the items this turn must persist; ``save_turn_to_session``
writes a finished turn. The item passes (deep copy, classification, orphan pruning,
latest-value dedupe, repair) are the engine's; without a callback, the last three read
each item once (``prepared_model_input``).
"""

from __future__ import annotations

import inspect
from itertools import repeat
from typing import Any

from histcore.engine._support import prepared_model_input
from histcore.engine.collector import collector_paused
from histcore.engine.input_rules import drop_units, input_problems, repair_input, window_start
from histcore.engine.items import (
    classify_callback_output,
    deduplicate_input_items_preferring_latest,
    deep_copy_items,
    drop_orphan_function_calls,
)
from histcore.engine.pairing import outputs_after_calls, pair_key, tool_role
from histcore.engine.vocabulary import METADATA_KEYS, all_exact_dicts
from histcore.engine.wording import a_type_name
from histcore.exceptions import UserError
from histcore.sessions.base import InputItem, Session, SessionInputCallback, resolve_limit

__all__ = ["prepare_input_with_session", "save_turn_to_session"]


def _returns_fresh_items(session: Session) -> bool:
    """Whether the session's class declares (``SessionABC._returns_fresh_items``) that
    ``get_items`` returns objects nobody else holds, so its history needs no extra deep
    copy. Sessions that declare nothing (the Agents SDK's, test doubles) get copied."""
    # Read from the class, and only a real True counts: an instance attribute or a
    # mock's auto-created attribute must not switch the copy off.
    return getattr(type(session), "_returns_fresh_items", False) is True


def _normalised(item: Any) -> Any:
    """The item as sent to a model: a dict without the SDK's session-only metadata."""
    if type(item) is not dict:
        dump = getattr(item, "model_dump", None)
        if dump is None or not callable(dump):
            return item
        item = dump(exclude_unset=True)
        if not isinstance(item, dict):
            return item
    if METADATA_KEYS[0] in item or METADATA_KEYS[1] in item:
        return {key: value for key, value in item.items() if key not in METADATA_KEYS}
    return item


def _normalise_all(items: list[Any]) -> list[Any]:
    """``_normalised`` of every item; the usual case (plain dicts, no metadata) is
    checked with C-level loops, as histories are long."""
    if all_exact_dicts(items) and not any(
        any(map(dict.__contains__, items, repeat(key))) for key in METADATA_KEYS
    ):
        return list(items)
    return [_normalised(item) for item in items]


def _check_items(items: list[Any], where: str) -> None:
    """Every entry must be an input item: a dict or a model with ``model_dump()``."""
    if all_exact_dicts(items):
        return
    for index, item in enumerate(items):
        if not isinstance(item, dict) and not callable(getattr(item, "model_dump", None)):
            raise UserError(
                f"{where}[{index}] is {a_type_name(item)}, not an input item "
                "(a dict or a model with model_dump())"
            )


def _input_items(value: str | list[InputItem], name: str) -> list[Any]:
    """The new input as a list: a str is one user message."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, (list, tuple)):
        raise UserError(
            f"{name} must be a str or a list of input items, not {type(value).__name__}"
        )
    items = list(value)
    _check_items(items, name)
    return items


def _callback_name(callback: Any) -> str:
    name = getattr(callback, "__qualname__", None) or getattr(callback, "__name__", None)
    return f"session_input_callback {name}" if name else f"session_input_callback {callback!r}"


#: A window reads at most this many times its limit (plus the item before it) while
#: looking for the start of a unit it would cut: an output whose call was never stored
#: would otherwise make every turn read the whole history.
WINDOW_READ_FACTOR = 16


async def _window(session: Session, limit: int) -> list[Any]:
    """At least the last ``limit`` items, extended back to the start of any unit the
    window would cut (docs/design.md, "Windows"), reading further back by doubling."""
    fetch = limit + 1  # one more, to see what stands before the window
    while True:
        tail = await session.get_items(fetch)
        if not isinstance(tail, list):
            tail = list(tail)
        start, reaches_back = window_start(tail, limit)
        if not reaches_back or len(tail) < fetch or fetch > WINDOW_READ_FACTOR * limit:
            return tail[start:]
        fetch *= 2


async def _history(session: Session, limit: int | None) -> list[Any]:
    """The session history as fresh objects this call owns, not yet normalised."""
    if limit is None:
        items = await session.get_items()
        if not isinstance(items, list):
            items = list(items)
    else:
        items = await _window(session, limit)
    if _returns_fresh_items(session):
        return items
    with collector_paused():
        copied: list[Any] = deep_copy_items(items)
    return copied


def _plain_model_input(history: list[Any], new_copies: list[Any], limit: int | None) -> Any:
    """The model input of a turn without a callback when every item is an exact dict
    without the SDK's metadata keys (so normalising changes nothing): the general path's
    orphan pruning, dedupe and repair in one engine call. NotImplemented otherwise."""
    positions = range(len(history))
    return prepared_model_input(
        history + new_copies,
        positions,
        output_pruning_indexes=positions if limit is not None else None,
        history=history,
        without=METADATA_KEYS,
    )


async def prepare_input_with_session(
    input: str | list[InputItem],
    session: Session | None,
    session_input_callback: SessionInputCallback | None = None,
    session_settings: Any = None,
) -> tuple[list[InputItem], list[InputItem]]:
    """The model input of a turn and the items it must persist: ``(model_input, to_persist)``.

    History is read from ``session`` (latest ``limit`` items when ``session_settings``
    or the session's own settings set one); ``input`` (a str is one user message) is
    the turn's new items. Without a callback the model input is history + new and the
    new items are persisted. ``session_input_callback(history, new_items)`` gets deep
    copies of both, may change them, and returns the model input list (or an awaitable
    of it); each returned item is classified as history (not persisted), a new item
    (persisted once, at its first position), a repeat, or an item the callback made up
    (persisted), by identity first and then by content (docs/design.md, rules 1-6).

    The model input then has its orphan tool calls pruned among the history positions
    (and, when a limit cut the history, outputs whose call fell outside it), the SDK's
    session-only metadata keys stripped, the latest-value dedupe applied, and every
    unit that breaks the model-input rules dropped (``repair_input``, with the stored
    history). A limit's window holds at least ``limit`` items and starts at a unit
    boundary (docs/design.md, "Windows"). The persisted list keeps callback order.
    Neither list shares objects with the other, the store, or the caller's input. With
    ``session=None`` the model input is the new input and nothing is persisted.
    """
    new_items = _normalise_all(_input_items(input, "input"))
    if session is None:
        return deep_copy_items(new_items), []
    if session_input_callback is not None and not callable(session_input_callback):
        raise UserError(
            f"session_input_callback must be callable or None, not "
            f"{type(session_input_callback).__name__}"
        )
    limit = resolve_limit(session, session_settings)
    history = await _history(session, limit)
    new_copies = deep_copy_items(new_items)
    if session_input_callback is None:
        model_input = _plain_model_input(history, new_copies, limit)
        if model_input is not NotImplemented:
            with collector_paused():
                return model_input, deep_copy_items(new_items)
    with collector_paused():
        history = _normalise_all(history)

    if session_input_callback is None:
        combined = history + new_copies  # both normalised already
        history_positions: list[int] | range = range(len(history))
        persisted = new_items
    else:
        # The callback gets its own lists, so it may reorder or extend them in place;
        # classification compares against these.
        result = session_input_callback(list(history), list(new_copies))
        if inspect.isawaitable(result):
            result = await result
        name = _callback_name(session_input_callback)
        if not isinstance(result, list):
            raise UserError(
                f"{name} must return a list of input items, not {type(result).__name__}"
            )
        _check_items(result, f"the list returned by {name}")
        history_positions, persisted_positions = classify_callback_output(
            history, new_copies, result
        )
        combined = _normalise_all(result)
        persisted = [combined[position] for position in persisted_positions]

    pruned = drop_orphan_function_calls(
        combined,
        pruning_indexes=history_positions,
        # A limit can cut a call off its output: such outputs go too, but only
        # from the history part.
        output_pruning_indexes=history_positions if limit is not None else None,
    )
    deduplicated = deduplicate_input_items_preferring_latest(pruned)
    # Whatever the window and the callback did, the model gets an input the API accepts.
    model_input = repair_input(deduplicated, history=history)
    with collector_paused():
        to_persist = deep_copy_items(persisted)
    return model_input, to_persist


async def _stored_calls(session: Session, wanted: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The pair keys among ``wanted`` whose call the session holds."""
    found: set[tuple[str, str]] = set()
    for item in await session.get_items():
        payload = item if isinstance(item, dict) else _normalised(item)
        if tool_role(payload) == "call" and pair_key(payload) in wanted:
            found.add(pair_key(payload))
    return found


async def _storable(session: Session, items: list[Any]) -> list[Any]:
    """``items`` without what would leave the stored history breaking rules (a)-(d):
    outputs whose call is neither in the turn nor stored, reasoning without the item it
    produced, repeated ids, each with its unit. Calls still waiting for an output stay:
    a resume completes them."""
    # Rule (f) does not apply: the turn is its own stored history, every reasoning item
    # followed by the item it produced (a reasoning run included).
    problems = [p for p in input_problems(items) if p.rule not in ("b", "f")]
    if not problems:
        return items
    orphans = {p.position for p in problems if p.kind == "output_without_call"}
    if orphans:
        stored = await _stored_calls(session, {pair_key(items[p]) for p in orphans})
        problems = [
            p
            for p in problems
            if p.kind != "output_without_call" or pair_key(items[p.position]) not in stored
        ]
    return drop_units(items, [p.position for p in problems])


async def save_turn_to_session(
    session: Session, turn_input: str | list[InputItem], new_items: list[InputItem]
) -> list[InputItem]:
    """Persist a finished turn: its input items, then the items the turn produced.

    The batch is normalised (models dumped, session-only metadata stripped), reduced
    by the latest-value dedupe, and every tool output that precedes its call is moved
    right after it, so a stored call always comes before its output. A unit that
    would leave the stored history breaking the model-input rules (a) to (d) is not
    written: an output whose call is neither in the batch nor stored, reasoning without
    the item it produced, a repeated id. The session gets its own copies; the persisted
    items (as normalised here) are returned.
    """
    batch = _normalise_all(_input_items(turn_input, "turn_input"))
    if not isinstance(new_items, (list, tuple)):
        raise UserError(f"new_items must be a list of input items, not {type(new_items).__name__}")
    produced = list(new_items)
    _check_items(produced, "new_items")
    batch += _normalise_all(produced)
    items = outputs_after_calls(deduplicate_input_items_preferring_latest(batch))
    items = await _storable(session, items)
    if items:
        await session.add_items(deep_copy_items(items))
    return items
