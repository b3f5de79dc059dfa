"""Function tools: ``@function_tool`` turns a typed Python function into a tool the
model can call, with a JSON schema built from its type hints and docstring.

Arguments the model sends are checked against the same type hints before the function
runs; a bad call (invalid JSON, a missing or unexpected argument, a wrong type) never
reaches the function and, like an exception the function raises, becomes an error
text the model sees as the call's output (``failure_error_function``).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
import logging
import math
import re
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

import orjson

from histcore.engine import exact_json
from histcore.engine.exact_json import kind_of
from histcore.engine.items import MAX_DEPTH
from histcore.engine.wording import a_type_name
from histcore.exceptions import ModelBehaviorError, UserError

__all__ = [
    "ApprovalPredicate",
    "FunctionTool",
    "ToolApprovalItem",
    "ToolArgumentsError",
    "ToolErrorFunction",
    "default_tool_error_function",
    "encode_arguments",
    "function_tool",
]

logger = logging.getLogger("histcore")

#: Decides per call whether a tool call needs approval; gets the parsed arguments.
ApprovalPredicate = Callable[[dict[str, Any]], bool | Awaitable[bool]]
#: Turns a failed tool call into the text the model sees: ``(tool_name, error) -> str``.
ToolErrorFunction = Callable[[str, Exception], str]

_F = TypeVar("_F", bound=Callable[..., Any])
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolArgumentsError(ModelBehaviorError, ValueError):
    """The model called a tool with arguments that do not fit its parameters."""


def default_tool_error_function(tool_name: str, error: Exception) -> str:
    """The output the model sees when a tool fails: the error kind, not its message,
    so internal details are not leaked to the model (argument errors are the model's
    own input, so their message is shown to let it correct the call)."""
    if isinstance(error, ToolArgumentsError):
        return f"Invalid arguments for tool {tool_name!r}: {error}"
    return f"Tool {tool_name!r} failed ({type(error).__name__}). Please try again."


@dataclass(frozen=True)
class ApprovalDecision:
    """The caller's decision on one pending tool call."""

    approved: bool
    message: str | None = None


@dataclass(frozen=True)
class ToolApprovalItem:
    """A function call waiting for the caller's approval (see ``RunState.approve``)."""

    raw_item: dict[str, Any]
    """The ``function_call`` item the model produced."""

    type: Literal["tool_approval_item"] = "tool_approval_item"

    @property
    def name(self) -> str:
        return str(self.raw_item["name"])

    @property
    def call_id(self) -> str:
        return str(self.raw_item["call_id"])

    @property
    def arguments(self) -> str:
        return str(self.raw_item.get("arguments", ""))


@dataclass(frozen=True)
class FunctionTool:
    """A tool backed by a Python callable.

    ``on_invoke_tool`` receives the arguments object the model sent (already parsed from
    JSON) and returns the tool's result, which is turned into the output text.
    """

    name: str
    description: str
    params_json_schema: dict[str, Any]
    on_invoke_tool: Callable[[dict[str, Any]], Awaitable[Any]]
    needs_approval: bool | ApprovalPredicate = False
    strict_json_schema: bool = True
    failure_error_function: ToolErrorFunction | None = field(default=default_tool_error_function)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.match(self.name):
            raise UserError(
                f"tool name must be 1-64 letters, digits, '_' or '-', not {self.name!r}"
            )
        if not isinstance(self.params_json_schema, dict):
            raise UserError(f"tool {self.name!r}: params_json_schema must be a dict")
        if not callable(self.on_invoke_tool):
            raise UserError(f"tool {self.name!r}: on_invoke_tool must be callable")
        if not isinstance(self.needs_approval, bool) and not callable(self.needs_approval):
            raise UserError(f"tool {self.name!r}: needs_approval must be a bool or a callable")

    def to_model_tool(self) -> dict[str, Any]:
        """The Responses-API definition of this tool."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.params_json_schema,
            "strict": self.strict_json_schema,
        }

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """The call's JSON arguments as a dict (an empty string means no arguments);
        what ``encode_arguments`` wrote comes back exactly."""
        if not arguments.strip():
            return {}
        try:
            parsed = _decode_arguments(arguments)
        except ValueError as exc:
            raise ToolArgumentsError(f"arguments are not valid JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise ToolArgumentsError(
                f"arguments must be a JSON object, not {type(parsed).__name__}"
            )
        return parsed

    async def requires_approval(self, arguments: str) -> bool:
        """Whether this call must be approved before it runs. Calls whose arguments do
        not parse never run anyway (they get an error output), so they need none."""
        if isinstance(self.needs_approval, bool):
            return self.needs_approval
        try:
            parsed = self.parse_arguments(arguments)
        except ToolArgumentsError:
            return False
        decision = self.needs_approval(parsed)
        if inspect.isawaitable(decision):
            decision = await decision
        if not isinstance(decision, bool):
            raise UserError(
                f"tool {self.name!r}: needs_approval returned {type(decision).__name__}, "
                "expected bool"
            )
        return decision

    async def run(self, arguments: str) -> str:
        """Run one call and return its output text. Failures become the text of
        ``failure_error_function``; without one they propagate (argument errors as
        ``ToolArgumentsError``)."""
        try:
            result = await self.on_invoke_tool(self.parse_arguments(arguments))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self.failure_error_function is None:
                raise
            logger.warning("tool %r failed", self.name, exc_info=True)
            return self.failure_error_function(self.name, exc)
        return tool_output_text(result)


def encode_arguments(arguments: Mapping[str, Any]) -> str:
    """The JSON text of a call's ``arguments``, which ``parse_arguments`` reads back as
    exactly these values (as the ``arguments`` of a ``function_call`` item).

    A value JSON has no form for raises ``TypeError`` naming its path
    (``arguments.when``): a ``datetime``, ``date``, ``UUID``, ``Decimal``, a plain
    ``Enum`` member, a dataclass, a set, bytes, a non-str key or any other object,
    none of which ``json`` writes. A value JSON would change raises ``ValueError``
    naming it: a non-finite float, an integer too long to write as text, nesting
    deeper than ``MAX_DEPTH``. Tuples are written as arrays and subclasses of str,
    int and float (``str`` and ``int`` enums) as their plain value, as ``json`` writes
    them; a lone surrogate (``os.fsdecode`` of a file name) round-trips.
    """
    if not isinstance(arguments, Mapping):
        raise TypeError(f"arguments must be a mapping, not {type(arguments).__name__}")
    return exact_json.dumps(_plain_arguments(dict(arguments), "arguments", 0)).decode()


def _decode_arguments(text: str) -> Any:
    """The value of JSON text: orjson first; what it refuses goes to ``json`` with NaN
    and Infinity refused (a lone surrogate's escape, as ``encode_arguments`` writes
    it, is read only by ``json``). Raises ValueError for text that is not JSON."""
    try:
        return exact_json.loads_strict(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _plain_arguments(value: Any, path: str, depth: int) -> Any:  # noqa: C901 (one flat branch per JSON kind)
    """A JSON-data copy of ``value`` that ``json`` writes and reads back unchanged."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if not -(2**63) <= value < 2**64:
            try:
                int.__repr__(value)
            except ValueError:
                raise ValueError(
                    f"{path}: an integer of more than {sys.get_int_max_str_digits()} digits "
                    "cannot be written as JSON text"
                ) from None
        return value
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} cannot be stored in JSON")
        return value
    if kind is dict or kind is list or kind is tuple:
        if depth >= MAX_DEPTH:
            raise ValueError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if kind is not dict:
            return [
                _plain_arguments(member, f"{path}[{index}]", depth + 1)
                for index, member in enumerate(value)
            ]
        out: dict[str, Any] = {}
        for key, member in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{path}: {a_type_name(key)} key is not a string (JSON would write it as one)"
                )
            key = str.__str__(key)
            if key in out:
                raise ValueError(f"{path}: key {key!r} is there twice")
            out[key] = _plain_arguments(member, f"{path}.{key}", depth + 1)
        return out
    # Subclasses of the JSON scalars keep their plain value, as json writes them; a
    # plain Enum member is none of them.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _plain_arguments(int.__index__(value), path, depth)
    if isinstance(value, float):
        return _plain_arguments(float.__float__(value), path, depth)
    raise TypeError(f"{path}: {type(value).__name__} is not JSON data")


def tool_output_text(value: Any) -> str:
    """The text the model sees for a tool's return value: str as is, None as empty,
    JSON for numbers, bools, lists and dicts, ``str()`` for anything else."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, list, tuple, dict)):
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
        except TypeError:  # integers beyond 64 bits: the standard library writes them
            pass
        try:
            return json.dumps(value, default=str)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


# --- the decorator -------------------------------------------------------------------


@overload
def function_tool(func: _F, /) -> FunctionTool: ...


@overload
def function_tool(
    *,
    name_override: str | None = None,
    description_override: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    failure_error_function: ToolErrorFunction | None = default_tool_error_function,
    strict_mode: bool = True,
) -> Callable[[_F], FunctionTool]: ...


def function_tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name_override: str | None = None,
    description_override: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    failure_error_function: ToolErrorFunction | None = default_tool_error_function,
    strict_mode: bool = True,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a ``FunctionTool`` from a function (sync or async), usable bare
    (``@function_tool``) or with options (``@function_tool(needs_approval=True)``).

    The parameter schema comes from the type hints: ``str``, ``int``, ``float``,
    ``bool``, ``None``, ``list[T]``/``Sequence[T]``/``tuple[T, ...]``, ``dict[str, T]``,
    ``Literal[...]``, ``Enum`` subclasses and unions of these (``T | None``). The
    description is the docstring's text before its sections; Google-style ``Args:``
    entries describe the parameters. ``strict_mode`` asks the model for strict schema
    adherence when the schema allows it (every parameter required, no free-form
    objects). Sync functions run in a worker thread so calls of one turn overlap.
    """

    def build(target: Callable[..., Any]) -> FunctionTool:
        return _build_tool(
            target,
            name_override=name_override,
            description_override=description_override,
            needs_approval=needs_approval,
            failure_error_function=failure_error_function,
            strict_mode=strict_mode,
        )

    if func is not None:
        return build(func)
    return build


def _build_tool(
    func: Callable[..., Any],
    *,
    name_override: str | None,
    description_override: str | None,
    needs_approval: bool | ApprovalPredicate,
    failure_error_function: ToolErrorFunction | None,
    strict_mode: bool,
) -> FunctionTool:
    if not callable(func):
        raise UserError(f"function_tool expects a function, not {type(func).__name__}")
    name = name_override or str(getattr(func, "__name__", ""))
    where = f"function_tool {name!r}"
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # unresolvable forward references and the like
        raise UserError(f"{where}: cannot read its type hints ({exc})") from exc
    summary, param_docs = _parse_docstring(inspect.getdoc(func) or "")
    signature = inspect.signature(func)

    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, _Converter] = {}
    positional_only: list[str] = []
    strict = strict_mode
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(f"{where}: *args and **kwargs parameters are not supported")
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(param.name)
        annotation = hints.get(param.name, Any)
        schema, converter, strict_ok = _schema_for(annotation, f"{where}, parameter {param.name!r}")
        if param.name in param_docs:
            schema = {**schema, "description": param_docs[param.name]}
        properties[param.name] = schema
        converters[param.name] = converter
        if param.default is param.empty:
            required.append(param.name)
        else:
            strict = False
        strict = strict and strict_ok
    params_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    is_async = inspect.iscoroutinefunction(func)

    async def invoke(arguments: dict[str, Any]) -> Any:
        unexpected = sorted(set(arguments) - set(properties))
        if unexpected:
            raise ToolArgumentsError(f"unexpected argument {unexpected[0]!r}")
        kwargs: dict[str, Any] = {}
        for key in required:
            if key not in arguments:
                raise ToolArgumentsError(f"missing required argument {key!r}")
        for key, value in arguments.items():
            kwargs[key] = converters[key](value, key)
        args = [kwargs.pop(key) for key in positional_only if key in kwargs]
        if is_async:
            return await func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)

    return FunctionTool(
        name=name,
        description=description_override if description_override is not None else summary,
        params_json_schema=params_schema,
        on_invoke_tool=invoke,
        needs_approval=needs_approval,
        strict_json_schema=strict,
        failure_error_function=failure_error_function,
    )


# --- schema and argument conversion from type hints ----------------------------------

#: Checks one argument value (``path`` names it in errors) and returns it converted.
_Converter = Callable[[Any, str], Any]
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Yields|Raises|Examples?|Notes?):\s*$"
)
_PARAM_LINE = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_ARGS_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params"})


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section) and Google-style ``Args:`` entries.

    ``doc`` is dedented (``inspect.getdoc``), so section headers start at column 0; in
    the Args section, lines at the first entry's indent start entries, deeper ones
    continue them.
    """
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for raw in doc.splitlines():
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        header = _SECTION.match(line)
        if header and indent == 0:
            section, entry_indent, current = header.group(1), None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in _ARGS_SECTIONS or not line:
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _PARAM_LINE.match(line)
        if match and indent <= entry_indent:
            current = match.group(1).lstrip("*")
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line}".strip()
    return " ".join(" ".join(summary).split()), params


def _schema_for(annotation: Any, where: str) -> tuple[dict[str, Any], _Converter, bool]:  # noqa: C901 (one flat branch per JSON kind)
    """JSON schema, argument converter and strict-mode compatibility of a type hint."""
    if annotation is Any:
        return {}, _identity, False
    if annotation is None or annotation is type(None):
        return {"type": "null"}, _expect_none, True
    if annotation is str:
        return {"type": "string"}, _expect_str, True
    if annotation is bool:
        return {"type": "boolean"}, _expect_bool, True
    if annotation is int:
        return {"type": "integer"}, _expect_int, True
    if annotation is float:
        return {"type": "number"}, _expect_float, True
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return _literal_schema(args, where)
    if origin is typing.Union or origin is types.UnionType:
        return _union_schema(args, where)
    if origin in (list, Sequence, tuple) or annotation in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise UserError(f"{where}: only tuple[T, ...] tuples are supported, not {annotation}")
        item_type = args[0] if args else Any
        item_schema, item_converter, strict_ok = _schema_for(item_type, where)
        make = tuple if origin is tuple or annotation is tuple else list

        def convert_array(value: Any, path: str) -> Any:
            if not isinstance(value, list):
                raise ToolArgumentsError(f"{path}: expected an array, got {kind_of(value)}")
            return make(item_converter(v, f"{path}[{i}]") for i, v in enumerate(value))

        return {"type": "array", "items": item_schema}, convert_array, strict_ok
    if origin in (dict, Mapping) or annotation is dict:
        if args and args[0] is not str:
            raise UserError(f"{where}: dict keys must be str, not {args[0]}")
        value_schema, value_converter, _ = _schema_for(args[1] if args else Any, where)

        def convert_object(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise ToolArgumentsError(f"{path}: expected an object, got {kind_of(value)}")
            return {k: value_converter(v, f"{path}.{k}") for k, v in value.items()}

        return {"type": "object", "additionalProperties": value_schema}, convert_object, False
    raise UserError(f"{where}: unsupported type {annotation!r}")


def _enum_schema(enum_type: type[enum.Enum]) -> tuple[dict[str, Any], _Converter, bool]:
    values = [member.value for member in enum_type]

    def convert(value: Any, path: str) -> Any:
        try:
            return enum_type(value)
        except ValueError:
            raise ToolArgumentsError(f"{path}: expected one of {values!r}") from None

    return {"enum": values}, convert, True


def _literal_schema(
    options: tuple[Any, ...], where: str
) -> tuple[dict[str, Any], _Converter, bool]:
    if not all(isinstance(o, (str, int, float, bool)) or o is None for o in options):
        raise UserError(f"{where}: Literal values must be str, int, float, bool or None")
    allowed = list(options)

    def convert(value: Any, path: str) -> Any:
        for option in allowed:
            if value == option and type(value) is type(option):
                return option
        raise ToolArgumentsError(f"{path}: expected one of {allowed!r}")

    return {"enum": allowed}, convert, True


def _union_schema(members: tuple[Any, ...], where: str) -> tuple[dict[str, Any], _Converter, bool]:
    parts = [_schema_for(member, where) for member in members]

    def convert(value: Any, path: str) -> Any:
        errors: list[str] = []
        for _, converter, _ in parts:
            try:
                return converter(value, path)
            except ToolArgumentsError as exc:
                errors.append(str(exc))
        raise ToolArgumentsError(" or ".join(errors))

    schema = {"anyOf": [schema for schema, _, _ in parts]}
    return schema, convert, all(ok for _, _, ok in parts)


def _identity(value: Any, path: str) -> Any:
    return value


def _expect_none(value: Any, path: str) -> None:
    if value is not None:
        raise ToolArgumentsError(f"{path}: expected null, got {kind_of(value)}")


def _expect_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ToolArgumentsError(f"{path}: expected a string, got {kind_of(value)}")
    return value


def _expect_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ToolArgumentsError(f"{path}: expected a boolean, got {kind_of(value)}")
    return value


def _expect_int(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # JSON has one number type: 3.0 is the integer 3.
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    raise ToolArgumentsError(f"{path}: expected an integer, got {kind_of(value)}")


def _expect_float(value: Any, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ToolArgumentsError(f"{path}: expected a number, got {kind_of(value)}")
