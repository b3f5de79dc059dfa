"""``Runner``: the agent loop. It owns the order of a turn's steps so the history
contracts of docs/design.md hold end to end:

1. prepare the input (a fresh run's first turn: session history + new input through
   ``session_input_callback``);
2. apply ``call_model_input_filter``, the latest-value dedupe, then ``repair_input``;
3. call the model and record its output items;
4. run the function tools it called, concurrently (a call needing approval pauses);
5. write the turn to the session in one piece; stop on a final text answer.

Rules: session writes keep whole turns only (a paused turn is held back until the
resume's next turn is written with it), a write that has started completes even if the
run is cancelled, and a run owns every list it touches (its input, or the resumed state,
copied once; the state itself is never touched). Details: docs/design.md, "Runner".
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from histcore._cancellation import finish_despite_cancellation, gather_all
from histcore.engine.items import (
    deduplicate_input_items_preferring_latest,
    repair_input,
)
from histcore.engine.pairing import pair_key, tool_role
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE
from histcore.engine.wording import a_type_name, with_article
from histcore.exceptions import MaxTurnsExceeded, ModelBehaviorError, UserError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import ModelResponse
from histcore.runner.result import RunRecord, RunResult, RunResultStreaming
from histcore.runner.run_config import (
    CallModelData,
    ModelInputData,
    RunConfig,
    RunErrorData,
    RunErrorHandler,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
)
from histcore.runner.run_input import (
    all_plain_dicts,
    check_error_handlers,
    first_too_deep,
    looks_like_session,
    own_items,
    resolve_model,
    too_deep_error,
)
from histcore.runner.run_state import ApprovalDecision, RunState
from histcore.runner.stream_events import (
    RawResponsesStreamEvent,
    RunItemStreamEvent,
    StreamEvent,
    item_event_name,
)
from histcore.runner.testing import function_call_output, text_message
from histcore.runner.tool import FunctionTool, ToolApprovalItem, tool_output_text
from histcore.sessions import Session, prepare_input_with_session, save_turn_to_session

__all__ = ["DEFAULT_MAX_TURNS", "Runner"]

#: ``max_turns`` of a fresh run when none is given (a resumed run keeps its state's).
DEFAULT_MAX_TURNS = 10


def rejection_text(tool_name: str) -> str:
    """The output a rejected call gets when ``reject()`` was given no message."""
    return f"The call to tool {tool_name!r} was not approved by the user."


class Runner:
    """Runs an agent from an input (a string or a list of items) or from a
    ``RunState`` checkpoint."""

    @classmethod
    async def run(
        cls,
        agent: Agent,
        input: str | list[Any] | RunState,
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int | None = None,
        error_handlers: Mapping[str, RunErrorHandler] | None = None,
    ) -> RunResult:
        """Run until a final answer, a pause for approvals, or an error.

        ``max_turns`` defaults to 10 for a fresh run and to the state's value when
        resuming. ``error_handlers={"max_turns": handler}`` may end a run that
        reached ``max_turns`` with a final output instead of ``MaxTurnsExceeded``.
        """
        loop = _RunLoop(agent, input, session, run_config, max_turns, error_handlers)
        return RunResult(await loop.execute())

    @classmethod
    def run_sync(
        cls,
        agent: Agent,
        input: str | list[Any] | RunState,
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int | None = None,
        error_handlers: Mapping[str, RunErrorHandler] | None = None,
    ) -> RunResult:
        """``run`` for code without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                cls.run(
                    agent,
                    input,
                    session=session,
                    run_config=run_config,
                    max_turns=max_turns,
                    error_handlers=error_handlers,
                )
            )
        raise UserError("Runner.run_sync() cannot be used inside an event loop: await Runner.run()")

    @classmethod
    def run_streamed(
        cls,
        agent: Agent,
        input: str | list[Any] | RunState,
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int | None = None,
        error_handlers: Mapping[str, RunErrorHandler] | None = None,
    ) -> RunResultStreaming:
        """Start the run in a task and return at once; consume
        ``result.stream_events()``. Must be called with an event loop running."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UserError("Runner.run_streamed() needs a running event loop") from None
        # Arguments are checked and a state is copied now, so later changes the caller
        # makes to the state (approve/reject) cannot leak into this run.
        loop = _RunLoop(agent, input, session, run_config, max_turns, error_handlers)
        result = RunResultStreaming(loop.record)
        loop.sink = result._emit
        result._start(loop.execute())
        return result


class _RunLoop:
    """One run: its record (the lists it owns) and the steps of its turns."""

    def __init__(
        self,
        agent: Agent,
        input: str | list[Any] | RunState,
        session: Session | None,
        run_config: RunConfig | None,
        max_turns: int | None,
        error_handlers: Mapping[str, RunErrorHandler] | None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise UserError(f"agent must be an Agent, not {type(agent).__name__}")
        if run_config is None:
            run_config = RunConfig()
        elif not isinstance(run_config, RunConfig):
            raise UserError(f"run_config must be a RunConfig, not {type(run_config).__name__}")
        if session is not None and not looks_like_session(session):
            raise UserError(
                f"session must be a Session (get_items, add_items, ...), "
                f"not {type(session).__name__}"
            )
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
        ):
            raise UserError(f"max_turns must be a positive int, not {max_turns!r}")
        self.agent = agent
        self.config = run_config
        self.session = session
        self.handlers = check_error_handlers(error_handlers)
        self.model = resolve_model(agent, run_config)
        self.model_tools = [tool.to_model_tool() for tool in agent.tools]
        self.sink: Callable[[StreamEvent], None] | None = None
        self.streaming = False
        # What the session has not stored yet: the new input (fresh runs) and the
        # run's items from ``unsaved_from`` on.
        self.unsaved_input: list[Any] = []
        self.unsaved_from = 0
        self.pending: list[ToolApprovalItem] = []
        self.approvals: dict[str, ApprovalDecision] = {}
        self.fresh_input: str | list[Any] | None = None

        if isinstance(input, RunState):
            if input.agent_name != agent.name:
                raise UserError(
                    f"the RunState belongs to agent {input.agent_name!r}, not {agent.name!r}"
                )
            point = input._resume_point()
            for item in point.interruptions:
                if agent.get_tool(item.name) is None:
                    raise UserError(
                        f"the RunState has a pending call to tool {item.name!r}, "
                        f"which agent {agent.name!r} does not have"
                    )
            self.record = RunRecord(
                agent=agent,
                max_turns=max_turns if max_turns is not None else point.max_turns,
                new_items=point.generated_items,
                raw_responses=point.model_responses,
                current_turn=point.current_turn,
                pending_turn_start=point.pending_turn_start,
            )
            self.record.set_original_input(point.original_input)
            self.pending = point.interruptions
            self.approvals = point.approvals
            self.unsaved_from = point.pending_turn_start
        else:
            fresh: str | list[Any]
            if isinstance(input, str):
                fresh = input
            elif isinstance(input, list):
                # With a session, prepare_input_with_session makes the copies.
                fresh = list(input) if session is not None else own_items(input, "input")
            else:
                raise UserError(
                    f"input must be a str, a list of items or a RunState, "
                    f"not {type(input).__name__}"
                )
            self.fresh_input = fresh
            self.record = RunRecord(
                agent=agent, max_turns=max_turns if max_turns is not None else DEFAULT_MAX_TURNS
            )
            # With a session this is a placeholder until the prepared input replaces it.
            self.record.set_original_input(fresh)

    # --- the loop ------------------------------------------------------------------

    async def execute(self) -> RunRecord:
        self.streaming = self.sink is not None
        record = self.record
        if self.fresh_input is not None and self.session is not None:
            await self._prepare_input(self.fresh_input)
        if self.pending and await self._finish_paused_turn():
            return record
        while True:
            if record.current_turn >= record.max_turns:
                return await self._max_turns_reached()
            record.current_turn += 1
            response = await self._call_model()
            record.raw_responses.append(response)
            turn_start = len(record.new_items)
            self._record_output(response.output)
            calls = [item for item in response.output if item.get("type") == "function_call"]
            if calls:
                interruptions = await self._run_calls(calls)
                if interruptions:
                    record.interruptions = interruptions
                    record.pending_turn_start = turn_start
                    # The paused turn is held back (its calls lack outputs); the input
                    # and earlier turns are stored now, in case it is never resumed.
                    await self._flush(turn_start)
                    return record
            record.pending_turn_start = len(record.new_items)
            await self._flush(len(record.new_items))
            if not calls:
                final = _final_text(response.output)
                if final is not None:
                    record.final_output = final
                    return record

    async def _prepare_input(self, fresh: str | list[Any]) -> None:
        """The first turn's input from the session history and the new input."""
        try:
            model_input, to_persist = await prepare_input_with_session(
                fresh,
                self.session,
                self.config.session_input_callback,
                self.config.session_settings,
            )
        except ValueError:  # the engine's copy of the new input, if an item is too deep
            position = None if isinstance(fresh, str) else first_too_deep(fresh)
            if position is None:
                raise
            raise too_deep_error("input", position) from None
        # prepare_input_with_session returns fresh objects shared with nothing (not
        # the store, not the caller's input): the run adopts them uncopied.
        if not all_plain_dicts(model_input):
            for index, item in enumerate(model_input):
                if not isinstance(item, dict):
                    raise UserError(
                        f"prepared session input[{index}] is {a_type_name(item)}, not an item dict"
                    )
        self.record.set_original_input(model_input)
        self.unsaved_input = to_persist

    async def _finish_paused_turn(self) -> bool:
        """Apply the decisions on a resumed state's pending calls. True when some
        call is still undecided (the run pauses again at once)."""
        record = self.record
        decided = [item for item in self.pending if item.call_id in self.approvals]
        undecided = [item for item in self.pending if item.call_id not in self.approvals]
        approved = [item for item in decided if self.approvals[item.call_id].approved]
        results = await gather_all([self._tool(i.name).run(i.arguments) for i in approved])
        texts = {item.call_id: text for item, text in zip(approved, results, strict=True)}
        for item in decided:
            message = self.approvals[item.call_id].message
            if item.call_id in texts:
                text = texts[item.call_id]
            else:
                text = rejection_text(item.name) if message is None else message
            self._append(function_call_output(item.call_id, text))
        if undecided:
            record.interruptions = undecided
            for item in undecided:
                self._emit(RunItemStreamEvent("tool_approval_requested", item))
            return True
        # Complete now, but stored with the next turn: a resume that fails before the
        # model answers leaves the session as the pause left it, so it can be retried.
        record.pending_turn_start = len(record.new_items)
        return False

    # --- steps ---------------------------------------------------------------------

    async def _call_model(self) -> ModelResponse:
        instructions = self.agent.instructions
        model_input: list[Any] = self.record.conversation
        model_filter = self.config.call_model_input_filter
        if model_filter is not None:
            data = ModelInputData(input=list(model_input), instructions=instructions)
            filtered = model_filter(CallModelData(model_data=data, agent=self.agent))
            if inspect.isawaitable(filtered):
                filtered = await filtered
            if not isinstance(filtered, ModelInputData) or not isinstance(filtered.input, list):
                raise UserError(
                    "call_model_input_filter must return a ModelInputData with a list "
                    f"input, not {type(filtered).__name__}"
                )
            model_input, instructions = filtered.input, filtered.instructions
        # The run's own conversation is the history the rules read (rule e): whatever
        # the filter kept, the model gets an input the API accepts.
        model_input = repair_input(
            deduplicate_input_items_preferring_latest(model_input),
            history=self.record.conversation,
        )
        if not self.streaming:
            response = await self.model.get_response(
                model_input, instructions=instructions, tools=self.model_tools
            )
        else:
            response = await self._stream_model(model_input, instructions)
        if not isinstance(response, ModelResponse):
            raise ModelBehaviorError(
                f"the model returned {a_type_name(response)}, not a ModelResponse"
            )
        return response

    async def _stream_model(
        self, model_input: list[dict[str, Any]], instructions: str | None
    ) -> ModelResponse:
        final: ModelResponse | None = None
        stream = self.model.stream_response(
            model_input, instructions=instructions, tools=self.model_tools
        )
        try:
            async for event in stream:
                if final is not None:
                    raise ModelBehaviorError(
                        "stream_response yielded events after its ModelResponse"
                    )
                if isinstance(event, ModelResponse):
                    final = event
                elif isinstance(event, dict):
                    self._emit(RawResponsesStreamEvent(event))
                else:
                    raise ModelBehaviorError(
                        f"stream_response yielded {a_type_name(event)}; expected dict "
                        "events and a final ModelResponse"
                    )
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        if final is None:
            raise ModelBehaviorError("stream_response ended without a ModelResponse")
        return final

    def _record_output(self, output: Any) -> None:
        if not isinstance(output, list):
            raise ModelBehaviorError(f"model output must be a list, not {type(output).__name__}")
        answered: set[tuple[str, str]] = set()
        for index, item in enumerate(output):
            if not isinstance(item, dict):
                raise ModelBehaviorError(
                    f"model output[{index}] is {a_type_name(item)}, not an item dict"
                )
            if item.get("type") == "function_call":
                for key in ("name", "call_id", "arguments"):
                    if not isinstance(item.get(key), str):
                        raise ModelBehaviorError(
                            f"model output[{index}]: function_call needs a string {key!r}"
                        )
                if self.agent.get_tool(item["name"]) is None:
                    raise ModelBehaviorError(
                        f"the model called tool {item['name']!r}, which agent "
                        f"{self.agent.name!r} does not have"
                    )
            if tool_role(item) == "output":
                answered.add(pair_key(item))
        # Call types the runner cannot execute itself: a response may only carry them with
        # their output (a hosted tool ran them), or the run could never complete them.
        for index, item in enumerate(output):
            kind = item.get("type")
            foreign = isinstance(kind, str) and kind in CALL_TO_OUTPUT_TYPE
            foreign = foreign and kind != "function_call"
            if foreign and (tool_role(item) != "call" or pair_key(item) not in answered):
                what = with_article(repr(item["type"]))
                raise ModelBehaviorError(
                    f"model output[{index}] is {what} without its output; "
                    "histcore runs function tools only"
                )
        for item in output:
            self._append(item)

    async def _run_calls(self, calls: list[dict[str, Any]]) -> list[ToolApprovalItem]:
        """Run the calls that need no approval (concurrently); return the others."""
        waiting: list[ToolApprovalItem] = []
        runnable: list[tuple[dict[str, Any], FunctionTool]] = []
        for call in calls:
            tool = self._tool(call["name"])
            if await tool.requires_approval(call["arguments"]):
                waiting.append(ToolApprovalItem(call))
            else:
                runnable.append((call, tool))
        texts = await gather_all([tool.run(call["arguments"]) for call, tool in runnable])
        for (call, _), text in zip(runnable, texts, strict=True):
            self._append(function_call_output(call["call_id"], text))
        for item in waiting:
            self._emit(RunItemStreamEvent("tool_approval_requested", item))
        return waiting

    async def _max_turns_reached(self) -> RunRecord:
        record = self.record
        error = MaxTurnsExceeded(
            f"agent {self.agent.name!r} reached max_turns ({record.max_turns}) "
            "without a final output"
        )
        handler = self.handlers.get("max_turns")
        if handler is None:
            await self._flush(len(record.new_items))
            raise error
        data = RunErrorData(
            input=record.original_input,
            new_items=list(record.new_items),
            raw_responses=list(record.raw_responses),
            last_agent=self.agent,
        )
        outcome = handler(RunErrorHandlerInput(error=error, run_data=data))
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome is None:
            await self._flush(len(record.new_items))
            raise error
        if isinstance(outcome, RunErrorHandlerResult):
            final, include = outcome.final_output, outcome.include_in_history
        else:
            final, include = outcome, True
        if include:
            self._append(text_message(tool_output_text(final)))
        record.pending_turn_start = len(record.new_items)
        await self._flush(len(record.new_items))
        record.final_output = final
        return record

    # --- bookkeeping -----------------------------------------------------------------

    def _append(self, item: dict[str, Any]) -> None:
        self.record.append(item)
        self._emit(RunItemStreamEvent(item_event_name(item), item))

    def _emit(self, event: StreamEvent) -> None:
        if self.sink is not None:
            self.sink(event)

    def _tool(self, name: str) -> FunctionTool:
        tool = self.agent.get_tool(name)
        if tool is None:  # checked when the call was recorded or the state loaded
            raise ModelBehaviorError(f"agent {self.agent.name!r} has no tool {name!r}")
        return tool

    async def _flush(self, upto: int) -> None:
        """Store the input not stored yet and the run's complete items before
        ``upto`` in one session write (nothing without a session)."""
        items = self.record.new_items[self.unsaved_from : upto]
        self.unsaved_from = upto
        if self.session is None or not (self.unsaved_input or items):
            return
        turn_input, self.unsaved_input = self.unsaved_input, []
        # Shielded: once a write has started it completes, so a cancelled run leaves
        # whole turns in the session, never a call without its output.
        await finish_despite_cancellation(
            asyncio.ensure_future(save_turn_to_session(self.session, turn_input, items))
        )


# --- helpers ---------------------------------------------------------------------------


def _final_text(output: list[dict[str, Any]]) -> str | None:
    """Text of the last assistant message of a response, or None if it has none."""
    for item in reversed(output):
        if item.get("type", "message") == "message" and item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    part.get("text", "")
                    for part in content
                    if isinstance(part, dict) and part.get("type") == "output_text"
                )
            return ""
    return None
