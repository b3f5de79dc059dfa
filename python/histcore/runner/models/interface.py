"""The ``Model`` protocol the runner talks to, and the response it gets back.

Items crossing this boundary are plain dicts in Responses-API input shape, so a model
adapter converts its provider's objects to dicts once, and the runner, sessions and
``RunState`` never see provider types.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Model", "ModelResponse", "ModelStreamEvent", "Usage"]


@dataclass(frozen=True)
class Usage:
    """Token accounting of one or more model calls."""

    requests: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True)
class ModelResponse:
    """One complete model answer: its output items, usage and provider response id."""

    output: list[dict[str, Any]]
    usage: Usage = field(default_factory=Usage)
    response_id: str | None = None


#: What ``Model.stream_response`` yields: raw provider events as dicts, then exactly
#: one ``ModelResponse`` as the last element.
ModelStreamEvent = dict[str, Any] | ModelResponse


@runtime_checkable
class Model(Protocol):
    """What the runner needs from a model.

    ``get_response`` returns the whole answer. ``stream_response`` is an async iterator
    that yields the provider's raw stream events as dicts (the runner forwards them to
    ``RunResultStreaming.stream_events()`` as ``raw_response_event``\\ s) and then, as
    its **last** element, the complete ``ModelResponse``; ending without one, or
    yielding anything after it, is a ``ModelBehaviorError``.

    ``input`` is a fresh list the model may keep, but it must not mutate the items in
    it: they belong to the run. Return new dicts in ``output``.
    ``tools`` are Responses-API function tool definitions
    (``{"type": "function", "name", "description", "parameters", "strict"}``).
    """

    async def get_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> ModelResponse: ...

    def stream_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> AsyncIterator[ModelStreamEvent]: ...
