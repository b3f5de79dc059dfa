"""Test helpers: a scripted ``Model`` (no network, no API key) and item builders.

Example::

    model = ScriptedModel()
    model.add_multiple_turn_outputs([
        [function_call("get_weather", {"city": "Oslo"})],
        [text_message("It is sunny in Oslo.")],
    ])
    result = await Runner.run(Agent("a", model=model, tools=[get_weather]), "Weather?")
    model.calls[1].input  # what the model saw on its second call
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from histcore.engine import exact_json
from histcore.engine.items import deep_copy_items
from histcore.exceptions import HistcoreError, UserError
from histcore.runner.models.interface import ModelResponse, ModelStreamEvent, Usage
from histcore.runner.tool import encode_arguments

__all__ = [
    "ModelCall",
    "ScriptExhausted",
    "ScriptedModel",
    "function_call",
    "function_call_output",
    "text_message",
    "user_message",
]

_call_ids = itertools.count(1)


class ScriptExhausted(HistcoreError):
    """The scripted model was called more often than outputs were queued."""


@dataclass(frozen=True)
class ModelCall:
    """One call the scripted model received."""

    input: list[dict[str, Any]]
    instructions: str | None
    tools: list[dict[str, Any]]


class ScriptedModel:
    """A ``Model`` of histcore's runner that returns queued outputs, one per call, and
    records every call. An OpenAI Agents SDK ``Agent`` refuses it (it is not the SDK's
    ``Model``): with the SDK, use ``histcore.openai_agents.testing.ScriptedModel``.

    Queue a turn's output items with ``set_next_output(items)`` or many turns with
    ``add_multiple_turn_outputs([...])``; queue an exception instance to have that
    call raise it. Each call returns fresh copies of the queued items, so one script
    can serve several runs. A call with nothing queued raises ``ScriptExhausted``.
    ``stream_response`` streams the same outputs as Responses-style events.
    """

    def __init__(self, outputs: Sequence[Sequence[dict[str, Any]] | BaseException] = ()) -> None:
        self._queue: deque[list[dict[str, Any]] | BaseException] = deque()
        self.calls: list[ModelCall] = []
        self.add_multiple_turn_outputs(outputs)

    def set_next_output(self, output: Sequence[dict[str, Any]] | BaseException) -> None:
        """Queue the output of one model call (or an exception it raises)."""
        if isinstance(output, BaseException):
            self._queue.append(output)
            return
        if isinstance(output, (str, dict)) or not isinstance(output, Sequence):
            raise UserError(
                f"set_next_output() takes a list of items or an exception, "
                f"not {type(output).__name__}"
            )
        for index, item in enumerate(output):
            if not isinstance(item, dict):
                raise UserError(f"set_next_output(): item {index} is not a dict")
        self._queue.append(list(output))

    def add_multiple_turn_outputs(
        self, outputs: Sequence[Sequence[dict[str, Any]] | BaseException]
    ) -> None:
        """Queue the outputs of several calls, in order."""
        for output in outputs:
            self.set_next_output(output)

    @property
    def remaining(self) -> int:
        """How many queued outputs are left."""
        return len(self._queue)

    @property
    def last_input(self) -> list[dict[str, Any]]:
        """The input of the latest call."""
        if not self.calls:
            raise UserError("the scripted model has not been called yet")
        return self.calls[-1].input

    def _next(
        self, input: list[dict[str, Any]], instructions: str | None, tools: list[dict[str, Any]]
    ) -> ModelResponse:
        # The runner hands every call a fresh list (see Model): kept as is, not copied.
        self.calls.append(ModelCall(input, instructions, list(tools)))
        if not self._queue:
            raise ScriptExhausted(
                f"ScriptedModel call {len(self.calls)} has no queued output "
                "(queue one with set_next_output)"
            )
        output = self._queue.popleft()
        if isinstance(output, BaseException):
            raise output
        tokens = len(exact_json.dumps(output)) // 4
        return ModelResponse(
            output=deep_copy_items(output),
            usage=Usage(
                requests=1,
                input_tokens=len(input),
                output_tokens=tokens,
                total_tokens=len(input) + tokens,
            ),
            response_id=f"resp_scripted_{len(self.calls)}",
        )

    async def get_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> ModelResponse:
        return self._next(input, instructions, tools)

    async def stream_response(
        self,
        input: list[dict[str, Any]],
        *,
        instructions: str | None,
        tools: list[dict[str, Any]],
    ) -> AsyncIterator[ModelStreamEvent]:
        response = self._next(input, instructions, tools)
        sequence = itertools.count()
        created: dict[str, Any] = {
            "id": response.response_id,
            "status": "in_progress",
            "output": [],
        }
        yield {"type": "response.created", "sequence_number": next(sequence), "response": created}
        for index, item in enumerate(response.output):
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(sequence),
                "output_index": index,
                "item": item,
            }
            for part in _text_parts(item):
                yield {
                    "type": "response.output_text.delta",
                    "sequence_number": next(sequence),
                    "output_index": index,
                    "delta": part,
                }
            yield {
                "type": "response.output_item.done",
                "sequence_number": next(sequence),
                "output_index": index,
                "item": item,
            }
        yield {
            "type": "response.completed",
            "sequence_number": next(sequence),
            "response": {
                "id": response.response_id,
                "status": "completed",
                "output": response.output,
            },
        }
        yield response


def _text_parts(item: Any) -> list[str]:
    if not isinstance(item, dict) or item.get("type") != "message":
        return []
    content = item.get("content")
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    ]


# --- item builders -----------------------------------------------------------------------


def text_message(text: str) -> dict[str, Any]:
    """An assistant message, as a model outputs it."""
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def user_message(text: str) -> dict[str, Any]:
    """A user message input item."""
    return {"role": "user", "content": text}


def function_call(
    name: str, arguments: str | dict[str, Any] = "{}", call_id: str | None = None
) -> dict[str, Any]:
    """A function call output item; ``arguments`` may be a dict (sent as JSON, exactly:
    a value JSON cannot hold is a TypeError naming it) and ``call_id`` defaults to a new
    unique id."""
    if not isinstance(arguments, str):
        arguments = encode_arguments(arguments)
    return {
        "type": "function_call",
        "call_id": call_id if call_id is not None else f"call_{next(_call_ids)}",
        "name": name,
        "arguments": arguments,
    }


def function_call_output(call_id: str, output: str) -> dict[str, Any]:
    """The output item of a function call."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}
