"""A scripted model for the OpenAI Agents SDK: deterministic runs without a network.

``SDKScriptedModel`` implements the SDK's ``Model`` interface (``Runner.run`` and
``Runner.run_streamed`` both work) and answers from the shape of its input: a turn ending
with a user message gets a reasoning item and one function call of ``tool_name`` per
``" and "``-separated part (``"Paris and Rome"``: two calls); a turn ending with a
function call output gets an assistant message naming how many input items the model
saw and the last call id.

Ids are counters, so two runs of one conversation give the same items; every
``placeholder_every``-th answer, if a message, has the SDK's ``FAKE_RESPONSES_ID``. With
``record`` (the default) ``inputs`` holds each call's input as JSON text, to compare what
two runs sent. Needs ``histcore[openai-agents]``; example: README, "The drop-in for the
OpenAI Agents SDK". The old name ``ScriptedModel`` warns DeprecationWarning.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from histcore.openai_agents._versions import INSTALL_HINT

try:
    from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
    from agents.model_settings import ModelSettings
    from agents.models.fake_id import FAKE_RESPONSES_ID
    from agents.models.interface import Model, ModelTracing
    from agents.usage import Usage
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseFunctionToolCall,
        ResponseOutputItem,
        ResponseOutputItemDoneEvent,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(INSTALL_HINT) from exc

__all__ = ["SDKScriptedModel"]


def _snapshot(value: str | list[TResponseInputItem]) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


class SDKScriptedModel(Model):
    """A ``Model`` that answers from the shape of its input (see the module docstring).

    ``responses`` counts the answers given; ``inputs`` holds each input as JSON text
    when ``record`` is true (off for timing: encoding a long history is costly).
    Item ids are numbered per model (``msg_1``, ``rs_1``, ``call_1_0``...), after
    ``id_prefix``: models that add to one session give each a prefix of its own, since
    the API refuses two items with one id.
    """

    def __init__(
        self,
        record: bool = True,
        *,
        tool_name: str = "lookup",
        argument: str = "city",
        default_text: str = "Paris",
        placeholder_every: int = 3,
        id_prefix: str = "",
    ) -> None:
        if placeholder_every < 0:
            raise ValueError("placeholder_every must be 0 (never) or positive")
        if type(id_prefix) is not str:
            raise TypeError(f"id_prefix must be a str, not {type(id_prefix).__name__}")
        self.id_prefix = id_prefix
        self.record = record
        self.tool_name = tool_name
        self.argument = argument
        self.default_text = default_text
        self.placeholder_every = placeholder_every
        self.responses = 0
        self.inputs: list[str] = []

    def output_for(self, input: str | list[TResponseInputItem]) -> list[ResponseOutputItem]:
        """The output items of the next answer to ``input`` (counts it as given)."""
        if self.record:
            self.inputs.append(_snapshot(input))
        self.responses += 1
        turn = self.responses
        ident = f"{self.id_prefix}{turn}"
        items: list[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else input
        last = items[-1] if items else {}
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            text = f"answer {turn}: saw {len(items)} items, last call {last.get('call_id')}"
            placeholder = self.placeholder_every and turn % self.placeholder_every == 0
            return [
                ResponseOutputMessage(
                    id=FAKE_RESPONSES_ID if placeholder else f"msg_{ident}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        content = last.get("content") if isinstance(last, dict) else None
        parts = str(content or self.default_text).split(" and ")
        output: list[ResponseOutputItem] = [
            ResponseReasoningItem(
                id=f"rs_{ident}",
                type="reasoning",
                summary=[Summary(type="summary_text", text=f"look up {len(parts)}")],
            )
        ]
        output += [
            ResponseFunctionToolCall(
                id=f"fc_{ident}_{index}",
                type="function_call",
                call_id=f"call_{ident}_{index}",
                name=self.tool_name,
                arguments=json.dumps({self.argument: part.strip()}),
                status="completed",
            )
            for index, part in enumerate(parts)
        ]
        return output

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        return ModelResponse(output=self.output_for(input), usage=Usage(), response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        output = self.output_for(input)
        for index, item in enumerate(output):
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                item=item,
                output_index=index,
                sequence_number=index,
            )
        response = Response(
            id=f"resp_{self.responses}",
            created_at=0,
            model="histcore-scripted",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=len(output)
        )


if TYPE_CHECKING:
    #: Deprecated: ``SDKScriptedModel``'s former name (a DeprecationWarning at run time).
    ScriptedModel = SDKScriptedModel
else:

    def __getattr__(name: str) -> Any:
        # The old name, looked up here on each use so that every use warns.
        if name == "ScriptedModel":
            warnings.warn(
                "histcore.openai_agents.testing.ScriptedModel is deprecated: use"
                " SDKScriptedModel (histcore.testing.ScriptedModel is the Runner's model)",
                DeprecationWarning,
                stacklevel=2,
            )
            return SDKScriptedModel
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
