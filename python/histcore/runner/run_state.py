"""``RunState``: the durable pause/resume checkpoint of a run, owned by the caller.

Immutable by construction: a state holds tuples of its own item copies, made when it
is captured (``RunResult.to_state()``) or loaded (``from_json``); a run resumed from it
works on fresh copies (``_resume_point``), so nothing a run does can reach back into
the state. ``approve`` and ``reject`` are its only mutating methods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from histcore.engine import exact_json as _json
from histcore.engine.collector import collector_paused
from histcore.engine.items import MAX_DEPTH, deep_copy_items
from histcore.exceptions import RunStateError, UserError
from histcore.runner.models.interface import ModelResponse, Usage
from histcore.runner.tool import ToolApprovalItem

if TYPE_CHECKING:
    from histcore.runner.agent import Agent

__all__ = ["SCHEMA_VERSION", "ApprovalDecision", "RunState"]

#: Version of the JSON written by ``RunState.to_json``; ``from_json`` reads only this.
SCHEMA_VERSION = 1

_FIELDS = (
    "$schemaVersion",
    "agent",
    "original_input",
    "generated_items",
    "model_responses",
    "current_turn",
    "max_turns",
    "pending_turn_start",
    "interruptions",
    "approvals",
)
_USAGE_FIELDS = ("requests", "input_tokens", "output_tokens", "total_tokens")


@dataclass(frozen=True)
class ApprovalDecision:
    """The caller's decision on one pending tool call."""

    approved: bool
    message: str | None = None


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

    __slots__ = (
        "_agent_name",
        "_approvals",
        "_current_turn",
        "_generated_items",
        "_interruptions",
        "_max_turns",
        "_model_responses",
        "_original_input",
        "_pending_turn_start",
    )

    def __init__(
        self,
        *,
        agent_name: str,
        original_input: str | tuple[dict[str, Any], ...],
        generated_items: tuple[dict[str, Any], ...],
        model_responses: tuple[ModelResponse, ...],
        current_turn: int,
        max_turns: int,
        pending_turn_start: int,
        interruptions: tuple[ToolApprovalItem, ...] = (),
        approvals: Mapping[str, ApprovalDecision] | None = None,
    ) -> None:
        """Adopts what it is given without copying: use ``RunResult.to_state()`` or
        ``from_json`` rather than calling this directly."""
        self._agent_name = agent_name
        self._original_input = original_input
        self._generated_items = generated_items
        self._model_responses = model_responses
        self._current_turn = current_turn
        self._max_turns = max_turns
        self._pending_turn_start = pending_turn_start
        self._interruptions = interruptions
        self._approvals: dict[str, ApprovalDecision] = dict(approvals or {})

    # --- read access ---------------------------------------------------------------

    @property
    def agent_name(self) -> str:
        return self._agent_name

    @property
    def original_input(self) -> str | tuple[dict[str, Any], ...]:
        return self._original_input

    @property
    def generated_items(self) -> tuple[dict[str, Any], ...]:
        return self._generated_items

    @property
    def model_responses(self) -> tuple[ModelResponse, ...]:
        return self._model_responses

    @property
    def current_turn(self) -> int:
        return self._current_turn

    @property
    def max_turns(self) -> int:
        return self._max_turns

    @property
    def pending_turn_start(self) -> int:
        return self._pending_turn_start

    @property
    def interruptions(self) -> tuple[ToolApprovalItem, ...]:
        return self._interruptions

    @property
    def approvals(self) -> Mapping[str, ApprovalDecision]:
        """Decisions recorded so far, by call id (a read-only view)."""
        return MappingProxyType(self._approvals)

    def __repr__(self) -> str:
        return (
            f"RunState(agent={self._agent_name!r}, turn={self._current_turn}/"
            f"{self._max_turns}, items={len(self._generated_items)}, "
            f"interruptions={[i.call_id for i in self._interruptions]})"
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
        pending = [item.call_id for item in self._interruptions]
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
            return cls(
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

    def _resume_point(self) -> ResumePoint:
        """Copies of everything a resumed run needs: one copy of each list, made once."""
        original = self._original_input
        with collector_paused():  # bulk copies of acyclic JSON trees
            return ResumePoint(
                original_input=original if isinstance(original, str) else deep_copy_items(original),
                generated_items=deep_copy_items(self._generated_items),
                model_responses=[_copy_response(r) for r in self._model_responses],
                current_turn=self._current_turn,
                max_turns=self._max_turns,
                pending_turn_start=self._pending_turn_start,
                interruptions=[
                    ToolApprovalItem(raw)
                    for raw in deep_copy_items([i.raw_item for i in self._interruptions])
                ],
                approvals=dict(self._approvals),
            )

    # --- serialisation -------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The state as new JSON data (sharing nothing with the state), carrying
        ``"$schemaVersion"``. Values JSON cannot hold exactly (non-finite floats,
        non-str keys, other objects) raise ``RunStateError`` naming the field."""
        original = self._original_input
        with collector_paused():
            return {
                "$schemaVersion": SCHEMA_VERSION,
                "agent": {"name": self._agent_name},
                "original_input": (
                    original
                    if isinstance(original, str)
                    else _json_data(original, "original_input")
                ),
                "generated_items": _json_data(self._generated_items, "generated_items"),
                "model_responses": [
                    {
                        "output": _json_data(response.output, f"model_responses[{index}].output"),
                        "usage": {name: getattr(response.usage, name) for name in _USAGE_FIELDS},
                        "response_id": response.response_id,
                    }
                    for index, response in enumerate(self._model_responses)
                ],
                "current_turn": self._current_turn,
                "max_turns": self._max_turns,
                "pending_turn_start": self._pending_turn_start,
                "interruptions": _json_data(
                    [item.raw_item for item in self._interruptions], "interruptions"
                ),
                "approvals": {
                    call_id: {"approved": decision.approved, "message": decision.message}
                    for call_id, decision in self._approvals.items()
                },
            }

    def to_string(self) -> str:
        """``to_json()`` as a JSON string."""
        return _json.dumps(self.to_json()).decode()

    @classmethod
    def from_string(cls, agent: Agent, text: str | bytes) -> RunState:
        """Load a state written by ``to_string`` for ``agent`` (see ``from_json``)."""
        if not isinstance(text, (str, bytes, bytearray)):
            raise RunStateError(f"RunState text must be a str, not {type(text).__name__}")
        try:
            with collector_paused():
                data = _json.loads(text)
        except ValueError as exc:
            raise RunStateError(f"RunState text is not valid JSON: {exc}") from None
        return cls.from_json(agent, data)

    @classmethod
    def from_json(cls, agent: Agent, data: Any) -> RunState:
        """Load a state written by ``to_json`` for ``agent``.

        Every field is checked first; a missing or unsupported ``$schemaVersion``, a
        missing or unknown field, a wrong type, a malformed item, or a state that
        does not fit ``agent`` (another agent's name, a pending call of a tool the
        agent lacks) raises ``RunStateError`` naming the field. The new state shares
        nothing with ``data``.
        """
        from histcore.runner.agent import Agent

        if not isinstance(agent, Agent):
            raise UserError(f"from_json() needs the Agent to resume, not {type(agent).__name__}")
        if not isinstance(data, dict):
            raise RunStateError(f"RunState JSON must be an object, not {_kind(data)}")
        with collector_paused():
            return cls._load(agent, data)

    @classmethod
    def _load(cls, agent: Agent, data: dict[str, Any]) -> RunState:
        _check_version(data)
        for name in _FIELDS:
            if name not in data:
                raise _field_error(name, "missing")
        unknown = sorted(str(key) for key in data if key not in _FIELDS)
        if unknown:
            raise _field_error(unknown[0], "unknown field")

        agent_data = data["agent"]
        if not isinstance(agent_data, dict) or not isinstance(agent_data.get("name"), str):
            raise _field_error("agent", "expected an object with a string 'name'")
        if agent_data["name"] != agent.name:
            raise _field_error(
                "agent.name",
                f"the state belongs to agent {agent_data['name']!r}, not {agent.name!r}",
            )

        raw_input = data["original_input"]
        original_input: str | tuple[dict[str, Any], ...] = (
            raw_input if isinstance(raw_input, str) else _load_items(raw_input, "original_input")
        )
        generated = _load_items(data["generated_items"], "generated_items")
        responses = _load_responses(data["model_responses"])
        current_turn = _load_int(data["current_turn"], "current_turn", minimum=0)
        max_turns = _load_int(data["max_turns"], "max_turns", minimum=1)
        pending_start = _load_int(data["pending_turn_start"], "pending_turn_start", minimum=0)
        if pending_start > len(generated):
            raise _field_error(
                "pending_turn_start",
                f"{pending_start} is past the end of generated_items ({len(generated)} items)",
            )
        interruptions = _load_interruptions(data["interruptions"], agent, generated, pending_start)
        approvals = _load_approvals(data["approvals"], {i.call_id for i in interruptions})
        return cls(
            agent_name=agent.name,
            original_input=original_input,
            generated_items=generated,
            model_responses=responses,
            current_turn=current_turn,
            max_turns=max_turns,
            pending_turn_start=pending_start,
            interruptions=interruptions,
            approvals=approvals,
        )


# --- helpers ---------------------------------------------------------------------------


def _copy_response(response: ModelResponse) -> ModelResponse:
    return ModelResponse(
        output=deep_copy_items(response.output),
        usage=response.usage,
        response_id=response.response_id,
    )


def _field_error(path: str, problem: str) -> RunStateError:
    return RunStateError(f"RunState field {path!r}: {problem}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _check_version(data: dict[str, Any]) -> None:
    if "$schemaVersion" not in data:
        raise _field_error(
            "$schemaVersion", "missing (not a RunState, or written before versioning)"
        )
    version = data["$schemaVersion"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _field_error("$schemaVersion", f"expected an integer, got {_kind(version)}")
    if version > SCHEMA_VERSION:
        raise _field_error(
            "$schemaVersion",
            f"version {version} was written by a newer histcore; this one reads "
            f"version {SCHEMA_VERSION}",
        )
    if version != SCHEMA_VERSION:
        raise _field_error("$schemaVersion", f"unsupported version {version}")


def _json_data(value: Any, path: str, depth: int = 0) -> Any:
    """A new JSON-data copy of ``value`` (tuples become lists); raises naming ``path``
    for anything JSON cannot represent exactly."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _field_error(path, f"{value!r} cannot be stored in JSON")
        return value
    if kind is dict:
        if depth >= MAX_DEPTH:
            raise _field_error(path, f"nested deeper than {MAX_DEPTH} levels")
        out: dict[str, Any] = {}
        for key, member in value.items():
            if not isinstance(key, str):
                raise _field_error(path, f"key {key!r} is not a string")
            out[key] = _json_data(member, f"{path}.{key}", depth + 1)
        return out
    if kind is list or kind is tuple:
        if depth >= MAX_DEPTH:
            raise _field_error(path, f"nested deeper than {MAX_DEPTH} levels")
        return [_json_data(member, f"{path}[{i}]", depth + 1) for i, member in enumerate(value)]
    # Subclasses of the JSON scalars (str/int enums and the like) keep their plain value.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return _json_data(float(value), path, depth)
    raise _field_error(path, f"{_kind(value)} is not JSON data")


def _load_item(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _field_error(path, f"expected an object, got {_kind(value)}")
    if not isinstance(value.get("type"), str) and not isinstance(value.get("role"), str):
        raise _field_error(path, "an item needs a string 'type' or 'role'")
    item: dict[str, Any] = _json_data(value, path)
    return item


def _load_items(value: Any, path: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise _field_error(path, f"expected an array, got {_kind(value)}")
    return tuple(_load_item(item, f"{path}[{index}]") for index, item in enumerate(value))


def _load_int(value: Any, path: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _field_error(path, f"expected an integer, got {_kind(value)}")
    if value < minimum:
        raise _field_error(path, f"must be at least {minimum}, got {value}")
    return value


def _load_responses(value: Any) -> tuple[ModelResponse, ...]:
    if not isinstance(value, list):
        raise _field_error("model_responses", f"expected an array, got {_kind(value)}")
    responses: list[ModelResponse] = []
    for index, entry in enumerate(value):
        path = f"model_responses[{index}]"
        if not isinstance(entry, dict):
            raise _field_error(path, f"expected an object, got {_kind(entry)}")
        for name in ("output", "usage", "response_id"):
            if name not in entry:
                raise _field_error(f"{path}.{name}", "missing")
        usage = entry["usage"]
        if not isinstance(usage, dict):
            raise _field_error(f"{path}.usage", f"expected an object, got {_kind(usage)}")
        for name in _USAGE_FIELDS:
            if name not in usage:
                raise _field_error(f"{path}.usage.{name}", "missing")
        counts = {
            name: _load_int(usage[name], f"{path}.usage.{name}", minimum=0)
            for name in _USAGE_FIELDS
        }
        response_id = entry["response_id"]
        if response_id is not None and not isinstance(response_id, str):
            raise _field_error(
                f"{path}.response_id", f"expected a string or null, got {_kind(response_id)}"
            )
        output = list(_load_items(entry["output"], f"{path}.output"))
        responses.append(
            ModelResponse(output=output, usage=Usage(**counts), response_id=response_id)
        )
    return tuple(responses)


def _load_interruptions(
    value: Any, agent: Agent, generated: tuple[dict[str, Any], ...], pending_start: int
) -> tuple[ToolApprovalItem, ...]:
    if not isinstance(value, list):
        raise _field_error("interruptions", f"expected an array, got {_kind(value)}")
    calls_of_paused_turn = {
        item.get("call_id")
        for item in generated[pending_start:]
        if item.get("type") == "function_call"
    }
    items: list[ToolApprovalItem] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        path = f"interruptions[{index}]"
        raw = _load_item(entry, path)
        if raw.get("type") != "function_call":
            raise _field_error(f"{path}.type", "expected 'function_call'")
        for name in ("name", "call_id", "arguments"):
            if not isinstance(raw.get(name), str):
                raise _field_error(
                    f"{path}.{name}", f"expected a string, got {_kind(raw.get(name))}"
                )
        if agent.get_tool(raw["name"]) is None:
            raise _field_error(f"{path}.name", f"agent {agent.name!r} has no tool {raw['name']!r}")
        if raw["call_id"] in seen:
            raise _field_error(f"{path}.call_id", f"call {raw['call_id']!r} is listed twice")
        if raw["call_id"] not in calls_of_paused_turn:
            raise _field_error(
                f"{path}.call_id",
                f"call {raw['call_id']!r} is not a function call of the paused turn "
                "(generated_items from pending_turn_start)",
            )
        seen.add(raw["call_id"])
        items.append(ToolApprovalItem(raw))
    return tuple(items)


def _load_approvals(value: Any, pending: set[str]) -> dict[str, ApprovalDecision]:
    if not isinstance(value, dict):
        raise _field_error("approvals", f"expected an object, got {_kind(value)}")
    decisions: dict[str, ApprovalDecision] = {}
    for call_id, entry in value.items():
        path = f"approvals.{call_id}"
        if call_id not in pending:
            raise _field_error(path, "no pending interruption has this call id")
        if not isinstance(entry, dict) or set(entry) != {"approved", "message"}:
            raise _field_error(path, "expected an object with 'approved' and 'message'")
        if not isinstance(entry["approved"], bool):
            raise _field_error(
                f"{path}.approved", f"expected a boolean, got {_kind(entry['approved'])}"
            )
        message = entry["message"]
        if message is not None and not isinstance(message, str):
            raise _field_error(
                f"{path}.message", f"expected a string or null, got {_kind(message)}"
            )
        decisions[call_id] = ApprovalDecision(entry["approved"], message)
    return decisions
