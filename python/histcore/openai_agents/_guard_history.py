"""The guard's view of the session history: what the session preparation read this turn
(``noted``), and, under ``dangling="synthesize"``, the stored calls the SDK's pruning
dropped for lack of an output (``make_keeping_orphans``)."""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Callable
from typing import Any

from histcore.engine.input_rules import StoredHistory
from histcore.openai_agents._guard_counts import GuardCounts
from histcore.openai_agents._session_read import ReadNote, noting_reads

__all__ = ["Noted", "make_keeping_orphans", "make_noting_session_get_items", "noted"]

#: (session, rule (e) of the history the preparation read from it, the items read)
Noted = tuple[Any, StoredHistory | list[Any], list[Any]]

#: What ``prepare_input_with_session`` read in this task: rule (e) as a
#: ``StoredHistory``, or the history itself when that could not be read. The items tell,
#: when a warning is logged, whether the store itself is damaged.
_history: contextvars.ContextVar[Noted | None] = contextvars.ContextVar(
    "histcore_guard_history", default=None
)


def noted() -> Noted | None:
    """What the session preparation of this task read last, if anything."""
    return _history.get()


def make_noting_session_get_items(
    original: Callable[..., Any],
    batch: Callable[..., Any],
    counts: GuardCounts,
    plain_reader: Callable[[], Any],
) -> Callable[..., Any]:
    """The SDK's ``_session_get_items``, noting rule (e) of the history a session
    preparation reads (a call from the SDK's ``prepare_input_with_session``, or a pinned
    copy of it, or from histcore's ``batch`` preparation): read once a turn, as it was
    read from the store, and for the SDK's ``SQLiteSession`` read incrementally with the
    kept history (``_session_read``). Its time counts as the guard's. ``plain_reader()``
    is the ``get_items`` of the SDK's SQLiteSession, or None (``_reads_plainly``)."""
    batch_code = batch.__code__

    async def _session_get_items(session: Any, *args: Any, **kwargs: Any) -> Any:
        # The caller's frame: the SDK's other session code (resuming a held write,
        # rewinding) reads through this same function, and nothing but the caller tells
        # a preparation's read from theirs.
        caller = sys._getframe(1).f_code
        if args or (caller is not batch_code and caller.co_name != "prepare_input_with_session"):
            return await original(session, *args, **kwargs)
        limit: int = kwargs.get("limit")  # type: ignore[assignment]
        wider = type(limit) is int and limit > 0 and _reads_plainly(session, plain_reader)
        if wider:
            kwargs = {**kwargs, "limit": limit + 1}
        with noting_reads(session) as note:
            items = await original(session, **kwargs)
        if type(items) is list:
            started = time.perf_counter()
            _history.set((session, _stored_history(items, note), items))
            counts._spend(started)
            # The SDK gets its window; the item before it stays in the noted history.
            if wider and len(items) > 1 and len(items) == kwargs["limit"]:
                items = items[1:]
        return items

    _session_get_items.__wrapped__ = original  # type: ignore[attr-defined]
    _session_get_items.__doc__ = original.__doc__
    return _session_get_items


#: Calls the SDK's orphan pruning drops that ``dangling="synthesize"`` keeps (with the
#: reasoning run before each): ``repair_input`` puts a marked output after them.
_KEPT_CALL_TYPES = frozenset({"function_call", "custom_tool_call"})


def make_keeping_orphans(original: Callable[..., Any], counts: GuardCounts) -> Callable[..., Any]:
    """The session preparation's ``drop_orphan_function_calls`` (``original``): under
    ``dangling="synthesize"`` the stored calls it dropped for lack of an output come
    back, so that the guard sees them; otherwise its result as it is."""

    def drop_orphan_function_calls(items: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(items, *args, **kwargs)
        if (
            counts.dangling != "synthesize"
            or type(items) is not list
            or type(result) is not list
            or len(result) == len(items)
        ):
            return result
        keep = [False] * len(items)
        at = 0
        for position, item in enumerate(items):
            if at < len(result) and result[at] is item:
                keep[position] = True
                at += 1
        if at != len(result):
            return result  # not a subsequence of the items: left as it is
        restored = False
        for position, item in enumerate(items):
            if keep[position] or type(item) is not dict:
                continue
            if item.get("type") not in _KEPT_CALL_TYPES:
                continue
            keep[position] = restored = True
            before = position - 1
            while (
                before >= 0
                and not keep[before]
                and type(items[before]) is dict
                and items[before].get("type") == "reasoning"
            ):
                keep[before] = True
                before -= 1
        if not restored:
            return result
        return [item for position, item in enumerate(items) if keep[position]]

    drop_orphan_function_calls.__wrapped__ = original  # type: ignore[attr-defined]
    drop_orphan_function_calls.__doc__ = original.__doc__
    drop_orphan_function_calls.__qualname__ = getattr(
        original, "__qualname__", "drop_orphan_function_calls"
    )
    drop_orphan_function_calls.__module__ = getattr(original, "__module__", __name__)
    return drop_orphan_function_calls


def _stored_history(items: list[Any], note: ReadNote) -> StoredHistory | list[Any]:
    """Rule (e) of a history just read: kept with the session's kept history when the
    read handed out that or a copy of it (extended by the rows read since), else read
    now; the items themselves when reading them fails (the check then reports what is
    wrong, as without this)."""
    kept = note.stored_history(items)
    if kept is not None:
        return kept
    try:
        return StoredHistory(items)
    except Exception:
        return items


def _reads_plainly(session: Any, plain_reader: Callable[[], Any]) -> bool:
    """Whether one more item read costs nothing but the item: the SDK's SQLiteSession's
    own ``get_items`` (a wrapping session, say an encrypted one, may scan on a budget)."""
    reader = plain_reader()
    return reader is not None and getattr(type(session), "get_items", None) is reader
