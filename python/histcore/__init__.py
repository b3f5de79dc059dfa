"""histcore: the conversation-history core of an agent runtime, with a Rust engine."""

from __future__ import annotations

from ._backend import BACKEND
from .agent import Agent
from .exceptions import (
    HistcoreError,
    MaxTurnsExceeded,
    ModelBehaviorError,
    RunStateError,
    UserError,
)
from .items import (
    MAX_DEPTH,
    canonical_json,
    classify_callback_output,
    content_key,
    content_keys,
    dedupe_key,
    dedupe_keys,
    deduplicate_input_items,
    deduplicate_input_items_preferring_latest,
    deep_copy_items,
    drop_orphan_function_calls,
    plain_json_copy,
)
from .models import Model, ModelResponse, Usage
from .result import RunResult, RunResultStreaming
from .run import Runner
from .run_config import (
    CallModelData,
    ModelInputData,
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
)
from .run_state import RunState
from .stream_events import RawResponsesStreamEvent, RunItemStreamEvent, StreamEvent
from .tool import FunctionTool, ToolApprovalItem, function_tool

__version__ = "0.1.0"

__all__ = [
    "BACKEND",
    "MAX_DEPTH",
    "Agent",
    "CallModelData",
    "FunctionTool",
    "HistcoreError",
    "MaxTurnsExceeded",
    "Model",
    "ModelBehaviorError",
    "ModelInputData",
    "ModelResponse",
    "RawResponsesStreamEvent",
    "RunConfig",
    "RunErrorHandlerInput",
    "RunErrorHandlerResult",
    "RunItemStreamEvent",
    "RunResult",
    "RunResultStreaming",
    "RunState",
    "RunStateError",
    "Runner",
    "StreamEvent",
    "ToolApprovalItem",
    "Usage",
    "UserError",
    "__version__",
    "canonical_json",
    "classify_callback_output",
    "content_key",
    "content_keys",
    "dedupe_key",
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "deep_copy_items",
    "drop_orphan_function_calls",
    "function_tool",
    "plain_json_copy",
]
