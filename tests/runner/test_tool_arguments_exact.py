"""Tool call arguments as JSON text: ``encode_arguments`` writes only what
``parse_arguments`` reads back exactly, and refuses the rest naming the argument."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import math
import os
import re
import uuid
from typing import Any

import pytest

from histcore.engine.items import MAX_DEPTH
from histcore.runner.agent import Agent
from histcore.runner.run import Runner
from histcore.runner.tool import encode_arguments, function_tool
from histcore.testing import ScriptedModel, function_call, text_message

FILE_NAME = os.fsdecode(b"report-\xe9.txt")  # 'report-\udce9.txt'
seen: list[Any] = []


@function_tool
def open_file(path: str, options: dict[str, Any] | None = None) -> str:
    seen.append((path, options))
    return "opened"


class Plain(enum.Enum):
    RED = "red"


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"path": FILE_NAME},
        {"path": "x", "options": {FILE_NAME: [FILE_NAME, "\ud800"], "n": 2**64 + 1}},
        {"path": "é€😀", "options": {"f": 0.1, "z": -0.0, "big": -(10**100), "t": True, "n": None}},
        {"path": "x", "options": {"deep": [[[[[]]]]], "tuple": (1, (2, 3))}},
    ],
)
def test_what_is_written_is_read_back_exactly(arguments: dict[str, Any]) -> None:
    text = encode_arguments(arguments)
    parsed = open_file.parse_arguments(text)
    expected = {
        **arguments,
        **(
            {"options": {**arguments["options"], "tuple": [1, [2, 3]]}}
            if "tuple" in arguments.get("options", {})
            else {}
        ),
    }
    assert parsed == expected
    assert encode_arguments(parsed) == text


def test_scalar_subclasses_are_written_as_their_plain_values() -> None:
    text = encode_arguments({"color": Color.RED, "level": Level.HIGH})
    parsed = open_file.parse_arguments(text)
    assert parsed == {"color": "red", "level": 3}
    assert type(parsed["color"]) is str
    assert type(parsed["level"]) is int


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"when": datetime.datetime(2024, 1, 2, 3, 4, 5)}, "arguments.when"),
        ({"when": datetime.date(2024, 1, 2)}, "arguments.when"),
        ({"at": datetime.time(3, 4)}, "arguments.at"),
        ({"id": uuid.UUID(int=1)}, "arguments.id"),
        ({"amount": decimal.Decimal("1.10")}, "arguments.amount"),
        ({"color": Plain.RED}, "arguments.color"),
        ({"point": Point(1)}, "arguments.point"),
        ({"tags": {"a", "b"}}, "arguments.tags"),
        ({"data": b"raw"}, "arguments.data"),
        ({"options": {1: "a", "1": "b"}}, "arguments.options"),
        ({"options": {"nested": [{(1, 2): "x"}]}}, "arguments.options.nested[0]"),
        ({"options": {10**5000: 1}}, "arguments.options"),
        ({"objects": [object()]}, "arguments.objects[0]"),
    ],
)
def test_values_json_has_no_form_for_are_a_type_error_naming_them(
    arguments: dict[str, Any], path: str
) -> None:
    with pytest.raises(TypeError, match=re.escape(f"{path}:")):
        encode_arguments(arguments)


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"x": math.nan}, "arguments.x"),
        ({"x": [math.inf]}, "arguments.x[0]"),
        ({"x": 10**5000}, "arguments.x"),
        ({"x": _deep(MAX_DEPTH + 1)}, "arguments.x"),
    ],
)
def test_values_json_would_change_are_a_value_error_naming_them(
    arguments: dict[str, Any], path: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{path}")):
        encode_arguments(arguments)


def test_only_mappings_are_arguments() -> None:
    with pytest.raises(TypeError, match="arguments must be a mapping"):
        encode_arguments([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"a": ' + "[" * 100_000 + "1" * 30, '{"a": NaN}'],
)
def test_text_that_cannot_be_read_is_an_argument_error(text: str) -> None:
    from histcore.runner.tool import ToolArgumentsError

    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        open_file.parse_arguments(text)


async def test_a_file_name_with_a_lone_surrogate_reaches_the_tool_exactly() -> None:
    # histcore.testing.function_call writes such a dict with json's escapes, as
    # encode_arguments does; both reach the tool as the very same string.
    seen.clear()
    calls = [
        function_call("open_file", {"path": FILE_NAME}, "c1"),
        {
            **function_call("open_file", "{}", "c2"),
            "arguments": encode_arguments({"path": FILE_NAME}),
        },
    ]
    model = ScriptedModel([calls, [text_message("done")]])
    result = await Runner.run(Agent("reader", model=model, tools=[open_file]), "open it")
    assert result.final_output == "done"
    assert seen == [(FILE_NAME, None), (FILE_NAME, None)]
