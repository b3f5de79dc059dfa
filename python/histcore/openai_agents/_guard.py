"""The guard of ``install(guard=True)``: every model input the SDK sends obeys the
model-input rules (docs/design.md, "Model input the API accepts").

It rebinds ``deduplicate_input_items_preferring_latest`` in
``agents.run_internal.run_loop`` only: a call from ``run_single_turn_streamed`` or
``get_new_response`` is a model input, repaired with their ``session`` and
``server_conversation_tracker``; any other caller gets the plain dedupe. The stored
history (rule (e)) is what ``prepare_input_with_session`` read, noted per task as a
``StoredHistory`` (for the SDK's ``SQLiteSession``, kept with the session's history and
extended by the rows read since). A wrapper of ``maybe_filter_model_input`` hands the
dedupe a list whatever the filter returned and re-guards a dedupe rebound since install.

Rules: it never writes to the store, and a clean input comes back as the very same
list. Details: docs/design.md, "The guard (``install(guard=True)``)".
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from types import CodeType, ModuleType
from typing import Any

from histcore.engine.backend import backend_module
from histcore.engine.input_rules import StoredHistory
from histcore.engine.units import check_dangling
from histcore.engine.vocabulary import OUTPUT_TO_CALL_TYPE, PROBLEM_KINDS
from histcore.openai_agents._replacements import checked_dedupe_of
from histcore.openai_agents._session_read import ReadNote, noting_reads

__all__ = [
    "LOGGER",
    "GuardCounts",
    "make_guarded_dedupe",
    "make_guarded_filter",
    "make_keeping_orphans",
    "make_noting_session_get_items",
    "unfit",
]

LOGGER = logging.getLogger("histcore.openai_agents")

RUN_LOOP = "agents.run_internal.run_loop"
SESSION = "agents.run_internal.session_persistence"
#: The run-loop functions whose dedupe call builds a model input, and the locals read.
CALLERS = ("run_single_turn_streamed", "get_new_response")
DEDUPE = "deduplicate_input_items_preferring_latest"
FILTER = "maybe_filter_model_input"
LOCALS = ("session", "server_conversation_tracker")
SERVER_SESSION = "OpenAIConversationsSession"

_PAIRING_KINDS = frozenset({"call_without_output", "call_awaiting_output"})
#: Rules a stored history can break by itself (the later ones are read from it).
_STORE_RULES = frozenset("abcd")

#: How many (session, problem) pairs the guard remembers having logged: a long-running
#: server meets ever new sessions, so the oldest are forgotten (and logged again if met).
LOGGED_LIMIT = 4096

#: (session, rule (e) of the history prepare_input_with_session read from it, the items
#: read) in this task: a ``StoredHistory``, or the history itself when that could not be
#: read. The items tell, when a warning is logged, whether the store itself is damaged.
_history: contextvars.ContextVar[tuple[Any, StoredHistory | list[Any], list[Any]] | None] = (
    contextvars.ContextVar("histcore_guard_history", default=None)
)


class GuardCounts:
    """Live counts of the guard: model inputs checked, model inputs repaired, items
    dropped, per rule kind the problems whose items it dropped, warnings logged (one per
    session and problem, so usually fewer than ``repaired``), and times (wall clock,
    every thread's summed; left out of the repr, which stays the same from run to run).
    ``dangling`` is what the guard does with a call whose output is missing (``"drop"``
    or ``"synthesize"``, as ``repair_input``); ``synthesized`` counts the outputs it
    synthesized (in the repr when any).

    ``seconds`` is the guard's own time apart from the dedupes of model inputs (noting
    the stored history, repairing, logging); ``dedupe_seconds`` is the time of those
    dedupes, which the guard runs with its check: histcore's dedupe reads the facts the
    check needs in the same pass, so the check's share is that time less a plain dedupe's
    (``histcore bench --openai-agents`` measures both)."""

    __slots__ = (
        "_lock",
        "_logged",
        "checked",
        "dangling",
        "dedupe_seconds",
        "dropped",
        "repaired",
        "rules",
        "seconds",
        "synthesized",
        "warnings",
    )

    def __init__(self, dangling: str = "drop") -> None:
        check_dangling(dangling)
        self.dangling = dangling
        self.synthesized = 0
        self._lock = threading.Lock()
        self.checked = 0
        self.repaired = 0
        self.dropped = 0
        self.rules: Counter[str] = Counter()
        self.warnings = 0
        self.seconds = 0.0
        self.dedupe_seconds = 0.0
        #: (session, problem) keys already logged, oldest first, at most LOGGED_LIMIT
        self._logged: OrderedDict[Hashable, None] = OrderedDict()

    def __repr__(self) -> str:
        synthesized = f", synthesized={self.synthesized}" if self.synthesized else ""
        return (
            f"GuardCounts(checked={self.checked}, repaired={self.repaired}, "
            f"dropped={self.dropped}{synthesized}, rules={dict(self.rules)}, "
            f"warnings={self.warnings})"
        )

    def _first_time(self, keys: Iterable[Hashable]) -> bool:
        """Whether any of ``keys`` was not logged yet (then all are noted as logged, and
        a warning counted). A key met again moves to the young end, so a problem that
        keeps coming back is not forgotten while others come and go."""
        with self._lock:
            logged = self._logged
            new = False
            for key in keys:
                if key in logged:
                    logged.move_to_end(key)
                else:
                    logged[key] = None
                    new = True
            while len(logged) > LOGGED_LIMIT:
                logged.popitem(last=False)
            if new:
                self.warnings += 1
            return new

    def _spend(self, started: float, dedupe: float = 0.0) -> None:
        with self._lock:
            self.seconds += time.perf_counter() - started - dedupe
            self.dedupe_seconds += dedupe

    def _note(
        self,
        dropped: int,
        kinds: Sequence[str],
        started: float,
        dedupe: float,
        synthesized: int = 0,
    ) -> None:
        with self._lock:
            self.seconds += time.perf_counter() - started - dedupe
            self.dedupe_seconds += dedupe
            self.checked += 1
            if dropped or synthesized:
                self.repaired += 1
                self.dropped += dropped
                self.synthesized += synthesized
                self.rules.update(kinds)


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


def make_noting_session_get_items(
    original: Callable[..., Any], batch: Callable[..., Any], counts: GuardCounts
) -> Callable[..., Any]:
    """The SDK's ``_session_get_items``, noting rule (e) of the history a session
    preparation reads (a call from the SDK's ``prepare_input_with_session``, or a pinned
    copy of it, or from histcore's ``batch`` preparation): read once a turn, as it was
    read from the store, and for the SDK's ``SQLiteSession`` read incrementally with the
    kept history (``_session_read``). Its time counts as the guard's."""
    batch_code = batch.__code__

    async def _session_get_items(session: Any, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code
        if args or (caller is not batch_code and caller.co_name != "prepare_input_with_session"):
            return await original(session, *args, **kwargs)
        limit: int = kwargs.get("limit")  # type: ignore[assignment]
        wider = type(limit) is int and limit > 0 and _reads_plainly(session)
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


def _reads_plainly(session: Any) -> bool:
    """Whether one more item read costs nothing but the item: the SDK's SQLiteSession's
    own ``get_items`` (a wrapping session, say an encrypted one, may scan on a budget)."""
    sqlite = sys.modules.get("agents.memory.sqlite_session")
    reader = getattr(getattr(sqlite, "SQLiteSession", None), "get_items", None)
    return reader is not None and getattr(type(session), "get_items", None) is reader


def make_guarded_dedupe(
    dedupe: Callable[[Sequence[Any]], list[Any]], module: ModuleType, counts: GuardCounts
) -> Callable[[Sequence[Any]], list[Any]]:
    """``dedupe`` (the run loop's current binding), then the guard for model inputs."""
    callers = frozenset(getattr(module, name).__code__ for name in CALLERS)
    problems_of = backend_module.input_problems
    checked = checked_dedupe_of(dedupe)

    def deduplicate_input_items_preferring_latest(items: Sequence[Any]) -> list[Any]:
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
        noted = _history.get()
        if noted is None or noted[0] is not session or server:
            noted = None
        history = None if noted is None else noted[1]
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
            and counts._first_time(_log_keys(session, result, dropped, ruled))
        ):
            _log(session, result, dropped, ruled, None if noted is None else noted[2])
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
    # Marks it as this installation's guard (read from __dict__: a Mock answers any getattr).
    deduplicate_input_items_preferring_latest.histcore_guard = counts  # type: ignore[attr-defined]
    return deduplicate_input_items_preferring_latest


def guards_for(value: Any, counts: GuardCounts) -> bool:
    """Whether ``value`` is a guarded dedupe of the installation counting in ``counts``."""
    return getattr(value, "__dict__", {}).get("histcore_guard") is counts


def make_guarded_filter(
    original: Callable[..., Any],
    module: ModuleType,
    counts: GuardCounts,
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
    callers = frozenset(getattr(module, name).__code__ for name in CALLERS)
    namespace = vars(module)

    async def maybe_filter_model_input(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code
        filtered = await original(*args, **kwargs)
        if caller not in callers:
            return filtered
        given: Any = filtered.input
        if not isinstance(given, list) and _iterable_input(given):
            filtered.input = list(given)
        bound = namespace.get(DEDUPE)
        if not guards_for(bound, counts):
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


def _describe(position: int, item: Any) -> str:
    if type(item) is not dict:
        return f"input[{position}] ({type(item).__name__})"
    parts = [f"input[{position}] {item.get('type', 'message')}"]
    for key in ("id", "call_id"):
        if isinstance(item.get(key), str):
            parts.append(f"{key}={item[key]!r}")
    return " ".join(parts)


def _doctor_command(session: Any) -> str:
    path = getattr(session, "db_path", None)
    session_id = getattr(session, "session_id", None)
    where = f"{path} --session {session_id}" if path and session_id else "<store>"
    return f"histcore doctor --fix {where}"


def _session_key(session: Any) -> Hashable:
    """Who a warning is about: the store and session id (a server makes a new session
    object per request for one conversation), else the object; None without a session."""
    if session is None:
        return None
    session_id = getattr(session, "session_id", None)
    if session_id is None:
        return (type(session).__qualname__, id(session))
    return (type(session).__qualname__, str(getattr(session, "db_path", "")), str(session_id))


def _log_keys(
    session: Any, items: list[Any], dropped: list[int], ruled: list[tuple[int, str, Any]]
) -> list[Hashable]:
    """One key per problem whose items were dropped (its kind and call_id or item id);
    an item dropped by the cascade, with no problem of its own, keys by its own ids."""
    owner = _session_key(session)
    keys: list[Hashable] = [(owner, kind, detail) for _, kind, detail in ruled]
    with_problem = {at for at, _, _ in ruled}
    for at in dropped:
        if at not in with_problem:
            item = items[at]
            ids = (item.get("id"), item.get("call_id")) if type(item) is dict else (None, None)
            keys.append((owner, "unit", str(ids)))
    return keys


def _store_breaks(stored: list[Any] | None, ruled: list[tuple[int, str, Any]]) -> bool:
    """Whether the stored history read for this turn breaks a rule the guard dropped
    items for (so ``histcore doctor --fix`` has something to repair), or is unknown.
    Never a rule read from the stored history itself (rule (e) and after: the store
    keeps the order it defines), nor a call awaiting its output (a paused run, which the
    doctor keeps). Runs only when a warning is logged: one engine pass over the read."""
    if stored is None:
        return True
    wanted = {
        (kind, detail)
        for _, kind, detail in ruled
        if PROBLEM_KINDS.get(kind) in _STORE_RULES and kind != "call_awaiting_output"
    }
    if not wanted:
        return False
    try:
        found = backend_module.input_problems(stored)
    except Exception:
        return True
    return any((kind, detail) in wanted for _, kind, detail in found)


def _log(
    session: Any,
    items: list[Any],
    dropped: list[int],
    ruled: list[tuple[int, str, Any]],
    stored: list[Any] | None,
) -> None:
    rules: dict[int, list[str]] = {}
    for at, kind, _ in ruled:
        rules.setdefault(at, []).append(f"{kind} (rule {PROBLEM_KINDS.get(kind, '?')})")
    lines = [
        f"{_describe(at, items[at])}: "
        + (", ".join(rules[at]) if at in rules else "in the unit of a broken item")
        for at in dropped
    ]
    session_id = getattr(session, "session_id", None)
    if _store_breaks(stored, ruled):
        cause = f"To repair the store: {_doctor_command(session)}"
    else:
        cause = (
            "The stored history is fine: the input broke after it was read (a "
            "session_input_callback, call_model_input_filter or session window)"
        )
    LOGGER.warning(
        "histcore guard: dropped %d item(s) from the model input%s (the store is unchanged): "
        "%s. %s. Logged once per session and problem; installation().guard counts every "
        "repair.",
        len(dropped),
        f" of session {session_id!r}" if session_id is not None else "",
        "; ".join(lines),
        cause,
    )
