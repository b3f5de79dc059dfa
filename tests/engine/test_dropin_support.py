"""The engine's support for drop-in replacements: the screened dedupe functions (an
answer only where it is the OpenAI Agents SDK's by construction, NotImplemented
elsewhere) and ``NameWatch``, on both engines."""

from __future__ import annotations

import enum
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import value_id
from tests.support.examples import examples
from tests.support.strategies import histories, history_items

PROPERTY = settings(max_examples=examples(200), deadline=None)


class Kind(str, enum.Enum):
    CALL = "function_call"


class Text(str):
    pass


# Values that must send an item to the original: a str subclass as ``type`` or id, and
# ``type`` values that are not str at all.
AWKWARD = st.sampled_from([Kind.CALL, Text("c1"), 3, ("t",), b"function_call", 1.5])


@st.composite
def screened_items(draw: st.DrawFn) -> Any:
    item = draw(history_items(with_models=True))
    if type(item) is dict and draw(st.booleans()):
        item = dict(item)
        item[draw(st.sampled_from(["type", "call_id", "id", "approval_request_id"]))] = draw(
            AWKWARD
        )
    return item


def _expected_screen(item: Any) -> bool:
    if type(item) is not dict:
        return False
    kind = item.get("type")
    if kind is not None and type(kind) is not str:
        return False
    # The SDK compares ``id`` with ``==``: anything but a str or None is its to answer.
    if item.get("id") is not None and type(item.get("id")) is not str:
        return False
    return not any(
        isinstance(item.get(field), str) and type(item.get(field)) is not str
        for field in ("call_id", "id", "approval_request_id")
    )


def _outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        result = function(*args)
    except Exception as exc:
        return "raise", (type(exc), str(exc))
    if isinstance(result, list):
        return "list", [id(item) for item in result]
    return "ok", result


@PROPERTY
@given(item=screened_items())
def test_screened_dedupe_key_is_the_key_or_not_implemented(
    pure: ModuleType, core: ModuleType, item: Any
) -> None:
    expected = pure.dedupe_key(item) if _expected_screen(item) else NotImplemented
    assert _outcome(pure.screened_dedupe_key, item) == ("ok", expected)
    assert _outcome(core.screened_dedupe_key, item) == ("ok", expected)


@PROPERTY
@given(
    items=st.one_of(histories(max_size=10), st.lists(screened_items(), max_size=8)),
    latest=st.booleans(),
)
def test_screened_deduplicate_matches_between_engines(
    pure: ModuleType, core: ModuleType, items: list[Any], latest: bool
) -> None:
    if all(map(_expected_screen, items)):
        dedupe = (
            pure.deduplicate_input_items_preferring_latest
            if latest
            else pure.deduplicate_input_items
        )
        expected = _outcome(dedupe, items)
    else:
        expected = ("ok", NotImplemented)
    assert _outcome(pure.screened_deduplicate, items, latest) == expected
    assert _outcome(core.screened_deduplicate, items, latest) == expected


def test_screened_deduplicate_declines_what_is_not_an_exact_list(engine: ModuleType) -> None:
    items = [{"type": "function_call", "call_id": "c1"}] * 2

    class Items(list[Any]):
        pass

    assert engine.screened_deduplicate(tuple(items)) is NotImplemented
    assert engine.screened_deduplicate(Items(items)) is NotImplemented
    assert engine.screened_deduplicate(iter(items)) is NotImplemented
    assert engine.screened_deduplicate(items) == items[:1]


def test_name_watch_notices_rebinding_and_changes_in_place(engine: ModuleType) -> None:
    table = {"a": "b"}
    namespace: dict[str, Any] = {"helper": len, "table": table, "kinds": ["x"], "marks": {1}}
    watch = engine.NameWatch(
        [(namespace, ("helper", "missing", "table"))],
        [(namespace, "table"), (namespace, "kinds"), (namespace, "marks")],
    )
    assert not watch.armed
    assert not watch.intact()  # unarmed
    watch.arm()
    assert watch.armed
    assert watch.intact()

    def rebound(change: Any, undo: Any) -> bool:
        change()
        result: bool = watch.intact()
        undo()
        assert watch.intact()
        return result

    assert not rebound(lambda: namespace.update(helper=str), lambda: namespace.update(helper=len))
    assert not rebound(lambda: namespace.update(missing=1), lambda: namespace.pop("missing"))
    assert not rebound(lambda: table.update(c="d"), lambda: table.pop("c"))
    assert not rebound(lambda: table.update(a="z"), lambda: table.update(a="b"))
    assert not rebound(lambda: namespace["kinds"].append("y"), lambda: namespace["kinds"].pop())
    assert not rebound(lambda: namespace["marks"].add(2), lambda: namespace["marks"].discard(2))
    # An equal but new container is a rebinding of the (also looked-up) name.
    assert not rebound(
        lambda: namespace.update(table=dict(table)), lambda: namespace.update(table=table)
    )
    # None stored under a missing name reads as the name's absence, as dict.get does.
    namespace["missing"] = None
    assert watch.intact()
    watch.disarm()
    assert not watch.intact()


def test_name_watch_rejects_what_is_not_a_namespace(engine: ModuleType) -> None:
    with pytest.raises(TypeError):
        engine.NameWatch([(["not", "a", "dict"], ("name",))])


def test_screened_functions_decline_while_the_watch_is_not_intact(engine: ModuleType) -> None:
    namespace: dict[str, Any] = {"helper": len}
    watch = engine.NameWatch([(namespace, ("helper",))])
    item = {"type": "function_call", "call_id": "c1"}
    # Unarmed: declined.
    assert engine.screened_dedupe_key(item, watch) is NotImplemented
    assert engine.screened_deduplicate([item], False, watch) is NotImplemented
    watch.arm()
    assert engine.screened_dedupe_key(item, watch) == "call_id:function_call:c1"
    assert engine.screened_deduplicate([item, item], True, watch) == [item]
    namespace["helper"] = str
    assert engine.screened_dedupe_key(item, watch) is NotImplemented
    assert engine.screened_deduplicate([item], False, watch) is NotImplemented


# --- shallow_dict_copies -------------------------------------------------------------

STRIPPED = ("_agents_tool_description", "created_by")


@st.composite
def maybe_stripped_items(draw: st.DrawFn) -> Any:
    item = draw(history_items(with_models=True))
    if type(item) is dict and draw(st.booleans()):
        item = {**item, draw(st.sampled_from(STRIPPED)): "x"}
    return item


def _copies_outcome(function: Any, items: Any, without: Any) -> tuple[str, Any]:
    try:
        result = function(items, without)
    except Exception as exc:
        return "raise", (type(exc), str(exc))
    if result is NotImplemented:
        return "ok", NotImplemented
    # New dicts, equal to the items, in order.
    fresh = all(copy is not item for copy, item in zip(result, items, strict=True))
    return "copies", (fresh, [list(copy.items()) for copy in result])


@PROPERTY
@given(items=st.lists(maybe_stripped_items(), max_size=8))
def test_shallow_dict_copies_copy_exact_dicts_without_the_keys(
    pure: ModuleType, core: ModuleType, items: list[Any]
) -> None:
    copyable = all(type(item) is dict and not set(item) & set(STRIPPED) for item in items)
    expected = (
        ("copies", (True, [list(item.items()) for item in items]))
        if copyable
        else ("ok", NotImplemented)
    )
    assert _copies_outcome(pure.shallow_dict_copies, items, STRIPPED) == expected
    assert _copies_outcome(core.shallow_dict_copies, items, STRIPPED) == expected


@pytest.mark.parametrize(
    "without", [["created_by"], ("created_by", 3), "created_by", None], ids=value_id
)
def test_shallow_dict_copies_name_a_bad_key_tuple_alike(
    pure: ModuleType, core: ModuleType, without: Any
) -> None:
    errors = [_copies_outcome(engine.shallow_dict_copies, [{}], without) for engine in (pure, core)]
    assert errors[0] == errors[1]
    assert errors[0][0] == "raise"
    assert "without must be a tuple of str" in errors[0][1][1]


def test_shallow_dict_copies_decline_what_is_not_an_exact_list(engine: ModuleType) -> None:
    class Items(list[Any]):
        pass

    assert engine.shallow_dict_copies(({"a": 1},), ()) is NotImplemented
    assert engine.shallow_dict_copies(Items([{"a": 1}]), ()) is NotImplemented
    assert engine.shallow_dict_copies([{"a": 1}, [1]], ()) is NotImplemented
    assert engine.shallow_dict_copies([], ()) == []


# --- screened_drop_orphan_function_calls ---------------------------------------------


class CallerDict(dict[str, Any]):
    pass


ORPHAN_AWKWARD = st.sampled_from([Text("function_call"), Text("c0"), 3, None, ("t",)])


@st.composite
def orphan_items(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(
            ["function_call", "function_call_output", "shell_call", "reasoning", "program", None]
        )
    )
    item: dict[str, Any] = {} if kind is None else {"type": kind}
    if draw(st.booleans()):
        item["call_id"] = draw(st.sampled_from(["c0", "c1"]))
    if kind == "shell_call" and draw(st.booleans()):
        item["status"] = draw(st.sampled_from(["in_progress", "completed"]))
    if draw(st.booleans()):
        caller = {"type": "program", "caller_id": draw(st.sampled_from(["c0", "c1"]))}
        item["caller"] = draw(st.sampled_from([caller, CallerDict(caller), "program", 5]))
    if draw(st.integers(0, 4)) == 0:
        field = draw(st.sampled_from(["type", "call_id", "status"]))
        item[field] = draw(ORPHAN_AWKWARD)
    if type(item.get("caller")) is dict and draw(st.integers(0, 4)) == 0:
        item["caller"] = {**item["caller"], "caller_id": draw(ORPHAN_AWKWARD)}
    return draw(st.sampled_from([item, item, item, Text("junk"), ("not", "a", "dict")]))


def _orphan_expected_screen(items: list[Any], pruning: Any, output_pruning: Any) -> bool:
    def plain(value: Any) -> bool:
        return value is None or type(value) is str

    for indexes in (pruning, output_pruning):
        if indexes is not None and (
            type(indexes) is not set or any(isinstance(i, bool) for i in indexes)
        ):
            return False
    for position, item in enumerate(items):
        if type(item) is not dict:
            return False
        kind = item.get("type")
        if not plain(kind) or not plain(item.get("call_id")):
            return False
        if kind == "shell_call" and not plain(item.get("status")):
            return False
        if kind == "reasoning" and pruning is not None and position not in pruning:
            return False
        caller = item.get("caller")
        if isinstance(caller, dict) and (
            type(caller) is not dict
            or not plain(caller.get("type"))
            or not plain(caller.get("caller_id"))
        ):
            return False
    return True


INDEX_SETS = st.one_of(
    st.none(),
    st.sets(st.integers(0, 8), max_size=6),
    st.sets(st.integers(0, 8), max_size=3).map(frozenset),
    st.just({True}),
)


@PROPERTY
@given(items=st.lists(orphan_items(), max_size=9), pruning=INDEX_SETS, output_pruning=INDEX_SETS)
def test_screened_orphan_pruning_is_the_pruning_or_not_implemented(
    pure: ModuleType, core: ModuleType, items: list[Any], pruning: Any, output_pruning: Any
) -> None:
    if _orphan_expected_screen(items, pruning, output_pruning):
        expected = _outcome(
            lambda: pure.drop_orphan_function_calls(
                items, pruning, output_pruning_indexes=output_pruning
            )
        )
    else:
        expected = ("ok", NotImplemented)

    def screened(engine: ModuleType) -> tuple[str, Any]:
        return _outcome(
            lambda: engine.screened_drop_orphan_function_calls(
                items, pruning, output_pruning_indexes=output_pruning
            )
        )

    assert screened(pure) == expected
    assert screened(core) == expected


def test_screened_orphan_pruning_declines_when_the_watch_is_not_intact(
    engine: ModuleType,
) -> None:
    namespace: dict[str, Any] = {"helper": len}
    watch = engine.NameWatch([(namespace, ("helper",))])
    items = [{"type": "function_call", "call_id": "c0"}]
    assert engine.screened_drop_orphan_function_calls(items, watch=watch) is NotImplemented
    watch.arm()
    assert engine.screened_drop_orphan_function_calls(items, watch=watch) == []
    namespace["helper"] = str
    assert engine.screened_drop_orphan_function_calls(items, watch=watch) is NotImplemented


# --- DictText ------------------------------------------------------------------------

SKIP = ("created_by",)
SKIP_IDS = ("created_by", "id")


def _fallback(item: Any, *args: Any, **kwargs: Any) -> tuple[str, Any, Any, Any]:
    return ("fallback", repr(item), args, kwargs)


@PROPERTY
@given(
    item=st.one_of(maybe_stripped_items(), st.just({"id": 1, "type": "message"})),
    kwargs=st.sampled_from(
        [
            {},
            {"ignore_ids_for_matching": True},
            {"ignore_ids_for_matching": False},
            {"ignore_ids_for_matching": 1},
            {"other": True},
        ]
    ),
    extra=st.sampled_from([(), (True,)]),
)
def test_dict_text_is_the_text_or_the_fallbacks(
    pure: ModuleType, core: ModuleType, item: Any, kwargs: dict[str, Any], extra: tuple[Any, ...]
) -> None:
    ignore = kwargs.get("ignore_ids_for_matching", False)
    text = pure.sorted_json_text(item, SKIP_IDS if ignore else SKIP) if type(item) is dict else None
    plain = not extra and set(kwargs) <= {"ignore_ids_for_matching"} and type(ignore) is bool
    expected = text if plain and text is not None else _fallback(item, *extra, **kwargs)
    for engine in (pure, core):
        call = engine.DictText(_fallback, SKIP, SKIP_IDS)
        assert call(item, *extra, **kwargs) == expected, engine.__name__


def test_dict_text_asks_the_fallback_once_the_watch_breaks(engine: ModuleType) -> None:
    namespace: dict[str, Any] = {"helper": len}
    watch = engine.NameWatch([(namespace, ("helper",))])
    watch.arm()
    call = engine.DictText(_fallback, SKIP, SKIP_IDS, watch)
    assert call({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    namespace["helper"] = str
    assert call({"b": 1}) == _fallback({"b": 1})


def test_dict_text_names_a_bad_skip_alike(pure: ModuleType, core: ModuleType) -> None:
    messages = []
    for engine in (pure, core):
        with pytest.raises(TypeError) as caught:
            engine.DictText(_fallback, SKIP, ["id"])
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == "skip_with_ids must be a tuple of str, not list"


# --- ScreenedKey -----------------------------------------------------------------------


def _key_fallback(*args: Any, **kwargs: Any) -> tuple[str, Any, Any]:
    return ("fallback", repr(args), kwargs)


@PROPERTY
@given(
    item=screened_items(),
    extra=st.sampled_from([(), (None,)]),
    kwargs=st.sampled_from([{}, {"item": 1}]),
)
def test_screened_key_is_the_key_or_the_fallbacks(
    pure: ModuleType, core: ModuleType, item: Any, extra: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    screened = pure.screened_dedupe_key(item)
    plain = not extra and not kwargs and screened is not NotImplemented
    expected = screened if plain else _key_fallback(item, *extra, **kwargs)
    for engine in (pure, core):
        call = engine.ScreenedKey(_key_fallback)
        assert call(item, *extra, **kwargs) == expected, engine.__name__


def test_screened_key_with_no_arguments_or_a_keyword_is_the_fallbacks(engine: ModuleType) -> None:
    call = engine.ScreenedKey(_key_fallback)
    assert call() == _key_fallback()
    item = {"type": "function_call", "call_id": "c1"}
    assert call(item=item) == _key_fallback(item=item)


def test_screened_key_asks_the_fallback_once_the_watch_breaks(engine: ModuleType) -> None:
    namespace: dict[str, Any] = {"helper": len}
    watch = engine.NameWatch([(namespace, ("helper",))])
    watch.arm()
    call = engine.ScreenedKey(_key_fallback, watch)
    item = {"type": "function_call", "call_id": "c1"}
    assert call(item) == "call_id:function_call:c1"
    namespace["helper"] = str
    assert call(item) == _key_fallback(item)


def test_screened_key_passes_the_fallbacks_exception_on(engine: ModuleType) -> None:
    def refuse(item: Any) -> str:
        raise ValueError(f"refused {item!r}")

    with pytest.raises(ValueError, match="refused 3"):
        engine.ScreenedKey(refuse)(3)
