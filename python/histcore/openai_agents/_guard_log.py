"""The guard's warning: one per session and problem, naming the dropped items, the rules
they broke, and whether the store itself needs ``histcore doctor --fix``."""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import Any

from histcore.engine.backend import backend_module
from histcore.engine.vocabulary import PROBLEM_KINDS

__all__ = ["LOGGER", "log", "log_keys"]

LOGGER = logging.getLogger("histcore.openai_agents")

#: Rules a stored history can break by itself (the later ones are read from it).
_STORE_RULES = frozenset("abcd")


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


def log_keys(
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


def log(
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
