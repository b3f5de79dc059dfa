"""SDK conversations in threads while other threads install and uninstall the drop-in.

A call that started under one installation must finish with helpers that agree: the
SDK's ``prepare_input_with_session`` looks its helpers up one at a time, so helpers
bound and unbound under it used to meet (histcore's reference map handed to the SDK's
consumer: ``AttributeError: 'ReferenceMap' object has no attribute 'get'``). Every
conversation must also send the model what the plain SDK sends.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.run_internal.session_persistence as sdk_session
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool

import histcore.openai_agents as accelerator
from histcore.openai_agents.testing import SDKScriptedModel

CONVERSATIONS_PER_THREAD = 60
PREPARE_SECONDS = 10.0
STORED_TURNS = 50  # 200 items: the preparation spans many thread switches


@function_tool
def lookup(city: str) -> str:
    return f"sunny in {city}"


def history(n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for turn in range(n):
        items += [
            {"role": "user", "content": f"q{turn}"},
            {"type": "function_call", "call_id": f"c{turn}", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": "sunny"},
            {"role": "assistant", "content": f"a{turn}"},
        ]
    return items


def reshape(old: list[Any], new: list[Any]) -> list[Any]:
    """A session callback that repeats an old item: the reference-map path."""
    return [*old, old[0], *new]


def conversation(streamed: bool) -> list[str]:
    """One turn on a fresh in-memory session: the model inputs."""
    model = SDKScriptedModel(placeholder_every=0)

    async def main() -> None:
        session = SQLiteSession("t")
        await session.add_items(history(STORED_TURNS))
        agent = Agent(name="a", model=model, tools=[lookup])
        config = RunConfig(session_input_callback=reshape)
        if streamed:
            result = Runner.run_streamed(agent, "Paris", session=session, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, "Paris", session=session, run_config=config)
        session.close()

    asyncio.run(main())
    return model.inputs


def while_toggling(workers: list[Callable[[], None]], switch_interval: float | None = None) -> None:
    """Run ``workers`` in threads of their own while two more threads install and
    uninstall the drop-in in a loop; return once the workers are done, uninstalled."""
    running = threading.Event()
    running.set()

    def toggle() -> None:
        while running.is_set():
            accelerator.install()
            accelerator.uninstall()

    working = [threading.Thread(target=worker) for worker in workers]
    togglers = [threading.Thread(target=toggle) for _ in range(2)]
    interval = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        for thread in [*togglers, *working]:
            thread.start()
        for thread in working:
            thread.join()
    finally:
        running.clear()
        for thread in togglers:
            thread.join()
        accelerator.uninstall()
        sys.setswitchinterval(interval)


def test_toggling_install_while_conversations_run() -> None:
    accelerator.uninstall()
    expected = {streamed: conversation(streamed) for streamed in (False, True)}
    errors: list[BaseException] = []
    differing: list[bool] = []

    def talk(streamed: bool) -> None:
        for _ in range(CONVERSATIONS_PER_THREAD):
            try:
                if conversation(streamed) != expected[streamed]:
                    differing.append(streamed)
            except BaseException as exc:
                errors.append(exc)

    # Switch threads often, so installs land inside a preparation.
    while_toggling([lambda: talk(False), lambda: talk(True)], switch_interval=1e-5)
    assert not errors, f"{len(errors)} errors, the first: {errors[0]!r}"
    assert differing == []


def test_toggling_install_while_sessions_are_prepared() -> None:
    """The SDK's own preparation over 2,000 stored items (a long window between its
    helper lookups), in two threads for a few seconds, while two others toggle: every
    result the plain one. Before helpers were pinned per call, about one call in
    fifteen met a half-swapped set here."""
    accelerator.uninstall()
    stored = history(500)

    async def prepare(session: SQLiteSession) -> Any:
        return await sdk_session.prepare_input_with_session("Paris", session, reshape)

    async def fresh() -> SQLiteSession:
        session = SQLiteSession("p")
        await session.add_items(stored)
        return session

    async def reference() -> Any:
        session = await fresh()
        try:
            return await prepare(session)
        finally:
            session.close()

    expected = asyncio.run(reference())
    errors: list[BaseException] = []
    differing: list[int] = []
    calls = [0]

    def prepare_repeatedly() -> None:
        async def main() -> None:
            session = await fresh()
            deadline = time.monotonic() + PREPARE_SECONDS
            done = 0
            # At least five calls per thread, however slow the engine (the pure twin on
            # a loaded machine made three in all before the deadline).
            while time.monotonic() < deadline or done < 5:
                done += 1
                try:
                    if await prepare(session) != expected:
                        differing.append(calls[0])
                except BaseException as exc:
                    errors.append(exc)
                calls[0] += 1
            session.close()

        asyncio.run(main())

    while_toggling([prepare_repeatedly, prepare_repeatedly])
    assert errors == [], f"{len(errors)} of {calls[0]} calls failed, the first: {errors[0]!r}"
    assert differing == []
