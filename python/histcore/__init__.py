"""histcore: the conversation-history core of an agent runtime, with a Rust engine."""

from __future__ import annotations

from histcore.engine.backend import BACKEND
from histcore.engine.items import (
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
from histcore.exceptions import (
    HistcoreError,
    MaxTurnsExceeded,
    ModelBehaviorError,
    RunStateError,
    UserError,
)
from histcore.runner.agent import Agent
from histcore.runner.models import Model, ModelResponse, Usage
from histcore.runner.result import RunResult, RunResultStreaming
from histcore.runner.run import Runner
from histcore.runner.run_config import (
    CallModelData,
    ModelInputData,
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
)
from histcore.runner.run_state import RunState
from histcore.runner.stream_events import RawResponsesStreamEvent, RunItemStreamEvent, StreamEvent
from histcore.runner.tool import FunctionTool, ToolApprovalItem, function_tool

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
