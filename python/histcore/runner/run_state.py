"""``RunState``: the durable pause/resume checkpoint of a run, owned by the caller.

Immutable by construction: a state holds tuples of its own item copies, made when it
is captured (``RunResult.to_state()``) or loaded (``from_json``); a run resumed from it
works on fresh copies (``_resume_point``), so nothing a run does can reach back into
the state. ``approve`` and ``reject`` are its only mutating methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from histcore.engine import exact_json
from histcore.engine.collector import collector_paused
from histcore.engine.items import deep_copy_items
from histcore.exceptions import RunStateError, UserError
from histcore.runner.models.interface import ModelResponse
from histcore.runner.run_state_json import (
    SCHEMA_VERSION,
    StateFields,
    kind_name,
    parse,
    state_data,
    state_fields,
)
from histcore.runner.tool import ApprovalDecision, ToolApprovalItem

if TYPE_CHECKING:
    from histcore.runner.agent import Agent

__all__ = ["SCHEMA_VERSION", "ApprovalDecision", "RunState"]


@dataclass
class ResumePoint:
    """Fresh copies of a state's contents for one run to own (never the state's)."""

    original_input: str | list[dict[str, Any]]
    generated_items: list[dict[str, Any]]
    model_responses: list[ModelResponse]
    current_turn: int
    max_turns: int
    pending_turn_start: int
    interruptions: list[ToolApprovalItem]
    approvals: dict[str, ApprovalDecision]


class RunState:
    """A paused (or finished) run: its original input, the items and model responses
    generated so far, turn counters, pending tool approvals and the decisions on them.

    Get one from ``RunResult.to_state()`` or ``RunState.from_json`` /
    ``from_string``; resume it with ``Runner.run(agent, state)``. Resuming never
    changes the state, so one state can be resumed any number of times, each run
    independent of the others. ``pending_turn_start`` is the index in
    ``generated_items`` where the paused turn's items begin: those items reach the
    session only when the turn is completed by a resumed run.
    """

    __slots__ = ("_approvals", "_fields")

    def __init__(
        self, fields: StateFields, approvals: Mapping[str, ApprovalDecision] | None = None
    ) -> None:
        """Adopts ``fields`` without copying: use ``RunResult.to_state()`` or
        ``from_json`` rather than calling this directly."""
        self._fields = fields
        self._approvals: dict[str, ApprovalDecision] = dict(approvals or {})

    # --- read access ---------------------------------------------------------------

    @property
    def agent_name(self) -> str:
        return self._fields.agent_name

    @property
    def original_input(self) -> str | tuple[dict[str, Any], ...]:
        return self._fields.original_input

    @property
    def generated_items(self) -> tuple[dict[str, Any], ...]:
        return self._fields.generated_items

    @property
    def model_responses(self) -> tuple[ModelResponse, ...]:
        return self._fields.model_responses

    @property
    def current_turn(self) -> int:
        return self._fields.current_turn

    @property
    def max_turns(self) -> int:
        return self._fields.max_turns

    @property
    def pending_turn_start(self) -> int:
        return self._fields.pending_turn_start

    @property
    def interruptions(self) -> tuple[ToolApprovalItem, ...]:
        return self._fields.interruptions

    @property
    def approvals(self) -> Mapping[str, ApprovalDecision]:
        """Decisions recorded so far, by call id (a read-only view)."""
        return MappingProxyType(self._approvals)

    def __repr__(self) -> str:
        return (
            f"RunState(agent={self.agent_name!r}, turn={self.current_turn}/"
            f"{self.max_turns}, items={len(self.generated_items)}, "
            f"interruptions={[i.call_id for i in self.interruptions]})"
        )

    # --- decisions -----------------------------------------------------------------

    def approve(self, interruption: ToolApprovalItem) -> None:
        """Let the pending call run when the state is resumed."""
        self._approvals[self._pending_call_id(interruption, "approve")] = ApprovalDecision(True)

    def reject(self, interruption: ToolApprovalItem, message: str | None = None) -> None:
        """Refuse the pending call: on resume it gets ``message`` (or a default
        refusal text) as its output instead of running."""
        if message is not None and not isinstance(message, str):
            raise UserError(
                f"reject(): message must be a str or None, not {type(message).__name__}"
            )
        call_id = self._pending_call_id(interruption, "reject")
        self._approvals[call_id] = ApprovalDecision(False, message)

    def _pending_call_id(self, interruption: ToolApprovalItem, method: str) -> str:
        if not isinstance(interruption, ToolApprovalItem):
            raise UserError(
                f"{method}() takes a ToolApprovalItem from `interruptions`, "
                f"not {type(interruption).__name__}"
            )
        pending = [item.call_id for item in self.interruptions]
        if interruption.call_id not in pending:
            raise UserError(
                f"{method}(): call {interruption.call_id!r} ({interruption.name}) is not "
                f"pending in this state (pending: {pending})"
            )
        return interruption.call_id

    # --- boundaries with runs --------------------------------------------------------

    @classmethod
    def _capture(
        cls,
        *,
        agent_name: str,
        original_input: str | list[dict[str, Any]],
        generated_items: list[dict[str, Any]],
        model_responses: list[ModelResponse],
        current_turn: int,
        max_turns: int,
        pending_turn_start: int,
        interruptions: list[ToolApprovalItem],
    ) -> RunState:
        """A state holding copies of a run's lists and items (never the run's own)."""
        with collector_paused():  # bulk copies of acyclic JSON trees
            fields = StateFields(
                agent_name=agent_name,
                original_input=(
                    original_input
                    if isinstance(original_input, str)
                    else tuple(deep_copy_items(original_input))
                ),
                generated_items=tuple(deep_copy_items(generated_items)),
                model_responses=tuple(_copy_response(r) for r in model_responses),
                current_turn=current_turn,
                max_turns=max_turns,
                pending_turn_start=pending_turn_start,
                interruptions=tuple(
                    ToolApprovalItem(raw)
                    for raw in deep_copy_items([i.raw_item for i in interruptions])
                ),
            )
        return cls(fields)

    def _resume_point(self) -> ResumePoint:
        """Copies of everything a resumed run needs: one copy of each list, made once."""
        fields = self._fields
        original = fields.original_input
        with collector_paused():  # bulk copies of acyclic JSON trees
            return ResumePoint(
                original_input=original if isinstance(original, str) else deep_copy_items(original),
                generated_items=deep_copy_items(fields.generated_items),
                model_responses=[_copy_response(r) for r in fields.model_responses],
                current_turn=fields.current_turn,
                max_turns=fields.max_turns,
                pending_turn_start=fields.pending_turn_start,
                interruptions=[
                    ToolApprovalItem(raw)
                    for raw in deep_copy_items([i.raw_item for i in fields.interruptions])
                ],
                approvals=dict(self._approvals),
            )

    # --- serialisation -------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The state as new JSON data (sharing nothing with the state), carrying
        ``"$schemaVersion"``.

        Everything written comes back from ``from_json`` as it was, or nothing is
        written: a value JSON cannot hold exactly raises ``RunStateError`` naming the
        field. For a value of a type JSON has no form for (a ``datetime``, ``UUID``,
        ``Decimal``, set, bytes, a plain ``Enum`` member, a dataclass, a non-str dict
        key, any other object) that error is also a ``TypeError``; non-finite floats,
        integers too long to write as text, and strings holding a surrogate pair as
        two characters (``"\\ud83d\\ude00"``, which JSON text would read back as the
        one character ``"😀"``) are value errors. Tuples are written as arrays, and
        subclasses of str, int and float (``str`` and ``int`` enums) as their plain
        value, as ``json`` writes them.
        """
        with collector_paused():
            return state_data(self)

    def to_string(self) -> str:
        """``to_json()`` as a JSON string (ASCII with ``\\u`` escapes when it holds a
        lone surrogate, such as a file name decoded by ``os.fsdecode``, so that it is
        read back exactly)."""
        return exact_json.dumps(self.to_json()).decode()

    @classmethod
    def from_string(cls, agent: Agent, text: str | bytes) -> RunState:
        """Load a state written by ``to_string`` for ``agent`` (see ``from_json``);
        text that is not JSON raises ``RunStateError``."""
        if not issubclass(type(text), (str, bytes, bytearray)):
            raise RunStateError(f"RunState text must be a str, not {type(text).__name__}")
        with collector_paused():
            data = parse(text)
        return cls.from_json(agent, data)

    @classmethod
    def from_json(cls, agent: Agent, data: Any) -> RunState:
        """Load a state written by ``to_json`` for ``agent``.

        Every field is checked first; a missing or unsupported ``$schemaVersion``, a
        missing or unknown field, a wrong type, a malformed item, or a state that
        does not fit ``agent`` (another agent's name, a pending call of a tool the
        agent lacks) raises ``RunStateError`` naming the field, and nothing else is
        ever raised for any ``data``. The new state shares nothing with ``data``.

        ``data`` is JSON data: exact dicts, lists, strs, ints, floats, bools and None,
        and nothing ``to_json`` refuses. No method of a value's class is ever called:
        a dict or list subclass is refused wherever it stands, and so is any other
        subclass among the format's own values; inside items (and a string
        ``original_input``) tuples are read as arrays and subclasses of str, int and
        float as their plain values, as ``to_json`` writes them.

        One rule for fields: the objects of the format itself (the top level,
        ``agent``, each entry of ``model_responses`` and its ``usage``, each decision
        in ``approvals``) hold exactly their fields, so an unknown or misspelt one is
        an error, never silently dropped. Items (``original_input``,
        ``generated_items``, the output of model responses, ``interruptions``) are
        the model's and the caller's data: they keep whatever keys they have.
        """
        from histcore.runner.agent import Agent

        if not isinstance(agent, Agent):
            raise UserError(f"from_json() needs the Agent to resume, not {type(agent).__name__}")
        if type(data) is not dict:
            raise RunStateError(f"RunState JSON must be an object, not {kind_name(data)}")
        with collector_paused():
            return cls(*state_fields(agent, data))


def _copy_response(response: ModelResponse) -> ModelResponse:
    return ModelResponse(
        output=deep_copy_items(response.output),
        usage=response.usage,
        response_id=response.response_id,
    )
