"""RunState: exact, or a clear error.

* A str holding a surrogate pair as two code points (``"\\ud83d\\ude00"``, length 2)
  cannot be held by JSON text (its escapes read back as the one character ``"😀"``):
  it is refused, when written and when loaded, with ``RunStateError`` naming the
  field, as sessions refuse it. Lone surrogates still round-trip.
* Hostile subclasses of the builtins (methods that raise) given to ``from_json`` end
  as ``RunStateError`` naming the field or, inside items, as a clean load of their
  plain values; no method of theirs is ever called.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.exceptions import RunStateError
from histcore.runner.agent import Agent
from histcore.runner.models.interface import ModelResponse
from histcore.runner.run import Runner
from histcore.runner.run_state import RunState
from histcore.runner.tool import function_tool
from histcore.testing import ScriptedModel, function_call, text_message, user_message
from tests.support.examples import examples

PAIR = "\ud83d\ude00"  # a high and a low surrogate: two code points, not "😀"
LONE = "\udce9"


@function_tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    return f"sent to {to}"


AGENT = Agent("mailer", tools=[send_email])


def paused_state() -> RunState:
    model = ScriptedModel(
        [
            [
                text_message("Sending."),
                function_call("send_email", {"to": "a@b.c", "body": "hi"}, "c1"),
            ]
        ]
    )
    agent = Agent("mailer", model=model, tools=[send_email])
    state = Runner.run_sync(agent, [user_message("mail Bob")]).to_state()
    state.reject(state.interruptions[0], "not now")
    return state


def state_with(**changes: Any) -> RunState:
    base = paused_state()
    approvals = changes.pop("approvals", base.approvals)
    return RunState(dataclasses.replace(base._fields, **changes), approvals)


def has_pair(text: str) -> bool:
    return re.search("[\ud800-\udbff][\udc00-\udfff]", text) is not None


# --- 1. surrogate pairs as two code points -----------------------------------------------


def _item(**extra: Any) -> tuple[dict[str, Any], ...]:
    return ({"role": "user", "content": "x", **extra},)


PAIR_ON_WRITE: list[tuple[str, dict[str, Any], str]] = [
    ("item value", {"original_input": _item(note=f"a{PAIR}b")}, "original_input[0].note"),
    ("item key", {"original_input": _item(**{f"k{PAIR}": 1})}, f"original_input[0].k{PAIR}"),
    (
        "nested value",
        {"original_input": _item(deep=[{"x": [PAIR]}])},
        "original_input[0].deep[0].x[0]",
    ),
    ("string input", {"original_input": f"hi {PAIR}"}, "original_input"),
    ("agent name", {"agent_name": f"mailer{PAIR}"}, "agent.name"),
    (
        "response id",
        {"model_responses": (ModelResponse([], response_id=PAIR),)},
        "model_responses[0].response_id",
    ),
    (
        "response output",
        {"model_responses": (ModelResponse([{"type": "x", "v": PAIR}]),)},
        "model_responses[0].output[0].v",
    ),
]


@pytest.mark.parametrize(
    ("changes", "field"),
    [(changes, field) for _, changes, field in PAIR_ON_WRITE],
    ids=[name for name, _, _ in PAIR_ON_WRITE],
)
def test_a_surrogate_pair_is_refused_when_written(changes: dict[str, Any], field: str) -> None:
    state = state_with(**changes)
    for write in (state.to_json, state.to_string):
        with pytest.raises(RunStateError, match=re.escape(f"RunState field {field!r}")) as caught:
            write()
        assert "surrogate pair" in str(caught.value)


def test_a_surrogate_pair_in_an_approval_message_is_refused_when_written() -> None:
    state = paused_state()
    state.reject(state.interruptions[0], f"no {PAIR}")
    with pytest.raises(RunStateError, match=re.escape("'approvals.c1.message'")):
        state.to_string()


def _set_at(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


PAIR_ON_LOAD: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "item value",
        lambda d: _set_at(d, ("generated_items", 0, "content", 0, "text"), PAIR),
        "generated_items[0].content[0].text",
    ),
    (
        "item key",
        lambda d: _set_at(d, ("original_input", 0, PAIR), 1),
        f"original_input[0].{PAIR}",
    ),
    ("string input", lambda d: _set_at(d, ("original_input",), PAIR), "original_input"),
    (
        "response id",
        lambda d: _set_at(d, ("model_responses", 0, "response_id"), PAIR),
        "model_responses[0].response_id",
    ),
    (
        "approval message",
        lambda d: _set_at(d, ("approvals", "c1", "message"), PAIR),
        "approvals.c1.message",
    ),
    (
        "interruption",
        lambda d: _set_at(d, ("interruptions", 0, "arguments"), PAIR),
        "interruptions[0].arguments",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [(mutate, field) for _, mutate, field in PAIR_ON_LOAD],
    ids=[name for name, _, _ in PAIR_ON_LOAD],
)
def test_a_surrogate_pair_is_refused_when_loaded(
    mutate: Callable[[dict[str, Any]], None], field: str
) -> None:
    data = paused_state().to_json()
    mutate(data)
    with pytest.raises(RunStateError, match=re.escape(f"RunState field {field!r}")):
        RunState.from_json(AGENT, data)
    # The same as text: json.dumps(ensure_ascii=False) leaves the two code points as
    # they are, and json reads them back so.
    text = json.dumps(data, ensure_ascii=False)
    with pytest.raises(RunStateError, match=re.escape(f"RunState field {field!r}")):
        RunState.from_string(AGENT, text)


def test_the_escapes_of_a_pair_read_as_the_one_character_they_encode() -> None:
    data = paused_state().to_json()
    data["generated_items"][0]["content"][0]["text"] = "😀"
    text = json.dumps(data)  # ASCII: "\ud83d\ude00" escapes
    assert "\\ud83d\\ude00" in text
    loaded = RunState.from_string(AGENT, text)
    assert loaded.generated_items[0]["content"][0]["text"] == "😀"
    assert loaded.to_json() == data


surrogate_text = st.text(
    alphabet=st.sampled_from(["\ud83d", "\ude00", "\udbff", "\udc00", LONE, "a", "é", "😀"]),
    max_size=6,
)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(value=surrogate_text, key=surrogate_text)
def test_strings_with_surrogates_round_trip_exactly_or_are_refused(value: str, key: str) -> None:
    state = state_with(original_input=_item(note=value, nested={key: [value]}))
    if has_pair(value) or has_pair(key):
        with pytest.raises(RunStateError, match="surrogate pair") as caught:
            state.to_string()
        assert "original_input[0]" in str(caught.value)
        with pytest.raises(RunStateError, match="surrogate pair"):
            state.to_json()
        return
    data = state.to_json()
    text = state.to_string()
    loaded = RunState.from_string(AGENT, text)
    assert loaded.original_input == state.original_input
    assert loaded.to_json() == data
    assert loaded.to_string() == text


# --- 2. hostile subclasses of the builtins -------------------------------------------------

#: Names of the hostile methods that were called (the loader must call none).
CALLED: list[str] = []


class Hostile(Exception):
    """What every hostile method raises."""


def _hostile(name: str) -> Callable[..., NoReturn]:
    def method(*args: Any, **kwargs: Any) -> NoReturn:
        CALLED.append(name)
        raise Hostile(name)

    return method


def _hostile_class(base: type, name: str, methods: tuple[str, ...], hashable: bool) -> type:
    body: dict[str, Any] = {method: _hostile(f"{name}.{method}") for method in methods}
    if hashable and "__hash__" not in methods:
        body["__hash__"] = base.__hash__  # defining __eq__ would unset it
    return type(name, (base,), body)


_COMPARE = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_TEXT = ("__str__", "__repr__", "__format__")

HOSTILE_STR = [
    _hostile_class(str, "EqStr", _COMPARE, hashable=True),
    _hostile_class(str, "HashStr", ("__hash__",), hashable=False),
    _hostile_class(str, "TextStr", _TEXT, hashable=True),
    _hostile_class(
        str, "SeqStr", ("__len__", "__iter__", "__getitem__", "__contains__"), hashable=True
    ),
    _hostile_class(
        str, "MethodStr", ("startswith", "encode", "isascii", "strip", "join"), hashable=True
    ),
]
HOSTILE_INT = [
    _hostile_class(int, "EqInt", _COMPARE, hashable=True),
    _hostile_class(int, "HashInt", ("__hash__",), hashable=False),
    _hostile_class(int, "NumInt", ("__index__", "__int__", "__bool__", "bit_length"), True),
    _hostile_class(int, "TextInt", _TEXT, hashable=True),
]
HOSTILE_FLOAT = [
    _hostile_class(float, "EqFloat", _COMPARE, hashable=True),
    _hostile_class(float, "NumFloat", ("__float__", "__bool__", "is_integer", *_TEXT), True),
]
HOSTILE_DICT = [
    _hostile_class(dict, "GetDict", ("__getitem__", "__contains__", "get", "__missing__"), False),
    _hostile_class(dict, "IterDict", ("__iter__", "keys", "items", "values"), hashable=False),
    _hostile_class(dict, "LenDict", ("__len__", "__bool__"), hashable=False),
    _hostile_class(dict, "EqDict", _COMPARE, hashable=False),
]
HOSTILE_LIST = [
    _hostile_class(list, "IterList", ("__iter__", "__reversed__"), hashable=False),
    _hostile_class(list, "GetList", ("__getitem__", "__len__", "__bool__"), hashable=False),
    _hostile_class(list, "EqList", _COMPARE, hashable=False),
]


class ClassSpoof:
    """Not a builtin at all, but ``isinstance`` asks its ``__class__``, which raises."""

    __class__ = property(_hostile("ClassSpoof.__class__"))  # type: ignore[assignment]


def _twins(value: Any) -> Iterator[tuple[str, Any]]:
    """``value`` as each hostile class fitting it (same contents), and a bool for an int."""
    kind = type(value)
    families = {str: HOSTILE_STR, int: HOSTILE_INT, float: HOSTILE_FLOAT}
    families.update({dict: HOSTILE_DICT, list: HOSTILE_LIST})
    for cls in families.get(kind, []):
        yield cls.__name__, cls(value)
    if kind is int:
        yield "bool", bool(value)
    yield "ClassSpoof", ClassSpoof()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        members: Any = value.items()
    elif isinstance(value, list):
        members = enumerate(value)
    else:
        return
    for key, member in members:
        path = (*prefix, key)
        yield path
        yield from _paths(member, path)


def _dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


_ITEM_LISTS = {"original_input", "generated_items", "interruptions"}


def _in_an_item(path: tuple[Any, ...]) -> bool:
    """Whether ``path`` is inside an item (the caller's data)."""
    if path[0] in _ITEM_LISTS:
        return len(path) >= 3
    return path[0] == "model_responses" and len(path) >= 5 and path[2] == "output"


def _base_json() -> dict[str, Any]:
    return paused_state().to_json()


BASE = _base_json()


def _cases() -> Iterator[tuple[str, tuple[Any, ...], str, Any]]:
    """``(id, path, how, value)``: every value replaced by each hostile twin, and every
    key by each hostile str twin (``how`` "key"), and the whole data by each hostile
    dict (``how`` "top")."""
    for path in [(), *_paths(BASE)]:
        target: Any = BASE
        for key in path:
            target = target[key]
        if path:
            for name, twin in _twins(target):
                yield f"{_dotted(path)} = {name}", path, "value", twin
        if isinstance(target, dict):
            for key in target:
                for cls in HOSTILE_STR:
                    if cls.__name__ != "HashStr":  # no hash, no dict key
                        yield (
                            f"{_dotted((*path, key))} key {cls.__name__}",
                            (*path, key),
                            "key",
                            cls,
                        )
    for cls in HOSTILE_DICT:
        yield f"top level {cls.__name__}", (), "top", cls


CASES = list(_cases())


def _hostile_data(path: tuple[Any, ...], how: str, value: Any) -> Any:
    data = _base_json()
    if how == "top":
        return value(data)
    parent: Any = data
    for key in path[:-1]:
        parent = parent[key]
    if how == "value":
        parent[path[-1]] = value
    else:  # the key replaced by a hostile str of the same text, in the same place
        members = list(parent.items())
        parent.clear()
        for key, member in members:
            parent[value(key) if key == path[-1] else key] = member
    return data


def _expect_clean(path: tuple[Any, ...], how: str, value: Any) -> bool:
    """Inside items a subclass of str, int or float (and a bool) is read as its plain
    value; everything else hostile is refused."""
    if how == "top" or not path or not _in_an_item(path):
        return False
    return how == "key" or issubclass(type(value), (str, int, float))


def _plain(value: Any) -> Any:
    """The plain value of a subclass of str, int or float, read without its methods."""
    if type(value) is bool:
        return value
    if issubclass(type(value), str):
        return str.__str__(value)
    if issubclass(type(value), float):
        return float.__float__(value)
    return int.__index__(value)


@pytest.mark.parametrize(
    ("path", "how", "value"),
    [(path, how, value) for _, path, how, value in CASES],
    ids=[name for name, _, _, _ in CASES],
)
def test_hostile_subclasses_end_as_run_state_errors_naming_the_field(
    path: tuple[Any, ...], how: str, value: Any
) -> None:
    data = _hostile_data(path, how, value)
    CALLED.clear()
    if _expect_clean(path, how, value):
        loaded = RunState.from_json(AGENT, data)
        assert CALLED == []
        expected = _base_json()
        if how == "value":
            _set_at(expected, path, _plain(value))
        assert loaded.to_json() == expected
        return
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(AGENT, data)
    assert CALLED == []
    message = str(caught.value)
    if not path:
        assert "RunState JSON must be an object" in message
    else:  # a bad key: the object holding it is named (the top level: the key)
        named = path[:-1] if how == "key" and len(path) > 1 else path
        assert f"RunState field '{_dotted(named)}" in message


def test_hostile_text_is_read_as_its_plain_value() -> None:
    text = paused_state().to_string()
    for cls in HOSTILE_STR:
        CALLED.clear()
        assert RunState.from_string(AGENT, cls(text)).to_string() == text
        assert CALLED == []
    for raw in (type("HostileBytes", (bytes,), {"decode": _hostile("decode")}), bytearray):
        CALLED.clear()
        assert RunState.from_string(AGENT, raw(text.encode())).to_string() == text
        assert CALLED == []


def test_the_hostile_family_covers_every_level() -> None:
    ids = [name for name, _, _, _ in CASES]
    for level in [
        "$schemaVersion = EqInt",
        "agent key EqStr",
        "agent.name = EqStr",
        "generated_items = IterList",
        "generated_items[0] = GetDict",
        "generated_items[0].content[0].text = EqStr",
        "model_responses[0].usage = IterDict",
        "model_responses[0].usage.requests = NumInt",
        "approvals.c1 key EqStr",
        "current_turn = bool",
        "top level GetDict",
    ]:
        assert level in ids, level
