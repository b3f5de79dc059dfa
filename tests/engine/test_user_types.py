"""User-defined types: both engines read them by one contract (docs/design.md, "User-defined
types").

Subclasses of builtins that lie about their contents, keys equal to everything next to
metadata keys, str subclasses with their own ``__eq__``/``__hash__`` as ``type``, items
that raise, and callbacks that change what is being read. Every case is built afresh for
each engine (a callback may change its input), and each engine function is compared on
its result or exception (type and message), on the callbacks it ran (``JOURNAL``), and
on the state its input was left in.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support.examples import examples
from tests.support.strategies import (
    JOURNAL,
    AlwaysEqual,
    ClaimingBytes,
    ClaimingStr,
    CountingIndex,
    DumpRaises,
    DynamicModel,
    Effect,
    GetRaises,
    LyingDict,
    LyingIterable,
    LyingList,
    LyingTuple,
    RaisingKey,
    call,
    effect_recipes,
    once,
    output,
    reasoning,
    user,
    user_type_histories,
)

Make = Callable[[], Any]


# --- comparing two engines on fresh input ---------------------------------------------


def members(items: Any) -> list[Any]:
    """The members a list or tuple (subclass) holds, read without running its methods."""
    if isinstance(items, list):
        return list.copy(items)
    if isinstance(items, tuple):
        return list(tuple.__iter__(items))
    return []


def state(value: Any, path: frozenset[int] = frozenset()) -> Any:
    """Types and contents of a value, read without running any of its methods."""
    kind = type(value).__name__
    if id(value) in path:
        return (kind, "cycle")
    path = path | {id(value)}
    if isinstance(value, dict):
        return (kind, [(state(k, path), state(v, path)) for k, v in dict.items(value)])
    if isinstance(value, (list, tuple)):
        return (kind, [state(member, path) for member in members(value)])
    if isinstance(value, str):
        return (kind, str.__repr__(value))
    if isinstance(value, bytes):
        return (kind, bytes.__repr__(value))
    if isinstance(value, bool) or value is None:
        return (kind, repr(value))
    if isinstance(value, int):
        return (kind, int.__repr__(value))
    if isinstance(value, float):
        return (kind, float.__repr__(value))
    if isinstance(value, (set, frozenset)):
        return (kind, sorted(repr(state(member, path)) for member in value))
    try:
        fields = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return (kind,)
    return (kind, sorted((k, state(v, path)) for k, v in fields.items() if not callable(v)))


# Functions whose result holds the input objects, and those returning fresh copies.
PICKING = {
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "drop_orphan_function_calls",
}
COPYING = {"deep_copy_items", "plain_json_copy"}

Arguments = tuple[tuple[Any, ...], dict[str, Any]]
Build = Callable[[], Arguments]


def label(element: Any, known: list[Any]) -> Any:
    """Which input object ``element`` is (by identity), or its state if none."""
    for index, candidate in enumerate(known):
        if candidate is element:
            return index
    return ("not an input object", state(element))


def outcome(engine: ModuleType, name: str, build: Build) -> Any:
    """What calling ``name`` on freshly built arguments does: result or exception, the
    callbacks run, and the arguments' state afterwards."""
    args, kwargs = build()
    known = [member for arg in args for member in members(arg)]
    with JOURNAL.record() as events:
        try:
            result = getattr(engine, name)(*args, **kwargs)
        except Exception as exc:  # the exception itself is what gets compared
            returned: Any = ("raised", type(exc), str(exc))
        else:
            if name in PICKING:
                known += [member for arg in args for member in members(arg)]
                returned = ("returned", [label(element, known) for element in result])
            elif name in COPYING:
                returned = ("returned", state(result))
            else:
                returned = ("returned", result)
    return returned, list(events), state((args, kwargs))


def assert_same(pure: ModuleType, core: ModuleType, name: str, build: Build) -> None:
    expected = outcome(pure, name, build)
    actual = outcome(core, name, build)
    assert actual == expected, f"{name}:\n rust {actual!r}\n pure {expected!r}"


def calls_of(make: Make) -> dict[str, tuple[str, Build]]:
    """Every engine function on what ``make`` builds (the list, or one of its members),
    by a label naming the call."""

    def whole(*extra: Any, **kwargs: Any) -> Build:
        return lambda: ((make(), *extra), kwargs)

    def one(position: int) -> Build:
        return lambda: ((members(make())[position],), {})

    def classified() -> Arguments:
        source, returned = members(make()), make()
        half = len(source) // 2
        return (source[:half], source[half:], returned), {}

    def with_index_sets() -> Arguments:
        items = make()
        every = set(range(len(members(items))))
        return (items, every), {"output_pruning_indexes": set(every)}

    calls: dict[str, tuple[str, Build]] = {
        name: (name, whole())
        for name in (
            "dedupe_keys",
            "deduplicate_input_items",
            "deduplicate_input_items_preferring_latest",
            "content_keys",
            "deep_copy_items",
            "plain_json_copy",
            "drop_orphan_function_calls",
        )
    }
    calls["plain_json_copy, shared"] = ("plain_json_copy", whole(allow_shared=True))
    calls["drop_orphan_function_calls, index sets"] = (
        "drop_orphan_function_calls",
        with_index_sets,
    )
    calls["classify_callback_output"] = ("classify_callback_output", classified)
    calls["classify_callback_output, all returned"] = (
        "classify_callback_output",
        lambda: (([], [], make()), {}),
    )
    for position in range(len(members(make()))):
        for name in ("dedupe_key", "canonical_json", "content_key"):
            calls[f"{name} [{position}]"] = (name, one(position))
    return calls


def check(pure: ModuleType, core: ModuleType, make: Make) -> None:
    for name, build in calls_of(make).values():
        assert_same(pure, core, name, build)


# --- the shapes ---------------------------------------------------------------------


def lying(entries: dict[Any, Any]) -> LyingDict:
    made = LyingDict()
    for key, value in entries.items():
        dict.__setitem__(made, key, value)
    return made


class RaisingDict(dict[Any, Any]):
    """A dict subclass whose reading methods raise."""

    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("RaisingDict.get")

    def items(self) -> Any:
        raise RuntimeError("RaisingDict.items")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("RaisingDict.__getitem__")

    def __iter__(self) -> Any:
        raise RuntimeError("RaisingDict.__iter__")


def _dump_changes_an_earlier_item() -> list[Any]:
    items: list[Any] = [call("c0"), None]
    items[1] = Effect(lambda: items[0].__setitem__("call_id", "moved"), payload=output("c0"))
    return items


def _dump_changes_a_later_item() -> list[Any]:
    items: list[Any] = [None, call("c0"), output("c0")]
    items[0] = Effect(lambda: items[2].__setitem__("type", "message"), payload=reasoning("r"))
    return items


def _dump_grows_the_list() -> list[Any]:
    items: list[Any] = [call("c0"), None, output("c0")]
    items[1] = Effect(once(lambda: items.append(call("late"))), payload=user("hi"))
    return items


def _dump_shrinks_the_list() -> list[Any]:
    items: list[Any] = [call("c0"), None, output("c0")]
    items[1] = Effect(once(lambda: items.pop()), payload=user("hi"))
    return items


def _dump_replaces_a_later_item() -> list[Any]:
    items: list[Any] = [None, call("c0"), output("c0"), output("c0", "again")]
    items[0] = Effect(lambda: items.__setitem__(3, call("c9")), payload=reasoning("r"))
    return items


def _lookup_changes_the_dict() -> list[Any]:
    item: dict[Any, Any] = {"call_id": "c0", "status": "completed"}
    item[Effect(lambda: item.pop("call_id", None), hash_as="type", tag="key")] = 1
    item["type"] = "shell_call"
    return [item, output("c0"), {"type": "shell_call_output", "call_id": "c0"}]


def _key_str_changes_the_dict() -> list[Any]:
    item: dict[Any, Any] = {"type": "function_call", "call_id": "c0"}
    item[Effect(once(lambda: item.__setitem__("added", 1)), tag="key")] = "v"
    return [item]


def _value_str_grows_its_list() -> list[Any]:
    payload: list[Any] = [1]
    payload.append(Effect(once(lambda: payload.append("late")), tag="value"))
    payload.append(2)
    return [{"type": "function_call", "call_id": "c0", "payload": payload}]


def _value_str_changes_its_dict() -> list[Any]:
    item: dict[Any, Any] = {"type": "function_call", "call_id": "c0"}
    item["e"] = Effect(once(lambda: item.__setitem__("z", "added")), tag="value")
    return [item]


def _copy_changes_the_dict() -> list[Any]:
    item: dict[Any, Any] = {"type": "function_call", "call_id": "c0"}
    item["e"] = Effect(once(lambda: item.__setitem__("z", "added")), tag="copied")
    return [item]


def _copy_grows_the_list() -> list[Any]:
    payload: list[Any] = [1]
    payload.append(Effect(once(lambda: payload.append("late")), tag="copied"))
    payload.append([2])
    return [{"type": "x", "payload": payload}]


def _models_in_new_items() -> list[Any]:
    return [
        Effect(lambda: None, payload=call("c0"), tag="m0"),
        Effect(lambda: None, payload=output("c0"), tag="m1"),
        Effect(lambda: None, payload=user("hi"), tag="m2"),
        {"type": "function_call", "call_id": "c1"},
    ]


CASES: dict[str, Make] = {
    # a dict subclass overriding items (and every other reading method)
    "dict subclass overriding items": lambda: [
        lying({"type": "function_call", "call_id": "c0", "_agents_tool_title": "t"}),
        lying({"type": "function_call_output", "call_id": "c0"}),
    ],
    "dict subclass nested and as caller": lambda: [
        {"type": "x", "payload": lying({"b": 1, "a": [lying({"k": "v"})]})},
        {
            "type": "shell_call",
            "call_id": "s",
            "caller": lying({"type": "program", "caller_id": "p"}),
        },
        {"type": "program", "call_id": "p"},
    ],
    "dict subclass whose methods raise": lambda: [
        RaisingDict(type="function_call", call_id="c0"),
        {"type": "x", "payload": RaisingDict(a=1)},
    ],
    # keys equal to everything next to metadata keys
    "always-equal key next to a metadata key": lambda: [
        {"type": "function_call", "call_id": "c0", AlwaysEqual("k"): 1, "_agents_tool_title": "t"},
        {AlwaysEqual("k"): 2, "_agents_tool_description": "d", "type": "reasoning", "id": "r"},
    ],
    "always-equal key hashed like a metadata key": lambda: [
        {AlwaysEqual("k", "_agents_tool_description"): "d", "type": "reasoning", "id": "r"},
        {"_agents_tool_title": "t", AlwaysEqual("k", "_agents_tool_title"): "merged"},
    ],
    "always-equal key hashed like type": lambda: [
        {"_agents_tool_title": "t", AlwaysEqual("k", "type"): "function_call", "call_id": "c0"},
        {AlwaysEqual("k", "call_id"): "c0", "type": "function_call_output"},
    ],
    "always-equal values as type, status and caller type": lambda: [
        {"type": AlwaysEqual("t"), "call_id": "c0"},
        {"type": AlwaysEqual("t")},
        {"type": "shell_call", "call_id": "s", "status": AlwaysEqual("s")},
        {
            "type": "function_call",
            "call_id": "c1",
            "caller": {"type": AlwaysEqual("p"), "caller_id": "p"},
        },
        {"type": "program", "call_id": "p"},
        {"type": "reasoning", "id": "r"},
        call("c2"),
    ],
    # str subclasses with their own __eq__/__hash__
    "str subclass as type": lambda: [
        {"type": ClaimingStr("function_call"), "call_id": "c0"},
        {"type": ClaimingStr("function_call_output"), "call_id": "c0"},
        {"type": ClaimingStr("reasoning"), "id": "r"},
        {"type": ClaimingStr("function_call"), "call_id": "c1"},
        {"type": ClaimingStr("tool_search_call")},
        {"type": ClaimingStr("tool_search_output")},
        {"type": ClaimingStr("message"), "id": "m"},
        {"type": ClaimingStr(""), "id": "e"},
    ],
    "str subclass as ids, status and caller": lambda: [
        {"type": "function_call", "call_id": ClaimingStr("c0"), "id": ClaimingStr("i")},
        {"type": "function_call_output", "call_id": ClaimingStr("c0")},
        {
            "type": ClaimingStr("shell_call"),
            "call_id": "s",
            "status": ClaimingStr("completed"),
            "caller": {"type": ClaimingStr("program"), "caller_id": ClaimingStr("p")},
        },
        {"type": ClaimingStr("program"), "call_id": "p"},
        {"type": "mcp_approval_response", "approval_request_id": ClaimingStr("a")},
    ],
    "str subclass as keys": lambda: [
        {
            ClaimingStr("type"): "function_call",
            "call_id": "c0",
            ClaimingStr("_agents_tool_title"): 1,
        },
        {"type": "x", ClaimingStr("b"): 1, ClaimingStr("a"): 2},
    ],
    # items that raise, in both orders
    "get raises, then dump raises": lambda: [GetRaises(), DumpRaises()],
    "dump raises, then get raises": lambda: [DumpRaises(), GetRaises()],
    "lookup raises, then dump raises": lambda: [
        call("c0"),
        {RaisingKey("type"): 1},
        DumpRaises(),
    ],
    "dump raises, then lookup raises": lambda: [DumpRaises(), {RaisingKey("call_id"): 1}],
    "status lookup raises, then dump raises": lambda: [
        {"type": "shell_call", "call_id": "s", RaisingKey("status"): 1},
        DumpRaises(),
    ],
    # list and tuple subclasses whose __len__ lies
    "lying list of items": lambda: LyingList(
        [call("c0"), output("c0"), reasoning("r"), call("c1")]
    ),
    "lying tuple of items": lambda: LyingTuple((call("c0"), reasoning("r"), call("c1"))),
    "lying iterable of items": lambda: LyingIterable([call("c0"), output("c0"), call("c1")]),
    "lying lists inside items": lambda: [
        {"type": "x", "payload": LyingList([1, [2], "3"]), "t": LyingTuple((1, (2,)))},
        {"type": LyingList(["function_call"]), "id": "i"},
        LyingList([call("c0")]),
    ],
    # callbacks that change what is being read
    "model_dump changes an earlier item": _dump_changes_an_earlier_item,
    "model_dump changes a later item": _dump_changes_a_later_item,
    "model_dump grows the list": _dump_grows_the_list,
    "model_dump shrinks the list": _dump_shrinks_the_list,
    "model_dump replaces a later item": _dump_replaces_a_later_item,
    "key __eq__ changes the dict being read": _lookup_changes_the_dict,
    "key __str__ changes the dict being read": _key_str_changes_the_dict,
    "value __str__ grows its list": _value_str_grows_its_list,
    "value __str__ changes its dict": _value_str_changes_its_dict,
    "__deepcopy__ changes the dict being copied": _copy_changes_the_dict,
    "__deepcopy__ grows the list being copied": _copy_grows_the_list,
    "models among new items": _models_in_new_items,
    "model_dump found through __getattr__": lambda: [
        DynamicModel(call("c0")),
        DynamicModel(output("c0")),
        DynamicModel([1]),
    ],
}


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_user_types_read_alike(pure: ModuleType, core: ModuleType, make: Make) -> None:
    check(pure, core, make)


def test_index_sets_with_int_subclasses(pure: ModuleType, core: ModuleType) -> None:
    def build() -> Arguments:
        items = [call("c0"), call("c1"), reasoning("r"), call("c2")]
        pruning = [CountingIndex(0), CountingIndex(1), CountingIndex(2)]
        return (items, pruning), {"output_pruning_indexes": {CountingIndex(3)}}

    assert_same(pure, core, "drop_orphan_function_calls", build)


def test_long_integer_scan_of_subclasses(pure: ModuleType, core: ModuleType) -> None:
    assert_same(
        pure,
        core,
        "long_integer_candidates",
        lambda: (([ClaimingStr("12"), ClaimingBytes(b"34"), ClaimingStr("1" * 19)],), {}),
    )


# --- generated shapes ------------------------------------------------------------------


@settings(max_examples=examples(150), deadline=None)
@given(items=user_type_histories())
def test_generated_user_types(pure: ModuleType, core: ModuleType, items: Any) -> None:
    # These shapes change nothing when called, so both engines may share the objects.
    check(pure, core, lambda: items)


@settings(max_examples=examples(100), deadline=None)
@given(make=effect_recipes())
def test_generated_callbacks_that_change_what_is_read(
    pure: ModuleType, core: ModuleType, make: Make
) -> None:
    check(pure, core, make)
