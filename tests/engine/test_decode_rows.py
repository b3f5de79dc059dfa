"""``decode_rows``: a session read's rows decoded in one call, on both engines, against
the loop it stands for (``for (text,) in rows: json.loads(text)``, skipping what
raises ``JSONDecodeError`` or ``TypeError``)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.examples import examples
from tests.support.strategies import big_ints, json_values, unicode_text

PROPERTY = settings(max_examples=examples(300), deadline=None)
SKIPPED = (json.JSONDecodeError, TypeError)


def reference(rows: list[Any], loads: Any = json.loads) -> list[Any]:
    """The SDK's row loop, written out."""
    decoded = []
    for (text,) in rows:
        try:
            decoded.append(loads(text))
        except SKIPPED:
            continue
    return decoded


def outcome(call: Any) -> tuple[Any, ...]:
    try:
        # repr tells 1 from 1.0 and True from 1, and shows NaN (which != itself).
        return ("returned", repr(call()))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


# Texts of every kind a stored row can hold: JSON from any value (NaN, big integers, lone
# surrogates), JSON that orjson refuses or reads differently, junk, and non-text values.
row_texts = st.one_of(
    json_values().map(lambda value: json.dumps(value, ensure_ascii=False)),
    json_values().map(json.dumps),
    big_ints.map(str),
    st.sampled_from(
        [
            "1E400",
            "-1e400",
            "18446744073709551616",
            '{"a": 1, "a": 2}',
            '"\\ud800"',
            "NaN",
            "[Infinity, -Infinity]",
            "[1,]",
            '{"a":1}{"b":2}',
            "\ufeff{}",
            " [] ",
            "",
            "[" * 2000 + "]" * 2000,
        ]
    ),
    unicode_text,
    st.builds(str.encode, st.sampled_from(["{}", "[1]", "nope"])),
    st.sampled_from([None, 5, 1.5]),
)


@PROPERTY
@given(texts=st.lists(row_texts, max_size=12))
def test_rows_decode_as_the_loop_does(pure: ModuleType, core: ModuleType, texts: list[Any]) -> None:
    rows = [(text,) for text in texts]
    expected = outcome(lambda: reference(rows))
    assert outcome(lambda: pure.decode_rows(rows, orjson.loads, json.loads, SKIPPED)) == expected
    assert outcome(lambda: core.decode_rows(rows, orjson.loads, json.loads, SKIPPED)) == expected


def test_fast_decoder_is_skipped_for_long_digit_runs_and_non_str(engine: ModuleType) -> None:
    seen: list[Any] = []

    def fast(text: Any) -> Any:
        seen.append(text)
        return orjson.loads(text)

    rows = [("[1]",), ("12345678901234567890",), (b"[2]",), ('"1234567890123456789"',)]
    assert engine.decode_rows(rows, fast, json.loads, SKIPPED) == [
        [1],
        12345678901234567890,
        [2],
        "1234567890123456789",
    ]
    assert seen == ["[1]"]


def test_exact_decoder_decides_what_the_fast_one_refuses(engine: ModuleType) -> None:
    def fast(text: Any) -> Any:
        raise RuntimeError("not mine")

    rows = [("[1]",), ("NaN",), ("junk",)]
    assert outcome(lambda: engine.decode_rows(rows, fast, json.loads, SKIPPED)) == outcome(
        lambda: [[1], float("nan")]
    )


def test_an_exception_the_loop_does_not_skip_propagates(engine: ModuleType) -> None:
    def exact(text: Any) -> Any:
        raise KeyError(text)

    rows = [("[1]",), ("NaN",)]
    with pytest.raises(KeyError, match="NaN"):
        engine.decode_rows(rows, orjson.loads, exact, SKIPPED)


@pytest.mark.parametrize(
    "rows",
    [
        ("[1]",),
        [["[1]"]],
        [("[1]", "[2]")],
        [()],
        [("[1]",), 5],
    ],
    ids=["tuple-of-rows", "list-row", "two-columns", "empty-row", "not-a-row"],
)
def test_rows_the_loop_would_unpack_otherwise_are_declined(engine: ModuleType, rows: Any) -> None:
    assert engine.decode_rows(rows, orjson.loads, json.loads, SKIPPED) is NotImplemented


def test_list_subclass_rows_are_declined_and_tuple_subclass_rows_too(engine: ModuleType) -> None:
    class Rows(list[Any]):
        pass

    class Row(tuple[Any, ...]):
        pass

    assert engine.decode_rows(Rows([("[1]",)]), orjson.loads, json.loads, SKIPPED) is (
        NotImplemented
    )
    assert engine.decode_rows([Row(("[1]",))], orjson.loads, json.loads, SKIPPED) is (
        NotImplemented
    )


def test_skipped_must_be_a_tuple_with_the_same_error(pure: ModuleType, core: ModuleType) -> None:
    errors = []
    for engine in (pure, core):
        with pytest.raises(TypeError) as caught:
            engine.decode_rows([], orjson.loads, json.loads, [TypeError])
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "skipped" in errors[0]
