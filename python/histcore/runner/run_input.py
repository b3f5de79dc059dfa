"""What a run takes from its caller, checked: the error handlers, the model, the session,
and the run's own copy of its input items (``Runner``'s arguments; see ``run``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from histcore.engine.collector import collector_paused
from histcore.engine.items import MAX_DEPTH, deep_copy_items
from histcore.engine.wording import a_type_name
from histcore.exceptions import UserError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import Model
from histcore.runner.run_config import RunConfig, RunErrorHandler

__all__ = [
    "all_plain_dicts",
    "check_error_handlers",
    "first_too_deep",
    "looks_like_session",
    "own_items",
    "resolve_model",
    "too_deep_error",
]

_ERROR_HANDLER_KINDS = frozenset({"max_turns"})


def check_error_handlers(
    handlers: Mapping[str, RunErrorHandler] | None,
) -> Mapping[str, RunErrorHandler]:
    if handlers is None:
        return {}
    if not isinstance(handlers, Mapping):
        raise UserError(f"error_handlers must be a mapping, not {type(handlers).__name__}")
    for kind, handler in handlers.items():
        if kind not in _ERROR_HANDLER_KINDS:
            raise UserError(
                f"error_handlers: unknown kind {kind!r} (known: {sorted(_ERROR_HANDLER_KINDS)})"
            )
        if not callable(handler):
            raise UserError(f"error_handlers[{kind!r}] must be callable")
    return handlers


def resolve_model(agent: Agent, config: RunConfig) -> Model:
    model = config.model if config.model is not None else agent.model
    if model is None:
        raise UserError(
            f"agent {agent.name!r} has no model: pass Agent(model=...) or RunConfig(model=...)"
        )
    if isinstance(model, str):
        from histcore.runner.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(model)
    return model  # Agent and RunConfig checked it is a Model


def looks_like_session(value: object) -> bool:
    # Duck-typed: a runtime Protocol isinstance check costs more than a small turn.
    return all(
        callable(getattr(value, name, None))
        for name in ("get_items", "add_items", "pop_item", "clear_session")
    )


def all_plain_dicts(items: Sequence[Any]) -> bool:
    # C-level pass: the per-item Python loop would be runner overhead on big inputs.
    return set(map(type, items)) <= {dict}


def own_items(items: Sequence[Any], where: str) -> list[dict[str, Any]]:
    """The run's own copy of input items (dicts, or models read via ``model_dump``)."""
    dumped: Sequence[Any] = items
    if not all_plain_dicts(items):
        dumped = []
        for index, item in enumerate(items):
            if isinstance(item, dict):
                dumped.append(item)
            elif hasattr(item, "model_dump"):
                dumped.append(item.model_dump(exclude_unset=True))
            else:
                raise UserError(f"{where}[{index}] is {a_type_name(item)}, not an item dict")
    try:
        with collector_paused():  # a bulk copy of acyclic JSON trees
            copies: list[dict[str, Any]] = deep_copy_items(dumped)
    except ValueError:  # an item nested too deep (or holding itself)
        position = first_too_deep(dumped)
        if position is None:
            raise
        raise too_deep_error(where, position) from None
    return copies


def first_too_deep(items: Sequence[Any]) -> int | None:
    """The position of the first item the engine refuses to copy (nested deeper than
    ``MAX_DEPTH``, or holding itself), or None. Models are read via ``model_dump``.
    Only called once a copy of ``items`` failed."""
    for position, item in enumerate(items):
        dump = None if isinstance(item, dict) else getattr(item, "model_dump", None)
        try:
            deep_copy_items([dump(exclude_unset=True) if callable(dump) else item])
        except ValueError:
            return position
    return None


def too_deep_error(where: str, position: int) -> UserError:
    return UserError(
        f"{where}[{position}] is nested deeper than {MAX_DEPTH} levels, or holds itself: "
        f"an item nests at most {MAX_DEPTH} containers (dicts and lists, itself counted)"
    )
