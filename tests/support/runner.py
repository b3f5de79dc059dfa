"""Running an agent both ways in the runner tests.

The ``mode`` fixture (conftest) parametrises a test over "run" and "streamed"; ``drive``
runs the agent accordingly. Kept out of ``_strategies``: the engine tests import that
module, and it imports nothing of histcore, so that a broken Rust extension fails their
tests rather than their collection.
"""

from __future__ import annotations

from typing import Any

from histcore.runner.agent import Agent
from histcore.runner.result import RunResult, RunResultStreaming
from histcore.runner.run import Runner

Result = RunResult | RunResultStreaming


async def drive(mode: str, agent: Agent, input: Any, **kwargs: Any) -> Result:
    """Run with ``Runner.run`` (``mode`` "run") or ``Runner.run_streamed`` (consuming
    every event; the streamed run must then be complete)."""
    if mode == "run":
        return await Runner.run(agent, input, **kwargs)
    result = Runner.run_streamed(agent, input, **kwargs)
    async for _ in result.stream_events():
        pass
    assert result.is_complete
    return result
