"""Models the runner can call: the ``Model`` protocol and the OpenAI Responses adapter
(``OpenAIResponsesModel``, needs the ``histcore[openai]`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from histcore.runner.models.interface import Model, ModelResponse, ModelStreamEvent, Usage

if TYPE_CHECKING:
    from histcore.runner.models.openai_responses import OpenAIResponsesModel

__all__ = ["Model", "ModelResponse", "ModelStreamEvent", "OpenAIResponsesModel", "Usage"]


def __getattr__(name: str) -> Any:
    # Imported on first use so histcore works without the optional openai package.
    if name == "OpenAIResponsesModel":
        from histcore.runner.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
