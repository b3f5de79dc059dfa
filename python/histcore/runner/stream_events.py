"""Events yielded by ``RunResultStreaming.stream_events()``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from histcore.runner.tool import ToolApprovalItem

__all__ = ["RawResponsesStreamEvent", "RunItemEventName", "RunItemStreamEvent", "StreamEvent"]

RunItemEventName = Literal[
    "message_output_created",
    "reasoning_item_created",
    "tool_called",
    "tool_output",
    "tool_approval_requested",
    "item_created",
]


@dataclass(frozen=True)
class RawResponsesStreamEvent:
    """A raw event of the model's stream, passed through as the model yielded it."""

    data: dict[str, Any]
    type: Literal["raw_response_event"] = "raw_response_event"


@dataclass(frozen=True)
class RunItemStreamEvent:
    """An item the run produced: a model output item as its response completes, a
    tool output as the tool finishes, or an approval request when a call pauses the
    run. ``item_created`` covers output items with no more specific name (hosted tool
    calls and the like)."""

    name: RunItemEventName
    item: dict[str, Any] | ToolApprovalItem
    type: Literal["run_item_stream_event"] = "run_item_stream_event"


StreamEvent = RawResponsesStreamEvent | RunItemStreamEvent


def item_event_name(item: dict[str, Any]) -> RunItemEventName:
    """The event name of a produced item."""
    kind = item.get("type")
    if kind == "message" or (kind is None and item.get("role") is not None):
        return "message_output_created"
    if kind == "reasoning":
        return "reasoning_item_created"
    if kind == "function_call":
        return "tool_called"
    if kind == "function_call_output":
        return "tool_output"
    return "item_created"
