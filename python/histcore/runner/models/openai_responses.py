"""A ``Model`` over the OpenAI Responses API, using the official ``openai`` client
(install with ``pip install 'histcore[openai]'``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from histcore.exceptions import ModelBehaviorError
from histcore.runner.models.interface import ModelResponse, ModelStreamEvent, Usage

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIResponsesModel"]

# Stream events that end a response without a usable answer.
_FAILED_EVENTS = frozenset({"response.failed", "response.incomplete", "error"})


class OpenAIResponsesModel:
    """Calls ``client.responses.create`` with the run's input items, instructions and
    tools; ``settings`` are extra keyword arguments of every call (``temperature``,
    ``reasoning``, ``store``, ...). Without a client, ``openai.AsyncOpenAI()`` is
    created on first use (it reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``).
    """

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "OpenAIResponsesModel needs the openai package: pip install 'histcore[openai]'"
            ) from exc
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model name, not {model!r}")
        self.model = model
        self._client = client
        self.settings: dict[str, Any] = dict(settings or {})

    @property
    def client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI()
        return self._client

    def _arguments(
        self, input: list[dict[str, Any]], instructions: str | None, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        arguments: dict[str, Any] = {**self.settings, "model": self.model, "input": input}
        if instructions is not None:
            arguments["instructions"] = instructions
        if tools:
            arguments["tools"] = tools
        return arguments

    async def get_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> ModelResponse:
        response = await self.client.responses.create(
            **self._arguments(input, instructions, tools), stream=False
        )
        return _to_model_response(response)

    async def stream_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> AsyncIterator[ModelStreamEvent]:
        stream = await self.client.responses.create(
            **self._arguments(input, instructions, tools), stream=True
        )
        final: ModelResponse | None = None
        try:
            async for event in stream:
                payload: Any = event  # the union of stream event models
                data: dict[str, Any] = payload.model_dump(mode="json", exclude_unset=True)
                yield data
                kind = data.get("type")
                if kind == "response.completed":
                    final = _to_model_response(payload.response)
                elif kind in _FAILED_EVENTS:
                    raise ModelBehaviorError(
                        f"the Responses stream ended with {kind}: {_reason(data)}"
                    )
        finally:
            await stream.close()
        if final is None:
            raise ModelBehaviorError("the Responses stream ended without response.completed")
        yield final


def _to_model_response(response: Any) -> ModelResponse:
    output = [item.model_dump(mode="json", exclude_unset=True) for item in response.output]
    usage = response.usage
    return ModelResponse(
        output=output,
        usage=Usage(
            requests=1,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            total_tokens=usage.total_tokens if usage else 0,
        ),
        response_id=response.id,
    )


def _reason(data: dict[str, Any]) -> str:
    response = data.get("response") or {}
    error = data.get("message") or (response.get("error") or {}).get("message")
    details = response.get("incomplete_details") or {}
    return str(error or details.get("reason") or "no reason given")
