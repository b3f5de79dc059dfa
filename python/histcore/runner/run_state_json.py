"""The JSON form of a ``RunState``: what ``to_json`` writes (values JSON holds exactly,
or an error naming the field) and what ``from_json`` checks and reads back (every field,
or a ``RunStateError`` naming the first wrong one).

``from_json`` reads data it cannot trust without running any of its code: it looks at
``type(value)`` (never ``isinstance``, which asks an object's ``__class__``), walks only
exact dicts and lists (a subclass may override lookup and iteration), and reads the
subclasses of str, int and float that items may hold through the base class's own
methods (``str.__str__``, ``int.__index__``, ``float.__float__``), so no method of a
value's class is ever called.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from histcore.engine import exact_json
from histcore.engine.exact_json import kind_of, surrogate_pair
from histcore.engine.items import MAX_DEPTH
from histcore.engine.wording import a_type_name, with_article
from histcore.exceptions import RunStateError
from histcore.runner.models.interface import ModelResponse, Usage
from histcore.runner.tool import ApprovalDecision, ToolApprovalItem

if TYPE_CHECKING:
    from histcore.runner.agent import Agent
    from histcore.runner.run_state import RunState

__all__ = ["SCHEMA_VERSION", "StateFields", "kind_name", "parse", "state_data", "state_fields"]

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
_RESPONSE_FIELDS = ("output", "usage", "response_id")
_APPROVAL_FIELDS = ("approved", "message")


@dataclass(frozen=True)
class StateFields:
    """What a ``RunState`` holds but its approvals (which ``approve`` and ``reject``
    change): its own tuples of item copies and its counters. ``state_fields`` reads them
    from JSON data."""

    agent_name: str
    original_input: str | tuple[dict[str, Any], ...]
    generated_items: tuple[dict[str, Any], ...]
    model_responses: tuple[ModelResponse, ...]
    current_turn: int
    max_turns: int
    pending_turn_start: int
    interruptions: tuple[ToolApprovalItem, ...] = ()


def state_data(state: RunState) -> dict[str, Any]:
    """``state`` as new JSON data (see ``RunState.to_json``), checked to load again."""
    original = state.original_input
    data = {
        "$schemaVersion": SCHEMA_VERSION,
        "agent": {"name": _str_data(state.agent_name, "agent.name")},
        "original_input": (
            _str_data(original, "original_input")
            if isinstance(original, str)
            else _array_data(original, "original_input")
        ),
        "generated_items": _array_data(state.generated_items, "generated_items"),
        "model_responses": [
            _response_data(response, f"model_responses[{index}]")
            for index, response in enumerate(_sequence(state.model_responses, "model_responses"))
        ],
        "current_turn": _int_data(state.current_turn, "current_turn", 0),
        "max_turns": _int_data(state.max_turns, "max_turns", 1),
        "pending_turn_start": _int_data(state.pending_turn_start, "pending_turn_start", 0),
        "interruptions": _array_data(
            [_raw_item(item, index) for index, item in enumerate(state.interruptions)],
            "interruptions",
        ),
        "approvals": _approvals_data(state.approvals),
    }
    _check_loadable(data)
    return data


def state_fields(
    agent: Agent, data: dict[str, Any]
) -> tuple[StateFields, dict[str, ApprovalDecision]]:
    """The checked fields and approvals of JSON data for ``agent`` (see
    ``RunState.from_json``)."""
    _check_keys(data, None)
    _check_version(data)
    _check_fields(data, _FIELDS, None)
    agent_data = data["agent"]
    if type(agent_data) is not dict:
        raise _field_error("agent", "expected an object with a string 'name'")
    _check_fields(agent_data, ("name",), "agent")
    name = _load_str(agent_data["name"], "agent.name")
    if name != agent.name:
        raise _field_error(
            "agent.name", f"the state belongs to agent {_show(name)}, not {agent.name!r}"
        )

    raw_input = data["original_input"]
    original_input: str | tuple[dict[str, Any], ...] = (
        _text(str.__str__(raw_input), "original_input")
        if issubclass(type(raw_input), str)  # the caller's text: a subclass is read as str
        else _load_items(raw_input, "original_input")
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
    fields = StateFields(
        agent_name=agent.name,
        original_input=original_input,
        generated_items=generated,
        model_responses=responses,
        current_turn=current_turn,
        max_turns=max_turns,
        pending_turn_start=pending_start,
        interruptions=interruptions,
    )
    return fields, approvals


class _NotJSONError(RunStateError, TypeError):
    """A value of a type JSON has no form for: a ``RunStateError`` that is also the
    ``TypeError`` ``json`` raises for such a value."""


def _field_error(path: str, problem: str) -> RunStateError:
    return RunStateError(f"RunState field {path!r}: {problem}")


def _type_error(path: str, problem: str) -> RunStateError:
    return _NotJSONError(f"RunState field {path!r}: {problem}")


def parse(text: str | bytes | bytearray) -> Any:
    """The JSON value of ``text``, or ``RunStateError``.

    orjson reads the usual text; what it refuses goes to ``json`` (with NaN and
    Infinity tokens refused, as orjson does): ``to_string`` writes a lone surrogate
    as a ``\\udcxx`` escape, which only ``json`` reads back. A subclass of str, bytes
    or bytearray is read as its plain text, without calling its methods.
    """
    try:
        return exact_json.loads_strict(_plain_text(text))
    except RecursionError:
        raise RunStateError("RunState text is not valid JSON: nested too deeply") from None
    except ValueError as exc:
        raise RunStateError(f"RunState text is not valid JSON: {exc}") from None


def _plain_text(text: Any) -> str | bytes:
    """``text`` (a str, bytes or bytearray, or a subclass of one) as an exact str or
    bytes, read by the base class's own methods."""
    kind = type(text)
    if kind is str or kind is bytes:
        plain: str | bytes = text
    elif issubclass(kind, str):
        plain = str.__str__(text)
    elif issubclass(kind, bytes):
        plain = bytes.__getitem__(text, slice(None))
    else:
        plain = bytes(bytearray.copy(text))
    return plain


def _show(value: Any) -> str:
    """The ``repr`` of a plain value for an error message, whatever the value (an
    integer too long for ``repr`` included), cut to a readable length; a subclass of
    str, int or float is shown as its plain value, anything else by its type."""
    kind = type(value)
    if issubclass(kind, bool) or value is None:
        text = repr(value)
    elif issubclass(kind, int):
        number = int.__index__(value)
        if _long_int_problem(number) is not None:
            return f"an integer of {number.bit_length()} bits"
        text = repr(number)
    elif issubclass(kind, str):
        text = repr(str.__str__(value))
    elif issubclass(kind, float):
        text = repr(float.__float__(value))
    else:
        return a_type_name(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


_BUILTINS = (bool, int, float, str, list, tuple, dict)


def kind_name(value: Any) -> str:
    """``kind_of(value)``, naming the class of a subclass of a builtin ("an EqInt (an
    int subclass)"), which ``from_json`` refuses where the format has its own values."""
    kind = type(value)
    if kind in _BUILTINS or value is None:
        return kind_of(value)
    for base in _BUILTINS:
        if issubclass(kind, base):
            return f"{a_type_name(value)} ({with_article(base.__name__)} subclass)"
    return kind_of(value)


def _text(value: str, path: str) -> str:
    """``value`` (an exact str), unless JSON text cannot hold it (a surrogate pair as
    two characters, which would read back as the one character they encode)."""
    pair = surrogate_pair(value)
    if pair is not None:
        raise _field_error(
            path,
            f"holds a surrogate pair as two characters ({pair!r}): JSON text holds them "
            "only as the escapes of the one character they encode, and reads them back "
            "as that character",
        )
    return value


def _load_str(value: Any, path: str) -> str:
    """A string of the format itself: an exact str JSON text can hold."""
    if type(value) is not str:
        raise _field_error(path, f"expected a string, got {kind_name(value)}")
    return _text(value, path)


def _optional_str(value: Any, path: str) -> str | None:
    if value is not None and type(value) is not str:
        raise _field_error(path, f"expected a string or null, got {kind_name(value)}")
    return None if value is None else _text(value, path)


def _check_version(data: dict[str, Any]) -> None:
    """``data`` (an exact dict whose keys ``_check_keys`` checked) is of this version."""
    if "$schemaVersion" not in data:
        raise _field_error(
            "$schemaVersion", "missing (not a RunState, or written before versioning)"
        )
    version = data["$schemaVersion"]
    if type(version) is not int:
        raise _field_error("$schemaVersion", f"expected an integer, got {kind_name(version)}")
    if version > SCHEMA_VERSION:
        raise _field_error(
            "$schemaVersion",
            f"version {_show(version)} was written by a newer histcore; this one reads "
            f"version {SCHEMA_VERSION}",
        )
    if version != SCHEMA_VERSION:
        raise _field_error("$schemaVersion", f"unsupported version {_show(version)}")


def _where(path: str | None, name: str) -> str:
    return name if path is None else f"{path}.{name}"


def _check_keys(data: dict[Any, Any], path: str | None) -> None:
    """Every key of ``data`` (an exact dict) is an exact str: the keys of the format's
    objects are its field names. Runs first, so that looking a field up compares
    exact strs only (a key of another class would have its ``__eq__`` called)."""
    for key in data:  # iterating an exact dict calls no method of its keys
        if type(key) is not str:
            name = str.__str__(key) if issubclass(type(key), str) else _show(key)
            raise _field_error(
                _where(path, name), f"unknown field (its key is {kind_name(key)}, not a string)"
            )


def _check_fields(data: dict[Any, Any], fields: tuple[str, ...], path: str | None) -> None:
    """``data`` (an exact dict) holds exactly ``fields``: a key that is no exact str,
    then the first missing field, then the first unknown, is an error naming it
    (under ``path``)."""
    _check_keys(data, path)
    for name in fields:
        if name not in data:
            raise _field_error(_where(path, name), "missing")
    unknown = [key for key in data if key not in fields]
    if unknown:
        raise _field_error(_where(path, min(unknown)), "unknown field")


def _long_int_problem(value: int) -> str | None:
    """Why ``json`` cannot write (or read back) integer ``value``, or None: Python
    refuses to turn integers of more than ``sys.get_int_max_str_digits()`` digits
    into text."""
    if -(2**63) <= value < 2**64:
        return None
    try:
        int.__repr__(value)
    except ValueError:
        return (
            f"an integer of {value.bit_length()} bits has more than "
            f"{sys.get_int_max_str_digits()} digits, more than Python writes as text"
        )
    return None


def _json_data(value: Any, path: str, depth: int = 0) -> Any:  # noqa: C901 (one flat branch per JSON kind)
    """A new JSON-data copy of ``value`` (tuples become lists, subclasses of str, int
    and float their plain values, read without calling their methods); raises naming
    ``path`` for anything JSON cannot represent exactly, a dict or list subclass
    included."""
    kind = type(value)
    if kind is str:
        return value if value.isascii() else _text(value, path)
    if kind is bool or value is None:
        return value
    if kind is int:
        problem = None if -(2**63) <= value < 2**64 else _long_int_problem(value)
        if problem is not None:
            raise _field_error(path, problem)
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
            if type(key) is not str:
                if not issubclass(type(key), str):
                    raise _type_error(path, f"key {_show(key)} is not a string")
                key = str.__str__(key)
            if not key.isascii():
                _text(key, f"{path}.{key}")
            out[key] = _json_data(member, f"{path}.{key}", depth + 1)
        if len(out) != len(value):  # str subclass keys equal to others as plain str
            raise _field_error(path, "two keys are the same string")
        return out
    if kind is list or kind is tuple:
        if depth >= MAX_DEPTH:
            raise _field_error(path, f"nested deeper than {MAX_DEPTH} levels")
        return [_json_data(member, f"{path}[{i}]", depth + 1) for i, member in enumerate(value)]
    # Subclasses of the JSON scalars (str/int enums and the like) keep their plain
    # value, as ``json`` writes them; a plain Enum member is no JSON scalar.
    if issubclass(kind, str):
        return _json_data(str.__str__(value), path, depth)
    if issubclass(kind, int):  # bool is final: a subclass of int here is no bool
        return _json_data(int.__index__(value), path, depth)
    if issubclass(kind, float):
        return _json_data(float.__float__(value), path, depth)
    raise _type_error(path, f"{kind_name(value)} is not JSON data")


def _sequence(value: Any, path: str) -> list[Any] | tuple[Any, ...]:
    if not issubclass(type(value), (list, tuple)):
        raise _type_error(path, f"expected an array, got {kind_name(value)}")
    sequence: list[Any] | tuple[Any, ...] = value
    return sequence


def _array_data(value: Any, path: str) -> list[Any]:
    data: list[Any] = _json_data(_sequence(value, path), path)
    return data


def _str_data(value: Any, path: str) -> str:
    if not issubclass(type(value), str):
        raise _type_error(path, f"expected a string, got {kind_of(value)}")
    return _text(str.__str__(value), path)


def _optional_str_data(value: Any, path: str) -> str | None:
    if value is not None and not issubclass(type(value), str):
        raise _type_error(path, f"expected a string or null, got {kind_of(value)}")
    return None if value is None else _text(str.__str__(value), path)


def _int_data(value: Any, path: str, minimum: int) -> int:
    if issubclass(type(value), bool) or not issubclass(type(value), int):
        raise _type_error(path, f"expected an integer, got {kind_of(value)}")
    return _load_int(int.__index__(value), path, minimum=minimum)


def _response_data(response: Any, path: str) -> dict[str, Any]:
    if not isinstance(response, ModelResponse):
        raise _type_error(path, f"expected a ModelResponse, got {kind_of(response)}")
    return {
        "output": _array_data(response.output, f"{path}.output"),
        "usage": {
            name: _int_data(getattr(response.usage, name, None), f"{path}.usage.{name}", 0)
            for name in _USAGE_FIELDS
        },
        "response_id": _optional_str_data(response.response_id, f"{path}.response_id"),
    }


def _raw_item(item: Any, index: int) -> Any:
    if not isinstance(item, ToolApprovalItem):
        raise _type_error(
            f"interruptions[{index}]", f"expected a ToolApprovalItem, got {kind_of(item)}"
        )
    return item.raw_item


def _approvals_data(approvals: Mapping[str, ApprovalDecision]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for call_id, decision in approvals.items():
        if not issubclass(type(call_id), str):
            raise _type_error("approvals", f"key {_show(call_id)} is not a string")
        key = str.__str__(call_id)
        path = f"approvals.{key}"
        _text(key, path)
        if not isinstance(decision, ApprovalDecision) or type(decision.approved) is not bool:
            raise _type_error(path, "expected an ApprovalDecision")
        data[key] = {
            "approved": decision.approved,
            "message": _optional_str_data(decision.message, f"{path}.message"),
        }
    return data


def _check_loadable(data: dict[str, Any]) -> None:
    """The checks of ``from_json`` that need no agent, on JSON data ``to_json`` made:
    a state that is written also loads (for an agent with its tools). Items are
    checked only at their top level, as they were copied already."""
    original = data["original_input"]
    generated: list[dict[str, Any]] = data["generated_items"]
    for index, item in enumerate([] if isinstance(original, str) else original):
        _check_item(item, f"original_input[{index}]")
    for index, item in enumerate(generated):
        _check_item(item, f"generated_items[{index}]")
    for number, response in enumerate(data["model_responses"]):
        for index, item in enumerate(response["output"]):
            _check_item(item, f"model_responses[{number}].output[{index}]")
    pending_start: int = data["pending_turn_start"]
    if pending_start > len(generated):
        raise _field_error(
            "pending_turn_start",
            f"{pending_start} is past the end of generated_items ({len(generated)} items)",
        )
    interruptions = _load_interruptions(
        data["interruptions"], None, tuple(generated), pending_start
    )
    _load_approvals(data["approvals"], {item.call_id for item in interruptions})


def _check_item(value: Any, path: str) -> None:
    """``value`` is an item: a dict with a string type or role (on JSON data, where
    looking up a key calls no code of its keys)."""
    if type(value) is not dict:
        raise _field_error(path, f"expected an object, got {kind_name(value)}")
    if type(value.get("type")) is not str and type(value.get("role")) is not str:
        raise _field_error(path, "an item needs a string 'type' or 'role'")


def _load_item(value: Any, path: str) -> dict[str, Any]:
    """A JSON-data copy of an item, checked on the copy (exact dicts and strs, so
    that looking its keys up calls none of the data's own methods)."""
    if type(value) is not dict:
        raise _field_error(path, f"expected an object, got {kind_name(value)}")
    item: dict[str, Any] = _json_data(value, path)
    _check_item(item, path)
    return item


def _load_items(value: Any, path: str) -> tuple[dict[str, Any], ...]:
    if type(value) is not list:
        raise _field_error(path, f"expected an array, got {kind_name(value)}")
    return tuple(_load_item(item, f"{path}[{index}]") for index, item in enumerate(value))


def _load_int(value: Any, path: str, *, minimum: int) -> int:
    """A count of the format itself: an exact int (JSON data, or what ``_int_data``
    read) of at least ``minimum``."""
    if type(value) is not int:
        raise _field_error(path, f"expected an integer, got {kind_name(value)}")
    number: int = value
    if number < minimum:
        raise _field_error(path, f"must be at least {minimum}, got {_show(number)}")
    problem = _long_int_problem(number)
    if problem is not None:
        raise _field_error(path, problem)
    return number


def _load_responses(value: Any) -> tuple[ModelResponse, ...]:
    if type(value) is not list:
        raise _field_error("model_responses", f"expected an array, got {kind_name(value)}")
    responses: list[ModelResponse] = []
    for index, entry in enumerate(value):
        path = f"model_responses[{index}]"
        if type(entry) is not dict:
            raise _field_error(path, f"expected an object, got {kind_name(entry)}")
        _check_fields(entry, _RESPONSE_FIELDS, path)
        usage = entry["usage"]
        if type(usage) is not dict:
            raise _field_error(f"{path}.usage", f"expected an object, got {kind_name(usage)}")
        _check_fields(usage, _USAGE_FIELDS, f"{path}.usage")
        counts = {
            name: _load_int(usage[name], f"{path}.usage.{name}", minimum=0)
            for name in _USAGE_FIELDS
        }
        response_id = _optional_str(entry["response_id"], f"{path}.response_id")
        output = list(_load_items(entry["output"], f"{path}.output"))
        responses.append(
            ModelResponse(output=output, usage=Usage(**counts), response_id=response_id)
        )
    return tuple(responses)


def _load_interruptions(
    value: Any, agent: Agent | None, generated: tuple[dict[str, Any], ...], pending_start: int
) -> tuple[ToolApprovalItem, ...]:
    """The pending calls: function calls of the paused turn, each listed once, of
    tools ``agent`` has (not checked without one)."""
    if type(value) is not list:
        raise _field_error("interruptions", f"expected an array, got {kind_name(value)}")
    # Items are the model's data: a call id that is no string names no pending call.
    calls_of_paused_turn = {
        item["call_id"]
        for item in generated[pending_start:]
        if item.get("type") == "function_call" and type(item.get("call_id")) is str
    }
    items: list[ToolApprovalItem] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        path = f"interruptions[{index}]"
        raw = _load_item(entry, path)
        if raw.get("type") != "function_call":
            raise _field_error(f"{path}.type", "expected 'function_call'")
        for name in ("name", "call_id", "arguments"):
            if type(raw.get(name)) is not str:
                raise _field_error(
                    f"{path}.{name}", f"expected a string, got {kind_of(raw.get(name))}"
                )
        if agent is not None and agent.get_tool(raw["name"]) is None:
            raise _field_error(
                f"{path}.name", f"agent {agent.name!r} has no tool {_show(raw['name'])}"
            )
        if raw["call_id"] in seen:
            raise _field_error(f"{path}.call_id", f"call {_show(raw['call_id'])} is listed twice")
        if raw["call_id"] not in calls_of_paused_turn:
            raise _field_error(
                f"{path}.call_id",
                f"call {_show(raw['call_id'])} is not a function call of the paused turn "
                "(generated_items from pending_turn_start)",
            )
        seen.add(raw["call_id"])
        items.append(ToolApprovalItem(raw))
    return tuple(items)


def _load_approvals(value: Any, pending: set[str]) -> dict[str, ApprovalDecision]:
    if type(value) is not dict:
        raise _field_error("approvals", f"expected an object, got {kind_name(value)}")
    _check_keys(value, "approvals")
    decisions: dict[str, ApprovalDecision] = {}
    for call_id, entry in value.items():
        path = f"approvals.{call_id}"
        if _text(call_id, path) not in pending:
            raise _field_error(path, "no pending interruption has this call id")
        if type(entry) is not dict:
            raise _field_error(path, "expected an object with 'approved' and 'message'")
        try:
            _check_fields(entry, _APPROVAL_FIELDS, path)
        except RunStateError:
            raise _field_error(path, "expected an object with 'approved' and 'message'") from None
        if type(entry["approved"]) is not bool:
            raise _field_error(
                f"{path}.approved", f"expected a boolean, got {kind_name(entry['approved'])}"
            )
        message = _optional_str(entry["message"], f"{path}.message")
        decisions[call_id] = ApprovalDecision(entry["approved"], message)
    return decisions
