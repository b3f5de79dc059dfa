"""The canonical content form and content keys, beyond what JSON vectors can express."""

from __future__ import annotations

import collections
import decimal
import enum
import json
import math
from types import ModuleType
from typing import Any

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.examples import examples
from tests.support.strategies import (
    MAX_DEPTH,
    FunctionCallModel,
    big_ints,
    deep_values,
    encodable_text,
    json_values,
    nested_lists,
    plain_json,
    unicode_text,
)

PROPERTY = settings(max_examples=examples(150), deadline=None)


def text_of(engine: ModuleType, value: Any) -> str:
    return bytes(engine.canonical_json(value)).decode("utf-8")


# --- values with no JSON form --------------------------------------------------------


class Weird:
    def __str__(self) -> str:
        return 'say "hi"\n\ud800'


def test_unencodable_values_become_json_strings_of_str(engine: ModuleType) -> None:
    thing = object()
    assert text_of(engine, {"a": thing}) == '{"a":' + json.dumps(str(thing)) + "}"
    assert text_of(engine, {"s": frozenset({1})}) == '{"s":"frozenset({1})"}'
    assert text_of(engine, {"s": {3}}) == '{"s":"{3}"}'
    assert text_of(engine, {"b": b"x\n"}) == '{"b":"b\'x\\\\n\'"}'
    assert text_of(engine, decimal.Decimal("1.50")) == '"1.50"'
    assert text_of(engine, Weird()) == '"say \\"hi\\"\\n\\ud800"'


def test_non_str_keys_are_stringified_then_sorted(engine: ModuleType) -> None:
    assert text_of(engine, {2: "b", 10: "a", None: 0, True: 1}) == (
        '{"10":"a","2":"b","None":0,"True":1}'
    )
    assert text_of(engine, {(1, 2): 0}) == '{"(1, 2)":0}'


def test_subclasses_encode_as_their_base_value(engine: ModuleType) -> None:
    class Text(str):
        def __str__(self) -> str:
            return "wrong"

    class Number(float):
        def __repr__(self) -> str:
            return "wrong"

    class Level(enum.IntEnum):
        HIGH = 3

    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert text_of(engine, {Text("k"): Text("v")}) == '{"k":"v"}'
    assert text_of(engine, [Number(1.5), Level.HIGH]) == "[1.5,3]"
    assert text_of(engine, ordered) == '{"a":2,"b":1}'


def test_tuples_encode_as_arrays(engine: ModuleType) -> None:
    assert engine.canonical_json((1, ("a", None))) == engine.canonical_json([1, ["a", None]])
    assert engine.content_key(()) == engine.content_key([])


# --- numbers -------------------------------------------------------------------------


def test_big_ints_are_exact(engine: ModuleType) -> None:
    for value in (2**64, 2**200, -(2**100) - 1, 10**40 + 1):
        assert text_of(engine, value) == str(value)
        assert text_of(engine, {"n": value}) == f'{{"n":{value}}}'


def test_non_finite_floats_use_bare_tokens(engine: ModuleType) -> None:
    assert text_of(engine, [math.nan, math.inf, -math.inf]) == "[NaN,Infinity,-Infinity]"
    assert engine.content_key(math.nan) == engine.content_key(float("nan"))


def test_content_is_type_sensitive(engine: ModuleType) -> None:
    keys = engine.content_keys([1, 1.0, True, "1", 0.0, -0.0, 0, False, None, [], {}])
    assert len(set(keys)) == len(keys)


# --- strings -------------------------------------------------------------------------


def test_lone_surrogates_are_escaped(engine: ModuleType) -> None:
    assert text_of(engine, "a\ud800b") == '"a\\ud800b"'
    # Two lone surrogates are not the character they would pair into in UTF-16.
    assert text_of(engine, "\ud83d\ude00") == '"\\ud83d\\ude00"'
    assert engine.canonical_json("\U0001f600") == '"\U0001f600"'.encode()
    assert engine.content_key("\ud83d\ude00") != engine.content_key("\U0001f600")
    surrogate_keys = dict([("\udfff", 1), ("\ud800", 2)])  # a literal confuses linters
    assert text_of(engine, surrogate_keys) == '{"\\ud800":2,"\\udfff":1}'


# --- metadata and models -------------------------------------------------------------


def test_metadata_keys_do_not_change_content(engine: ModuleType) -> None:
    base = {"type": "function_call_output", "call_id": "c", "output": "x"}
    tagged = {**base, "_agents_tool_title": "t", "_agents_tool_description": "d"}
    assert engine.content_key(tagged) == engine.content_key(base)
    assert tagged["_agents_tool_title"] == "t"  # the input itself is untouched


def test_models_encode_their_exclude_unset_dump(engine: ModuleType) -> None:
    model = FunctionCallModel(type="function_call", call_id="c1")
    assert text_of(engine, model) == '{"call_id":"c1","type":"function_call"}'
    assert text_of(engine, FunctionCallModel(call_id="c1")) == '{"call_id":"c1"}'
    assert engine.content_key(model) == engine.content_key(
        {"type": "function_call", "call_id": "c1"}
    )


def test_content_key_is_xxh3_128_of_canonical_bytes(engine: ModuleType) -> None:
    items: list[Any] = [{"b": [1, 2.5, None]}, "x", 0, [], FunctionCallModel(call_id="c")]
    keys = engine.content_keys(items)
    for item, key in zip(items, keys, strict=True):
        assert isinstance(key, bytes)
        assert len(key) == 16
        assert key == engine.content_key(item)
        assert key == xxhash.xxh3_128_digest(bytes(engine.canonical_json(item)))


def _compact(value: Any) -> bytes:
    """The canonical text of plain JSON without floats or metadata keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# --- nesting and cycles --------------------------------------------------------------


@pytest.mark.parametrize("wrap", ["list", "dict", "tuple"])
def test_nesting_limit(engine: ModuleType, wrap: str) -> None:
    def nest(levels: int) -> Any:
        value: Any = 0
        for _ in range(levels):
            value = [value] if wrap == "list" else {"k": value} if wrap == "dict" else (value,)
        return value

    for levels in (MAX_DEPTH - 1, MAX_DEPTH):
        assert engine.canonical_json(nest(levels)) == _compact(nest(levels))
    for levels in (MAX_DEPTH + 1, MAX_DEPTH + 2):
        with pytest.raises(ValueError, match=str(MAX_DEPTH)):
            engine.canonical_json(nest(levels))
        with pytest.raises(ValueError, match=str(MAX_DEPTH)):
            engine.content_keys([1, nest(levels)])


def test_max_depth_constant(engine: ModuleType) -> None:
    assert engine.MAX_DEPTH == MAX_DEPTH == 256


def test_very_deep_nesting_raises_instead_of_crashing(engine: ModuleType) -> None:
    with pytest.raises(ValueError):
        engine.canonical_json(nested_lists(100_000))
    with pytest.raises(ValueError):
        engine.content_key({"a": nested_lists(50_000)})


def test_cycles_raise_value_error(engine: ModuleType) -> None:
    looped_list: list[Any] = [1]
    looped_list.append(looped_list)
    looped_dict: dict[str, Any] = {}
    looped_dict["self"] = looped_dict
    via_tuple: tuple[list[Any]] = ([],)
    via_tuple[0].append(via_tuple)
    for value in (looped_list, looped_dict, via_tuple):
        with pytest.raises(ValueError):
            engine.canonical_json(value)
        with pytest.raises(ValueError):
            engine.content_key({"wrapped": value})


# --- properties ----------------------------------------------------------------------


def _paired(text: str) -> str:
    """JSON reads an escaped surrogate pair as one character; mirror that."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _as_json(value: Any) -> Any:
    """What json.loads gives back for a JSON-like value (tuples become lists)."""
    if isinstance(value, dict):
        return {_paired(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, str):
        return _paired(value)
    return value


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_nan(v) for v in value)
    return False


@PROPERTY
@given(value=plain_json(unicode_text, st.floats(allow_nan=False)) | json_values())
def test_canonical_text_is_json_of_the_same_value(engine: ModuleType, value: Any) -> None:
    encoded = engine.canonical_json(value)
    assert isinstance(encoded, bytes)
    decoded = json.loads(encoded)
    if isinstance(value, dict):
        value = {
            k: v
            for k, v in value.items()
            if k not in ("_agents_tool_description", "_agents_tool_title")
        }
    if not _has_nan(value):  # NaN != NaN
        assert decoded == _as_json(value)
    assert engine.canonical_json(decoded) == engine.canonical_json(_as_json(value))


@PROPERTY
@given(value=plain_json(encodable_text, st.floats()))
def test_canonical_text_matches_sorted_compact_json_dumps(engine: ModuleType, value: Any) -> None:
    if isinstance(value, dict):
        value.pop("_agents_tool_description", None)
        value.pop("_agents_tool_title", None)
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert engine.canonical_json(value) == expected.encode("utf-8")


@settings(max_examples=examples(50), deadline=None)
@given(case=deep_values())
def test_deep_values_either_encode_or_raise_value_error(
    engine: ModuleType, case: tuple[int, Any]
) -> None:
    depth, value = case
    if depth <= MAX_DEPTH:
        assert engine.canonical_json(value) == _compact(value)
    else:
        with pytest.raises(ValueError, match=str(MAX_DEPTH)):
            engine.canonical_json(value)


@PROPERTY
@given(value=big_ints)
def test_ints_encode_as_their_decimal_digits(engine: ModuleType, value: int) -> None:
    assert engine.canonical_json(value) == str(value).encode()
