"""One SDK conversation turn, as every ``histcore bench --openai-agents`` timing runs
it: the agent (one tool, a session callback that keeps the whole history), a turn on a
SQLite file or through any session, and the switches around a timed turn (the guard's
warnings off, the model-input dedupe timed)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner, SQLiteSession
from agents import function_tool as sdk_function_tool
from agents.models.interface import Model

from histcore.openai_agents.testing import SDKScriptedModel

__all__ = [
    "DEDUPE",
    "RUN_LOOP",
    "SESSION_ID",
    "CorrectnessError",
    "SDKScriptedModel",
    "conversation_agent",
    "keep_history",
    "lookup_tool",
    "quiet_guard",
    "run_config",
    "run_turn",
    "session_turn",
    "timed_dedupes",
]

SESSION_ID = "bench"


class CorrectnessError(Exception):
    """The accelerated SDK did something the plain SDK did not."""


# --- the conversation --------------------------------------------------------------


def _lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"sunny in {city}"


def lookup_tool() -> FunctionTool:
    return sdk_function_tool(_lookup, name_override="lookup")


def conversation_agent(model: Model) -> Agent[Any]:
    return Agent(
        name="assistant", instructions="Answer briefly.", model=model, tools=[lookup_tool()]
    )


def keep_history(history: list[Any], new_items: list[Any]) -> list[Any]:
    """A session_input_callback keeping the whole history, the new input last."""
    return history + new_items


def run_config(callback: Callable[[list[Any], list[Any]], list[Any]] = keep_history) -> RunConfig:
    return RunConfig(session_input_callback=callback, tracing_disabled=True)


async def run_turn(
    path: str,
    message: str,
    model: SDKScriptedModel | None = None,
    session_id: str = SESSION_ID,
    session: SQLiteSession | None = None,
) -> str:
    """One user turn on the store at ``path`` (through ``session`` when given, which
    stays open; else a session object of its own); returns the final output."""
    own = session is None
    if session is None:
        session = SQLiteSession(session_id, path)
    try:
        result = await Runner.run(
            conversation_agent(model or SDKScriptedModel(record=False)),
            message,
            session=session,
            run_config=run_config(),
        )
    finally:
        if own:
            session.close()
    return str(result.final_output)


async def session_turn(session: Any, message: str, model: SDKScriptedModel) -> str:
    """One user turn through ``session`` (of any store kind); returns the final output."""
    result = await Runner.run(
        conversation_agent(model), message, session=session, run_config=run_config()
    )
    return str(result.final_output)


@contextmanager
def quiet_guard() -> Iterator[None]:
    """The guard's warnings off (on a damaged store a timed turn would log every round)."""
    logger = logging.getLogger("histcore.openai_agents")
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


RUN_LOOP = "agents.run_internal.run_loop"
DEDUPE = "deduplicate_input_items_preferring_latest"


@contextmanager
def timed_dedupes(spent: list[float]) -> Iterator[None]:
    """The run loop's model-input dedupe (its binding, called only by the two functions
    that build a model call's input) timed into ``spent[0]``."""
    module = sys.modules[RUN_LOOP]
    bound = getattr(module, DEDUPE)

    def timed(items: Any) -> Any:
        start = time.perf_counter()
        try:
            return bound(items)
        finally:
            spent[0] += time.perf_counter() - start

    setattr(module, DEDUPE, timed)
    try:
        yield
    finally:
        setattr(module, DEDUPE, bound)
