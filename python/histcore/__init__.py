"""histcore: the conversation-history core of an agent runtime, with a Rust engine."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version
from typing import TYPE_CHECKING, Any

try:
    from histcore.engine.backend import BACKEND as BACKEND
except ImportError as _error:  # a bad HISTCORE_BACKEND, or HISTCORE_BACKEND=rust without it
    from histcore import _command_line

    if _command_line.is_command_line():
        _command_line.exit_with(_error)
    raise
from histcore import items
from histcore.exceptions import (
    HistcoreError,
    MaxTurnsExceeded,
    ModelBehaviorError,
    RunStateError,
    UserError,
)
from histcore.items import *  # noqa: F403  (the item API, listed in histcore.items.__all__)
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
from histcore.sessions import (
    MemorySession,
    SessionSettings,
    SQLiteSession,
    prepare_input_with_session,
)

if TYPE_CHECKING:
    from histcore.sessions.postgres import PostgresSession as PostgresSession

try:
    # One version source: Cargo.toml, through maturin, into the installed metadata.
    __version__: str = _distribution_version("histcore")
except PackageNotFoundError:  # the sources on sys.path without an installed distribution
    __version__ = "0+unknown"

# The item API's names are histcore.items' (added below). PostgresSession is
# importable by name but stays out of __all__, so that
# `from histcore import *` works without the postgres extra (psycopg).
__all__ = [
    "Agent",
    "CallModelData",
    "FunctionTool",
    "HistcoreError",
    "MaxTurnsExceeded",
    "MemorySession",
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
    "SQLiteSession",
    "SessionSettings",
    "StreamEvent",
    "ToolApprovalItem",
    "Usage",
    "UserError",
    "__version__",
    "function_tool",
    "prepare_input_with_session",
]
__all__ += items.__all__

if not TYPE_CHECKING:
    # Hidden from type checkers, which see PostgresSession through the import above and
    # so still report misspelt names instead of typing every attribute as Any.
    def __getattr__(name: str) -> Any:
        # PostgresSession needs the optional postgres extra (psycopg): imported on use.
        if name == "PostgresSession":
            from histcore.sessions.postgres import PostgresSession

            globals()["PostgresSession"] = PostgresSession
            return PostgresSession
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
