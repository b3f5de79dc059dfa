"""The guard of ``install(guard=True)``: every model input the SDK sends obeys the
model-input rules (docs/design.md, "Model input the API accepts").

It rebinds the run loop's ``deduplicate_input_items_preferring_latest`` only: a call
from ``run_single_turn_streamed`` or ``get_new_response`` is a model input, repaired
with their ``session`` and ``server_conversation_tracker``; any other caller gets the
plain dedupe. The stored history (rule (e)) is what the session preparation read
(``_guard_history``). A wrapper of ``maybe_filter_model_input`` hands the dedupe a list
whatever the filter returned and re-guards a dedupe rebound since install.

Rules: it never writes to the store, and a clean input comes back as the very same
list. Details: docs/design.md, "The guard (``install(guard=True)``)".
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import CodeType, ModuleType
from typing import Any

from histcore.engine.backend import backend_module
from histcore.engine.input_rules import StoredHistory
from histcore.engine.vocabulary import OUTPUT_TO_CALL_TYPE
from histcore.openai_agents._guard_counts import GuardCounts
from histcore.openai_agents._guard_history import noted
from histcore.openai_agents._guard_link import GuardLink
from histcore.openai_agents._guard_log import LOGGER, log, log_keys

__all__ = [
    "CALLERS",
    "DEDUPE",
    "FILTER",
    "LOGGER",
    "GuardCounts",
    "make_guarded_dedupe",
    "make_guarded_filter",
    "unfit",
]

#: The run-loop functions whose dedupe call builds a model input, and the locals read.
CALLERS = ("run_single_turn_streamed", "get_new_response")
DEDUPE = "deduplicate_input_items_preferring_latest"
FILTER = "maybe_filter_model_input"
LOCALS = ("session", "server_conversation_tracker")
SERVER_SESSION = "OpenAIConversationsSession"

_PAIRING_KINDS = frozenset({"call_without_output", "call_awaiting_output"})


def unfit(module: ModuleType) -> str | None:
    """None when ``module`` (the run loop) has the shape the guard relies on."""
    for name in CALLERS:
        code: CodeType | None = getattr(getattr(module, name, None), "__code__", None)
        if code is None:
            return f"{module.__name__}.{name} does not exist"
        if DEDUPE not in code.co_names:
            return f"{module.__name__}.{name} does not dedupe its model input"
        if FILTER not in code.co_names:
            return f"{module.__name__}.{name} does not call {FILTER}"
        missing = [local for local in LOCALS if local not in code.co_varnames]
        if missing:
            return f"{module.__name__}.{name} has no {', '.join(missing)}"
    return None


def make_guarded_dedupe(
    dedupe: Callable[[Sequence[Any]], list[Any]],
    module: ModuleType,
    counts: GuardCounts,
    link: GuardLink,
) -> Callable[[Sequence[Any]], list[Any]]:
    """``dedupe`` (the run loop's current binding), then the guard for model inputs; with
    the checking pass ``link`` holds for ``dedupe``, one engine call does both."""
    callers = frozenset(getattr(module, name).__code__ for name in CALLERS)
    problems_of = backend_module.input_problems
    checked = link.checked_of(dedupe)

    def deduplicate_input_items_preferring_latest(items: Sequence[Any]) -> list[Any]:
        # The caller's frame: the SDK calls the dedupe with the items alone, and the
        # session and conversation tracker the repair needs are its caller's locals.
        frame = sys._getframe(1)
        if frame.f_code not in callers:
            return dedupe(items)
        started = time.perf_counter()
        local = frame.f_locals
        session = local.get("session")
        server = (
            local.get("server_conversation_tracker") is not None
            or type(session).__name__ == SERVER_SESSION
        )
        read = noted()
        if read is None or read[0] is not session or server:
            read = None
        history = None if read is None else read[1]
        deduping = time.perf_counter()
        # histcore's dedupe reads what the check needs in its own pass; else dedupe, check.
        pair: Any = NotImplemented
        if checked is not None and (history is None or type(history) is StoredHistory):
            pair = checked(items, history)
        if pair is NotImplemented:
            deduped = dedupe(items)
            if type(deduped) is not list:
                counts._spend(started, time.perf_counter() - deduping)
                return deduped
            pair = (deduped, problems_of(deduped, history=history))
        result: list[Any] = pair[0]
        found: list[tuple[int, str, Any]] = pair[1]
        dedupe_time = time.perf_counter() - deduping
        problems = [p for p in found if _acts_on(p[0], p[1], result, server)] if found else found
        if not problems:
            counts._note(0, (), started, dedupe_time)
            return result
        repaired = _repair(result, history, server, found, counts.dangling)
        originals = set(map(id, result))
        kept = [item for item in repaired if id(item) in originals]
        synthesized = len(repaired) - len(kept)
        dropped = _dropped_positions(result, kept)
        gone = set(dropped)
        ruled = [(at, kind, detail) for at, kind, detail in problems if at in gone]
        if (
            dropped
            and LOGGER.isEnabledFor(logging.WARNING)
            and counts._first_time(log_keys(session, result, dropped, ruled))
        ):
            log(session, result, dropped, ruled, None if read is None else read[2])
        counts._note(
            len(dropped), [kind for _, kind, _ in ruled], started, dedupe_time, synthesized
        )
        return repaired

    deduplicate_input_items_preferring_latest.__wrapped__ = dedupe  # type: ignore[attr-defined]
    deduplicate_input_items_preferring_latest.__doc__ = dedupe.__doc__
    deduplicate_input_items_preferring_latest.__qualname__ = getattr(
        dedupe, "__qualname__", "deduplicate_input_items_preferring_latest"
    )
    deduplicate_input_items_preferring_latest.__module__ = getattr(dedupe, "__module__", __name__)
    link.record_guard(deduplicate_input_items_preferring_latest)
    return deduplicate_input_items_preferring_latest


def make_guarded_filter(
    original: Callable[..., Any],
    module: ModuleType,
    link: GuardLink,
    reguard: Callable[[Any], None],
) -> Callable[..., Any]:
    """The run loop's ``maybe_filter_model_input``, which the model-input callers await
    right before they dedupe ``filtered.input``, and only when it is a list: for them,
    an input of any other iterable type (a tuple or a generator from the
    ``call_model_input_filter``, which the SDK's model layer turns into a list and sends)
    becomes that list here, so that it is deduplicated and checked as the list would be.

    Then, if the run loop's dedupe is no longer a guard of this installation (something
    rebound it since install), ``reguard(binding)`` puts the guard over the new binding,
    as install would have had it been bound first, so the guard still checks this very
    input. Re-guarding rather than only warning: this step runs on every model input, just
    before the run loop looks the name up, so it sees any way of rebinding (assignment,
    ``monkeypatch``, ``mock.patch``, a write to the module's dict) at the cost of one
    lookup, and no input goes out unchecked; a warning would leave every later input
    unchecked. The rebinding is recorded so that uninstall leaves the new binding itself.
    """
    namespace = vars(module)

    # No look at the caller: the guard's group is recognised only where the model-input
    # callers are the run loop's only users of the filter (``Group.private_to``).
    async def maybe_filter_model_input(*args: Any, **kwargs: Any) -> Any:
        filtered = await original(*args, **kwargs)
        given: Any = filtered.input
        if not isinstance(given, list) and _iterable_input(given):
            filtered.input = list(given)
        bound = namespace.get(DEDUPE)
        if not link.is_guard(bound):
            reguard(bound)
        return filtered

    maybe_filter_model_input.__wrapped__ = original  # type: ignore[attr-defined]
    maybe_filter_model_input.__doc__ = original.__doc__
    maybe_filter_model_input.__qualname__ = getattr(original, "__qualname__", FILTER)
    maybe_filter_model_input.__module__ = getattr(original, "__module__", __name__)
    return maybe_filter_model_input


def _iterable_input(value: Any) -> bool:
    """An input the SDK's model layer sends as a list of its items (``ItemHelpers.
    input_to_new_input_list``, ``_to_dump_compatible``): an iterable, not text (a string
    is one user message) nor a mapping."""
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | bytearray | Mapping)


def _dropped_positions(items: list[Any], kept: list[Any]) -> list[int]:
    """The positions of ``items`` that ``kept`` (a repair of them: a subsequence, in
    order) left out. By position, not by ``id()``: one object may stand twice in a model
    input (a filter returning ``items + items``), and a repair may drop one copy."""
    dropped: list[int] = []
    at = 0
    length = len(kept)
    for position, item in enumerate(items):
        if at < length and kept[at] is item:
            at += 1
        else:
            dropped.append(position)
    return dropped


def _pending_hosted_shell(item: Any) -> bool:
    """A hosted shell call the API runs itself: the SDK sends it without an output."""
    return (
        type(item) is dict
        and item.get("type") == "shell_call"
        and item.get("status") in (None, "in_progress")
    )


def _acts_on(position: int, kind: str, items: list[Any], server: bool) -> bool:
    """Whether the guard repairs the problem ``kind`` at ``position``: not an output
    whose call the server may hold, nor a pending hosted shell call (the SDK keeps both
    on purpose, and the API accepts them)."""
    if server and kind == "output_without_call":
        return False
    return not (kind in _PAIRING_KINDS and _pending_hosted_shell(items[position]))


def _repair(
    items: list[Any],
    history: StoredHistory | list[Any] | None,
    server: bool,
    problems: list[tuple[int, str, Any]],
    dangling: str,
) -> list[Any]:
    """``repair_input`` (``dangling`` passed on) with stand-in partners for what may be
    held elsewhere: a call in front of each output on a server-managed conversation, an
    output after each pending hosted shell call. The stand-ins satisfy the pairing rules
    and are removed after. Only problems can need one (``input_problems`` reports every
    such output and call)."""
    front: list[Any] = []
    back: list[Any] = []
    for item in items if server else ():
        kind = item.get("type") if type(item) is dict else None
        if kind in OUTPUT_TO_CALL_TYPE and type(item.get("call_id")) is str:
            front.append({"type": OUTPUT_TO_CALL_TYPE[kind], "call_id": item["call_id"]})
    for at, kind, _ in problems:
        item = items[at]
        if kind in _PAIRING_KINDS and _pending_hosted_shell(item):
            back.append({"type": "shell_call_output", "call_id": item["call_id"]})
    if not front and not back:
        return list(backend_module.repair_input(items, history=history, dangling=dangling))
    stand_ins = set(map(id, front)) | set(map(id, back))
    repaired = backend_module.repair_input(
        [*front, *items, *back], history=history, dangling=dangling
    )
    return [item for item in repaired if id(item) not in stand_ins]
