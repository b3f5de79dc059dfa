"""Per-run settings (``RunConfig``), the model-input filter hook and the error-handler
types of ``Runner.run(..., error_handlers=...)``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from histcore.exceptions import MaxTurnsExceeded, UserError
from histcore.runner.models.interface import Model, ModelResponse
from histcore.sessions import SessionInputCallback, SessionSettings

if TYPE_CHECKING:
    from histcore.runner.agent import Agent

__all__ = [
    "CallModelData",
    "CallModelInputFilter",
    "ModelInputData",
    "RunConfig",
    "RunErrorData",
    "RunErrorHandler",
    "RunErrorHandlerInput",
    "RunErrorHandlerResult",
    "SessionInputCallback",
]


@dataclass(frozen=True)
class ModelInputData:
    """What is about to be sent to the model: a filter returns a (new) one."""

    input: list[dict[str, Any]]
    instructions: str | None


@dataclass(frozen=True)
class CallModelData:
    """The argument of ``RunConfig.call_model_input_filter``."""

    model_data: ModelInputData
    agent: Agent


#: Rewrites the model input of every turn. ``model_data.input`` is a new list the
#: filter may change, but the items in it belong to the run: return new dicts instead
#: of editing them in place.
CallModelInputFilter = Callable[[CallModelData], ModelInputData | Awaitable[ModelInputData]]


@dataclass(frozen=True)
class RunConfig:
    """Settings of one run.

    ``model`` overrides the agent's model. ``session_input_callback`` and
    ``session_settings`` go to ``prepare_input_with_session`` (used only with a
    session). ``call_model_input_filter`` runs before every model call, before the
    latest-value dedupe.
    """

    model: Model | str | None = None
    session_input_callback: SessionInputCallback | None = None
    session_settings: SessionSettings | None = None
    call_model_input_filter: CallModelInputFilter | None = None

    def __post_init__(self) -> None:
        if self.model is not None and not isinstance(self.model, (str, Model)):
            raise UserError(
                f"RunConfig.model must be a Model or a model name, not {type(self.model).__name__}"
            )
        for name in ("session_input_callback", "call_model_input_filter"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise UserError(f"RunConfig.{name} must be callable or None")


@dataclass(frozen=True)
class RunErrorData:
    """A snapshot of the run when an error handler is called."""

    input: str | list[dict[str, Any]]
    new_items: list[dict[str, Any]]
    raw_responses: list[ModelResponse]
    last_agent: Agent


@dataclass(frozen=True)
class RunErrorHandlerInput:
    """The argument of an error handler."""

    error: MaxTurnsExceeded
    run_data: RunErrorData


@dataclass(frozen=True)
class RunErrorHandlerResult:
    """What a handler returns to end the run with ``final_output``. With
    ``include_in_history`` an assistant message holding the output is added to the
    run's items (and to the session)."""

    final_output: Any
    include_in_history: bool = True


#: Returns a ``RunErrorHandlerResult``, a bare final output, or None to let the error
#: propagate; may be async.
RunErrorHandler = Callable[
    [RunErrorHandlerInput], RunErrorHandlerResult | Any | Awaitable[RunErrorHandlerResult | Any]
]

#: The kinds of error a handler can be registered for.
