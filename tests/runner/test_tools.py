"""``@function_tool``: schema from type hints and docstrings, argument checking and
conversion, approval predicates, and output text."""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Sequence
from typing import Any, Literal

import pytest

from histcore.exceptions import ModelBehaviorError, UserError
from histcore.runner.tool import (
    FunctionTool,
    ToolArgumentsError,
    default_tool_error_function,
    function_tool,
    tool_output_text,
)


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


@function_tool
def forecast(
    city: str,
    days: int,
    unit: Unit,
    hourly: bool,
    detail: Literal["short", "long"],
    stations: list[str],
    window: tuple[float, ...],
    note: str | None,
) -> dict[str, Any]:
    """Get the weather forecast.

    Looks the city up first.

    Args:
        city: Name of the city,
            as the user wrote it.
        days (int): How many days.
        unit: Temperature unit.

    Returns:
        The forecast.
    """
    return {
        "city": city,
        "days": days,
        "unit": unit,
        "hourly": hourly,
        "detail": detail,
        "stations": stations,
        "window": window,
        "note": note,
    }


def test_schema_from_type_hints_and_docstring() -> None:
    assert forecast.name == "forecast"
    assert forecast.description == "Get the weather forecast. Looks the city up first."
    schema = forecast.params_json_schema
    assert schema["required"] == [
        "city",
        "days",
        "unit",
        "hourly",
        "detail",
        "stations",
        "window",
        "note",
    ]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["city"] == {
        "type": "string",
        "description": "Name of the city, as the user wrote it.",
    }
    assert props["days"] == {"type": "integer", "description": "How many days."}
    assert props["unit"] == {"enum": ["c", "f"], "description": "Temperature unit."}
    assert props["hourly"] == {"type": "boolean"}
    assert props["detail"] == {"enum": ["short", "long"]}
    assert props["stations"] == {"type": "array", "items": {"type": "string"}}
    assert props["window"] == {"type": "array", "items": {"type": "number"}}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert forecast.strict_json_schema is True
    assert forecast.to_model_tool() == {
        "type": "function",
        "name": "forecast",
        "description": forecast.description,
        "parameters": schema,
        "strict": True,
    }


async def test_arguments_are_checked_and_converted() -> None:
    arguments = (
        '{"city": "Oslo", "days": 3.0, "unit": "c", "hourly": false, "detail": "short",'
        ' "stations": ["a"], "window": [1, 2.5], "note": null}'
    )
    output = await forecast.run(arguments)
    assert output == (
        '{"city":"Oslo","days":3,"unit":"c","hourly":false,"detail":"short",'
        '"stations":["a"],"window":[1.0,2.5],"note":null}'
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{bad", "arguments are not valid JSON"),
        ("[1]", "arguments must be a JSON object, not list"),
        ('{"city": "Oslo"}', "missing required argument 'days'"),
        ('{"zzz": 1}', "unexpected argument 'zzz'"),
    ],
)
async def test_argument_shape_errors(arguments: str, message: str) -> None:
    # With the default failure function the model gets the message as the output...
    assert message in await forecast.run(arguments)
    # ...and without one the error is raised.
    raising = dataclasses.replace(forecast, failure_error_function=None)
    with pytest.raises(ToolArgumentsError, match=re.escape(message)):
        await raising.run(arguments)


VALID = {
    "city": "Oslo",
    "days": 1,
    "unit": "c",
    "hourly": True,
    "detail": "long",
    "stations": [],
    "window": [],
    "note": None,
}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("city", 3, "city: expected a string, got a number"),
        ("days", True, "days: expected an integer, got a boolean"),
        ("days", 1.5, "days: expected an integer, got a number"),
        ("unit", "kelvin", "unit: expected one of ['c', 'f']"),
        ("hourly", "yes", "hourly: expected a boolean, got a string"),
        ("detail", "medium", "detail: expected one of ['short', 'long']"),
        ("stations", "a", "stations: expected an array, got a string"),
        ("stations", ["a", 2], "stations[1]: expected a string, got a number"),
        ("window", [True], "window[0]: expected a number, got a boolean"),
        ("note", 5, "note: expected a string, got a number or note: expected null"),
    ],
)
async def test_argument_type_errors(field: str, value: Any, message: str) -> None:
    with pytest.raises(ToolArgumentsError, match=re.escape(message)):
        await forecast.on_invoke_tool({**VALID, field: value})
    assert issubclass(ToolArgumentsError, ModelBehaviorError)


def test_defaults_and_free_form_types_turn_strict_mode_off() -> None:
    @function_tool
    def with_default(query: str, limit: int = 10) -> str:
        return query

    @function_tool
    def free_form(options: dict[str, int], anything: Any) -> str:
        return ""

    assert with_default.params_json_schema["required"] == ["query"]
    assert with_default.strict_json_schema is False
    assert free_form.params_json_schema["properties"]["options"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert free_form.params_json_schema["properties"]["anything"] == {}
    assert free_form.strict_json_schema is False

    @function_tool(strict_mode=False)
    def loose(x: int) -> int:
        return x

    assert loose.strict_json_schema is False


async def test_defaults_apply_when_arguments_are_left_out() -> None:
    @function_tool
    async def search(query: str, limit: int = 10, *, exact: bool = False) -> str:
        return f"{query}:{limit}:{exact}"

    assert await search.run('{"query": "q"}') == "q:10:False"
    assert await search.run('{"query": "q", "limit": 2, "exact": true}') == "q:2:True"
    assert await search.run("") == (
        "Invalid arguments for tool 'search': missing required argument 'query'"
    )


async def test_positional_only_parameters_are_passed_by_position() -> None:
    @function_tool
    def power(base: float, /, exponent: int = 2) -> float:
        return base**exponent

    assert await power.run('{"base": 3}') == "9.0"


def test_overrides_and_sequence_hints() -> None:
    @function_tool(name_override="lookup_v2", description_override="Find things.")
    def lookup(keys: Sequence[int]) -> list[int]:
        return list(keys)

    assert lookup.name == "lookup_v2"
    assert lookup.description == "Find things."
    assert lookup.params_json_schema["properties"]["keys"]["type"] == "array"


@pytest.mark.parametrize(
    ("define", "message"),
    [
        (lambda: function_tool(lambda *args: None), r"\*args and \*\*kwargs"),
        (lambda: function_tool(name_override="bad name!")(lambda: None), "tool name must be"),
        (lambda: function_tool(_takes_set), "unsupported type"),
        (lambda: function_tool(_takes_pair), r"only tuple\[T, \.\.\.\]"),
        (lambda: function_tool(_takes_int_keys), "dict keys must be str"),
        (lambda: function_tool(42), "expects a function"),  # type: ignore[call-overload]
    ],
)
def test_unusable_functions_are_rejected_at_decoration(define: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        define()


def _takes_set(values: set[int]) -> None: ...


def _takes_pair(pair: tuple[int, str]) -> None: ...


def _takes_int_keys(mapping: dict[int, str]) -> None: ...


async def test_approval_predicates() -> None:
    @function_tool(needs_approval=lambda args: args.get("amount", 0) > 100)
    def pay(amount: int) -> str:
        return "paid"

    async def check(args: dict[str, Any]) -> bool:
        return bool(args["dangerous"])

    @function_tool(needs_approval=check)
    def act(dangerous: bool) -> str:
        return "done"

    @function_tool(needs_approval=lambda args: "yes")  # type: ignore[arg-type,return-value]
    def confused() -> str:
        return ""

    assert await pay.requires_approval('{"amount": 500}') is True
    assert await pay.requires_approval('{"amount": 5}') is False
    assert await pay.requires_approval("{broken") is False  # it will fail, not run
    assert await act.requires_approval('{"dangerous": true}') is True
    with pytest.raises(UserError, match="needs_approval returned str, expected bool"):
        await confused.requires_approval("{}")


def test_function_tool_checks_its_fields() -> None:
    async def invoke(arguments: dict[str, Any]) -> Any:
        return None

    tool = FunctionTool("raw", "A raw tool.", {"type": "object"}, invoke)
    assert tool.needs_approval is False
    assert tool.failure_error_function is not None
    with pytest.raises(UserError, match="params_json_schema must be a dict"):
        FunctionTool("raw", "", [], invoke)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="needs_approval must be a bool or a callable"):
        FunctionTool("raw", "", {}, invoke, needs_approval="yes")  # type: ignore[arg-type]


def test_output_text() -> None:
    assert tool_output_text("plain") == "plain"
    assert tool_output_text(None) == ""
    assert tool_output_text(3) == "3"
    assert tool_output_text(True) == "true"
    assert tool_output_text({"a": [1, 2], 3: "x"}) == '{"a":[1,2],"3":"x"}'
    assert tool_output_text(Unit.CELSIUS) == "Unit.CELSIUS"
    assert default_tool_error_function("t", KeyError("k")) == (
        "Tool 't' failed (KeyError). Please try again."
    )
