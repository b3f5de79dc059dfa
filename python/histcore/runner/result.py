"""Results of ``Runner.run`` (``RunResult``) and ``Runner.run_streamed``
(``RunResultStreaming``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from histcore.exceptions import UserError
from histcore.runner.models.interface import ModelResponse, Usage
from histcore.runner.run_state import RunState
from histcore.runner.stream_events import StreamEvent
from histcore.runner.tool import ToolApprovalItem

if TYPE_CHECKING:
    from histcore.runner.agent import Agent

__all__ = ["RunResult", "RunResultStreaming"]


@dataclass
class RunRecord:
    """What a run has produced so far; the run owns every list in it.

    ``conversation`` is the original input's items followed by ``new_items``: the list
    each turn's model input is built from. The original input is its first
    ``original_length`` items (or ``original_text`` when it was a string), sliced out
    only when asked for, so a run over a long history keeps one list of it, not two.
    """

    agent: Agent
    max_turns: int
    new_items: list[dict[str, Any]] = field(default_factory=list)
    raw_responses: list[ModelResponse] = field(default_factory=list)
    current_turn: int = 0
    pending_turn_start: int = 0
    interruptions: list[ToolApprovalItem] = field(default_factory=list)
    final_output: Any = None
    conversation: list[dict[str, Any]] = field(default_factory=list)
    original_length: int = 0
    original_text: str | None = None

    def set_original_input(self, original: str | list[dict[str, Any]]) -> None:
        """Start the conversation with ``original``; a list is adopted, not copied (it
        must be the run's own)."""
        if isinstance(original, str):
            self.original_text, self.conversation = original, [user_item(original)]
        else:
            self.original_text, self.conversation = None, original
        self.original_length = len(self.conversation)
        self.conversation.extend(self.new_items)

    @property
    def original_input(self) -> str | list[dict[str, Any]]:
        if self.original_text is not None:
            return self.original_text
        return self.conversation[: self.original_length]

    def append(self, item: dict[str, Any]) -> None:
        self.new_items.append(item)
        self.conversation.append(item)


def user_item(text: str) -> dict[str, Any]:
    """A string input as an item: one user message."""
    return {"role": "user", "content": text}


class _ResultBase:
    """Fields shared by both result kinds, read from the run's record."""

    _record: RunRecord

    @property
    def input(self) -> str | list[dict[str, Any]]:
        """The run's original input (a new list each time). With a session it is the
        prepared input: the session history plus the new input, as the model first
        saw them."""
        return self._record.original_input

    @property
    def new_items(self) -> list[dict[str, Any]]:
        """Items the run produced (model output items and tool outputs), in order. A
        run resumed from a state continues that run: its items come first."""
        return self._record.new_items

    @property
    def raw_responses(self) -> list[ModelResponse]:
        """Every model response of the run (for a resumed run, the state's first)."""
        return self._record.raw_responses

    @property
    def final_output(self) -> Any:
        """The final answer's text (or an error handler's output); None while the run
        is paused on ``interruptions`` or has not finished."""
        return self._record.final_output

    @property
    def interruptions(self) -> list[ToolApprovalItem]:
        """Tool calls waiting for approval; resume with ``to_state()``."""
        return self._record.interruptions

    @property
    def last_agent(self) -> Agent:
        return self._record.agent

    @property
    def current_turn(self) -> int:
        return self._record.current_turn

    @property
    def usage(self) -> Usage:
        """Token usage summed over ``raw_responses``."""
        return reduce(lambda a, b: a + b, (r.usage for r in self.raw_responses), Usage(0))

    def to_input_list(self) -> list[dict[str, Any]]:
        """The original input plus the items this run produced: the next run's input
        when no session keeps the history. A new list of the result's own items."""
        return list(self._record.conversation)

    def to_state(self) -> RunState:
        """A checkpoint of the run, sharing no list or item with this result."""
        record = self._record
        return RunState._capture(
            agent_name=record.agent.name,
            original_input=record.original_input,
            generated_items=record.new_items,
            model_responses=record.raw_responses,
            current_turn=record.current_turn,
            max_turns=record.max_turns,
            pending_turn_start=record.pending_turn_start,
            interruptions=record.interruptions,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(agent={self.last_agent.name!r}, "
            f"items={len(self.new_items)}, responses={len(self.raw_responses)}, "
            f"interruptions={len(self.interruptions)}, final_output={self.final_output!r})"
        )


class RunResult(_ResultBase):
    """The outcome of ``Runner.run``: finished with a ``final_output`` or paused on
    ``interruptions``."""

    def __init__(self, record: RunRecord) -> None:
        self._record = record


_DONE: Any = object()


class RunResultStreaming(_ResultBase):
    """A run in progress. ``stream_events()`` yields its events as they happen; the
    same fields as ``RunResult`` fill in as the run proceeds and are final once
    ``is_complete`` is true.

    A run that failed raises its error from ``stream_events()`` after the events
    before the failure. ``cancel()``, cancelling the task that consumes the events, or
    leaving ``stream_events()`` early all cancel the run; the session then holds whole
    turns only (see ``histcore.runner.run`` for when turns are written). A cancelled run has
    no checkpoint: resume from the state it started from.
    """

    def __init__(self, record: RunRecord) -> None:
        self._record = record
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._cancelled = False
        self.is_complete = False

    def _emit(self, event: StreamEvent) -> None:
        self._queue.put_nowait(event)

    def _start(self, run: Any) -> None:
        self._task = asyncio.get_running_loop().create_task(self._drive(run))

    async def _drive(self, run: Any) -> None:
        try:
            await run
            self.is_complete = True
        except asyncio.CancelledError:
            self._cancelled = True
            raise
        except BaseException as exc:  # handed to the consumer by stream_events()
            self._error = exc
        finally:
            self._queue.put_nowait(_DONE)

    def cancel(self) -> None:
        """Stop the run. Turns already written to the session stay; the current one
        is dropped whole."""
        self._cancelled = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def stream_events(self) -> AsyncIterator[StreamEvent]:
        """Events as the run produces them, until it ends. Calling it again after the
        end returns at once (use that to wait for a cancelled run to wind down)."""
        try:
            while True:
                event = await self._queue.get()
                if event is _DONE:
                    self._queue.put_nowait(_DONE)  # later calls end at once too
                    break
                yield event
        finally:
            if not self.is_complete and self._error is None:
                self.cancel()
        if self._error is not None:
            raise self._error

    def to_state(self) -> RunState:
        if not self.is_complete:
            state = "was cancelled" if self._cancelled else "has not finished"
            raise UserError(f"to_state(): the streamed run {state}; no checkpoint to take")
        return super().to_state()
