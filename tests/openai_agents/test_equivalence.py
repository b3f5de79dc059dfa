"""Differential tests: every helper ``histcore.openai_agents`` installs against the SDK's.

Each replacement is built from the pristine SDK function (nothing installed) and run
side by side with it on generated inputs: SDK-shaped histories, and the awkward
things user code can hand the SDK (pydantic models, dict and str subclasses, str
enums, unhashable or exploding ``type`` values, NaN, tuples, sets, bytes, huge ints,
lone surrogates, shared and cyclic sub-objects, deep nesting). Results must be the
same objects in the same order (list helpers), the same text byte for byte (keys),
or trees of the same types, values and sharing (copies); exceptions must match too.
"""

from __future__ import annotations

import asyncio
import copy
import enum
import inspect
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.support.pg import ListSession
from tests.support.strategies import (
    SDK_TYPES,
    call_output_sequences,
    histories,
    history_items,
    json_values,
    sdk_histories,
)
from tests.support.strategies import sdk_items as sdk_items_strategy

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.run_internal.items as sdk_items
import agents.run_internal.session_persistence as sdk_session
import agents.run_state as sdk_run_state
import agents.util._json as sdk_json

import histcore.openai_agents as accelerator
from histcore import items as public_items
from histcore.openai_agents import _replacements as replacements
from histcore.openai_agents import _session_keys as session_keys
from tests.support.examples import examples

SETTINGS = settings(
    max_examples=examples(250),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(autouse=True)
def pristine_sdk() -> Any:
    """These tests compare against the SDK's own helpers: nothing may be installed."""
    accelerator.uninstall()
    assert sdk_items.drop_orphan_function_calls.__module__ == "agents.run_internal.items"
    yield
    accelerator.uninstall()


# --- awkward values user code can put into items -------------------------------------


class Kind(str, enum.Enum):
    CALL = "function_call"
    OUTPUT = "function_call_output"
    MESSAGE = "message"


class Level(enum.IntEnum):
    LOW = 1


class Colour(enum.Enum):
    RED = "red"


class PlainStr(str):
    """A str subclass that behaves like its text."""


class LoudStr(str):
    """A str subclass whose str() and equality differ from its text."""

    def __str__(self) -> str:
        return f"loud<{str.__str__(self)}>"

    def __format__(self, spec: str) -> str:
        return f"fmt<{str.__str__(self)}>"

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 7


class Exploding:
    """Like a numpy array: no truth value, ``==`` answers something odd."""

    def __bool__(self) -> bool:
        raise ValueError("truth value is ambiguous")

    def __eq__(self, other: object) -> bool:
        raise ValueError("elementwise comparison")

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "Exploding()"


class Loose(dict):  # type: ignore[type-arg]
    """A dict subclass (the SDK treats it as a dict, histcore must too, or defer)."""


class ToolCall(BaseModel):
    type: str = "function_call"
    call_id: str = "c0"
    name: str = "f"
    arguments: str = "{}"
    id: str | None = None


class ToolOutput(BaseModel):
    type: str = "function_call_output"
    call_id: str = "c0"
    output: str = "ok"


class BrokenDump(BaseModel):
    type: str = "function_call"
    call_id: str = "c0"

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        raise RuntimeError("cannot dump")


ODD_TYPES = st.sampled_from(
    [
        None,
        "",
        0,
        True,
        Kind.CALL,
        Kind.MESSAGE,
        PlainStr("function_call"),
        PlainStr("message"),
        LoudStr("function_call"),
        ["function_call"],
        ("program",),
        Exploding(),
    ]
)
ODD_IDS = st.sampled_from(
    [
        "c0",
        "c1",
        "__fake_id__",
        None,
        3,
        ["c0"],
        PlainStr("c0"),
        PlainStr("__fake_id__"),
        LoudStr("c1"),
        Kind.CALL,
        Exploding(),
    ]
)
ODD_VALUES = st.one_of(
    json_values(max_leaves=4),
    st.sampled_from([Kind.CALL, Level.LOW, Colour.RED, PlainStr("x"), LoudStr("y")]),
    st.sampled_from([float("nan"), float("inf"), -0.0, 2**80, "\ud800", b"raw", frozenset({1})]),
)


@st.composite
def odd_items(draw: st.DrawFn) -> Any:
    """An item with one or more awkward fields, or not a plain dict at all."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.sampled_from([ToolCall(), ToolOutput(), ToolCall(id="__fake_id__")]))
    if shape == 1:
        return BrokenDump()
    if shape == 2:
        return draw(st.one_of(st.none(), st.text(max_size=3), st.integers()))
    item: dict[str, Any] = {}
    for field in ("type", "call_id", "id", "approval_request_id", "role", "status"):
        if draw(st.booleans()):
            values = ODD_TYPES if field == "type" else ODD_IDS
            if field == "type" and draw(st.booleans()):
                values = st.sampled_from(SDK_TYPES)
            item[field] = draw(values)
    if draw(st.integers(0, 3)) == 0:
        item["caller"] = draw(
            st.sampled_from(
                [
                    {"type": "program", "caller_id": "c0"},
                    {"type": PlainStr("program"), "caller_id": "c1"},
                    {"type": "program", "caller_id": LoudStr("c0")},
                    Loose(type="program", caller_id="c0"),
                    "program",
                    Exploding(),
                ]
            )
        )
    if draw(st.booleans()):
        item["payload"] = draw(ODD_VALUES)
    return Loose(item) if shape == 3 else item


def mixed_histories(max_size: int = 12) -> st.SearchStrategy[list[Any]]:
    """Mostly SDK-shaped histories; sometimes with awkward items mixed in."""
    return st.one_of(
        sdk_histories(max_size=max_size),
        call_output_sequences(),
        histories(max_size=max_size),
        st.lists(st.one_of(history_items(), odd_items()), max_size=max_size),
    )


# --- comparing outcomes ----------------------------------------------------------------


def outcome(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", function(*args, **kwargs)
    except RecursionError:
        return "raise", (RecursionError, "")
    except Exception as exc:  # the exception itself is part of the behaviour
        return "raise", (type(exc), str(exc))


def assert_same_objects(expected: tuple[str, Any], actual: tuple[str, Any]) -> None:
    """Both returned lists of the very same objects in the same order, or raised alike."""
    assert expected[0] == actual[0], (expected, actual)
    if expected[0] == "raise":
        assert expected[1] == actual[1]
        return
    assert type(actual[1]) is list
    assert [id(x) for x in actual[1]] == [id(x) for x in expected[1]]


def _scalar_same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def assert_same_tree(expected: Any, actual: Any) -> None:
    """Same types and values at every node, and the same sharing between containers."""
    pairs: dict[int, int] = {}
    reverse: dict[int, int] = {}

    def walk(a: Any, b: Any, path: str) -> None:
        assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
        if isinstance(a, (dict, list, tuple, set, frozenset)):
            if id(a) in pairs or id(b) in reverse:
                assert pairs.get(id(a)) == id(b) and reverse.get(id(b)) == id(a), (  # noqa: PT018
                    f"{path}: sharing differs"
                )
                return
            pairs[id(a)] = id(b)
            reverse[id(b)] = id(a)
        if isinstance(a, dict):
            assert [(type(k), k) for k in a] == [(type(k), k) for k in b], f"{path}: keys"
            for key in a:
                walk(a[key], b[key], f"{path}[{key!r}]")
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), f"{path}: length"
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{index}]")
        elif isinstance(a, (str, int, float, bytes, type(None), set, frozenset)):
            assert _scalar_same(a, b), f"{path}: {a!r} != {b!r}"
        else:
            # Opaque objects: the same one, or (made in two separate runs) alike.
            assert a is b or _equal(a, b) or repr(a) == repr(b), f"{path}: {a!r} != {b!r}"

    walk(expected, actual, "$")


def assert_same_copy(expected: tuple[str, Any], actual: tuple[str, Any]) -> None:
    assert expected[0] == actual[0], (expected, actual)
    if expected[0] == "raise":
        assert expected[1] == actual[1]
    else:
        assert_same_tree(expected[1], actual[1])


# --- dedupe ----------------------------------------------------------------------------

REPLACED_KEY = replacements.make_dedupe_key(sdk_items._dedupe_key)
REPLACED_FIRST_WINS = replacements.make_deduplicate(sdk_items.deduplicate_input_items, False)
REPLACED_LATEST = replacements.make_deduplicate(
    sdk_items.deduplicate_input_items_preferring_latest, True
)


@SETTINGS
@given(item=st.one_of(history_items(), odd_items()))
def test_dedupe_key_matches_sdk(item: Any) -> None:
    assert outcome(REPLACED_KEY, item) == outcome(sdk_items._dedupe_key, item)


def test_an_id_whose_equality_raises_raises_as_in_the_sdk() -> None:
    # The SDK compares ``id`` with ``==`` (against its placeholder id): the replacements
    # must let that comparison raise too, not answer from the engine.
    items = [{"role": "user", "content": "hi"}, {"type": "reasoning", "id": Exploding()}]
    expected = outcome(sdk_items._dedupe_key, items[1])
    assert expected[0] == "raise"
    assert outcome(REPLACED_KEY, items[1]) == expected
    for sdk, replaced in (
        (sdk_items.deduplicate_input_items, REPLACED_FIRST_WINS),
        (sdk_items.deduplicate_input_items_preferring_latest, REPLACED_LATEST),
    ):
        assert_same_objects(outcome(sdk, items), outcome(replaced, items))


@SETTINGS
@given(items=mixed_histories())
def test_first_wins_dedupe_matches_sdk(items: list[Any]) -> None:
    assert_same_objects(
        outcome(sdk_items.deduplicate_input_items, items), outcome(REPLACED_FIRST_WINS, items)
    )


@SETTINGS
@given(items=mixed_histories())
def test_latest_value_dedupe_matches_sdk(items: list[Any]) -> None:
    assert_same_objects(
        outcome(sdk_items.deduplicate_input_items_preferring_latest, items),
        outcome(REPLACED_LATEST, items),
    )


def test_dedupe_takes_histcore_path_on_sdk_shaped_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    answered: list[bool] = []
    screened = replacements.engine_support.screened_deduplicate

    def spy(items: list[Any], preferring_latest: bool = False, watch: Any = None) -> Any:
        result = screened(items, preferring_latest, watch)
        answered.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(replacements.engine_support, "screened_deduplicate", spy)
    replaced = replacements.make_deduplicate(
        sdk_items.deduplicate_input_items_preferring_latest, True
    )
    history = [
        {"type": "function_call", "call_id": "c1", "v": 1},
        {"type": "function_call_output", "call_id": "c1"},
        {"type": "function_call", "call_id": "c1", "v": 2},
    ]
    assert replaced(history) == [history[2], history[1]]
    assert answered == [True]
    # A str enum as a type is formatted by the SDK's f-string: the engine declines it and
    # the SDK's own function answers.
    odd = [{"type": Kind.CALL, "call_id": "c1"}, {"type": Kind.CALL, "call_id": "c1"}]
    assert_same_objects(
        outcome(sdk_items.deduplicate_input_items_preferring_latest, odd), outcome(replaced, odd)
    )
    assert answered == [True, False]


# --- orphan pruning --------------------------------------------------------------------

REPLACED_ORPHANS = replacements.make_drop_orphan_function_calls(
    sdk_items.drop_orphan_function_calls
)


@st.composite
def orphan_cases(draw: st.DrawFn) -> tuple[list[Any], Any, Any]:
    items = draw(
        st.one_of(
            call_output_sequences(),
            sdk_histories(max_size=16),
            st.lists(st.one_of(history_items(), odd_items()), max_size=10),
            program_histories(),
        )
    )
    n = len(items)
    index_sets = st.one_of(
        st.none(),
        st.sets(st.integers(-2, n + 2)),
        st.just(set(range(n))),
        st.just(set(range(n // 2))),
        st.just(set(range(n // 2, n))),
    )
    return items, draw(index_sets), draw(index_sets)


@st.composite
def program_histories(draw: st.DrawFn) -> list[Any]:
    """Programs, the items they own, anonymous tool searches and reasoning runs."""
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 14))):
        what = draw(st.integers(0, 7))
        program = draw(st.sampled_from(["p0", "p1"]))
        if what == 0:
            items.append({"type": "program", "call_id": program})
        elif what == 1:
            items.append({"type": "program_output", "call_id": program})
        elif what == 2:
            kind = draw(
                st.sampled_from(
                    ["function_call", "web_search_call", "shell_call", "reasoning", "mcp_call"]
                )
            )
            owned: dict[str, Any] = {
                "type": kind,
                "caller": {"type": "program", "caller_id": program},
            }
            if kind in ("function_call", "shell_call"):
                owned["call_id"] = draw(st.sampled_from(["c0", "c1"]))
            if kind == "shell_call" and draw(st.booleans()):
                owned["status"] = draw(st.sampled_from(["in_progress", "completed"]))
            items.append(owned)
        elif what == 3:
            items.append(
                {"type": draw(st.sampled_from(["tool_search_call", "tool_search_output"]))}
            )
        elif what == 4:
            items.append({"type": "reasoning", "id": draw(st.sampled_from(["r0", "r1"]))})
        elif what == 5:
            items.append({"type": "function_call", "call_id": draw(st.sampled_from(["c0", "c1"]))})
        elif what == 6:
            items.append(
                {"type": "function_call_output", "call_id": draw(st.sampled_from(["c0", "c1"]))}
            )
        else:
            items.append({"role": "user", "content": "hi"})
    return items


@SETTINGS
@given(case=orphan_cases())
def test_orphan_pruning_matches_sdk(case: tuple[list[Any], Any, Any]) -> None:
    items, pruning, output_pruning = case
    kwargs = {"pruning_indexes": pruning, "output_pruning_indexes": output_pruning}
    assert_same_objects(
        outcome(sdk_items.drop_orphan_function_calls, items, **kwargs),
        outcome(REPLACED_ORPHANS, items, **kwargs),
    )


def test_orphan_pruning_keeps_the_sdk_reasoning_rule_outside_pruning_indexes() -> None:
    # histcore keeps a reasoning item outside pruning_indexes; the SDK drops it with the
    # orphan call it precedes. The replacement must answer like the SDK.
    items = [
        {"type": "reasoning", "id": "r0"},
        {"type": "function_call", "call_id": "c0"},
        {"role": "user", "content": "next"},
    ]
    expected = sdk_items.drop_orphan_function_calls(items, pruning_indexes={1, 2})
    assert expected == [items[2]]
    assert public_items.drop_orphan_function_calls(items, {1, 2}) == [items[0], items[2]]
    assert_same_objects(("ok", expected), outcome(REPLACED_ORPHANS, items, pruning_indexes={1, 2}))


def test_orphan_pruning_reads_models_like_the_sdk() -> None:
    # The SDK ignores a pydantic call (it only reads dicts); histcore would dump it.
    items = [ToolCall(call_id="c9"), {"role": "user", "content": "x"}]
    assert sdk_items.drop_orphan_function_calls(items) == items
    assert_same_objects(("ok", items), outcome(REPLACED_ORPHANS, items))


# --- fingerprints and session keys: the very same text ------------------------------

REPLACED_FINGERPRINT = replacements.make_fingerprint_input_item(
    sdk_items.fingerprint_input_item, sdk_items
)
REPLACED_SESSION_KEY = session_keys.make_session_item_key(
    sdk_session._session_item_key, sdk_session
)


@st.composite
def keyed_items(draw: st.DrawFn) -> Any:
    item = draw(st.one_of(history_items(), odd_items()))
    if isinstance(item, dict) and draw(st.integers(0, 4)) == 0:
        item = dict(item)
        item[draw(st.sampled_from(["created_by", "_agents_tool_title", "id"]))] = draw(ODD_VALUES)
    if isinstance(item, dict) and draw(st.integers(0, 9)) == 0:
        item = dict(item)
        item[draw(st.sampled_from([1, 2.5, True, None]))] = "non-str key"
    return item


@SETTINGS
@given(item=keyed_items(), ignore_ids=st.booleans())
def test_fingerprint_text_is_byte_identical(item: Any, ignore_ids: bool) -> None:
    expected = outcome(sdk_items.fingerprint_input_item, item, ignore_ids_for_matching=ignore_ids)
    actual = outcome(REPLACED_FINGERPRINT, item, ignore_ids_for_matching=ignore_ids)
    assert actual == expected
    if expected[0] == "ok" and expected[1] is not None:
        assert type(actual[1]) is str


@SETTINGS
@given(item=keyed_items(), ignore_ids=st.booleans())
def test_session_item_key_text_is_byte_identical(item: Any, ignore_ids: bool) -> None:
    kwargs = {"ignore_openai_conversation_item_ids": ignore_ids}
    assert outcome(REPLACED_SESSION_KEY, item, **kwargs) == outcome(
        sdk_session._session_item_key, item, **kwargs
    )


REPLACED_FREQUENCY_MAP = session_keys.make_build_frequency_map(
    REPLACED_SESSION_KEY, sdk_session._build_frequency_map, None, sdk_session
)


@SETTINGS
@given(items=st.lists(keyed_items(), max_size=8), ignore_ids=st.booleans())
def test_frequency_map_is_the_sdks_in_order(items: list[Any], ignore_ids: bool) -> None:
    # Often whole lists of plain dicts (the engine keys them in one call), else the loop.
    kwargs = {"ignore_openai_conversation_item_ids": ignore_ids}
    expected = outcome(sdk_session._build_frequency_map, items, **kwargs)
    actual = outcome(REPLACED_FREQUENCY_MAP, items, **kwargs)
    assert actual == expected
    if expected[0] == "ok":
        assert list(actual[1].items()) == list(expected[1].items())
        assert type(actual[1]) is dict


def test_fingerprint_of_unencodable_structures_is_the_sdks() -> None:
    cyclic: dict[str, Any] = {"type": "message"}
    cyclic["self"] = cyclic
    mixed_keys = {"type": "function_call", 1: "a", "b": 2}
    for item in (cyclic, mixed_keys):
        assert REPLACED_FINGERPRINT(item) == sdk_items.fingerprint_input_item(item)
        assert REPLACED_SESSION_KEY(item) == sdk_session._session_item_key(item)
    assert sdk_session._session_item_key(cyclic) == repr(cyclic)


# --- the session-callback classification ----------------------------------------------


class CopyingListSession(ListSession):
    """A session holding arbitrary Python objects (the SDK's SQLite one holds JSON),
    handing out a new list on every read."""

    session_id = "differential"

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(await super().get_items(limit))


@st.composite
def callback_recipes(draw: st.DrawFn) -> list[tuple[str, int, Any]]:
    """What a callback does with the copies it gets: a list of (action, index, extra)."""
    steps = []
    for _ in range(draw(st.integers(0, 12))):
        action = draw(
            st.sampled_from(
                [
                    "history",
                    "new",
                    "history",
                    "new",
                    "copy_history",
                    "copy_new",
                    "made_up",
                    "mutate_history",
                    "pop_history",
                    "variant_history",
                    "variant_new",
                    "leak_history",
                ]
            )
        )
        steps.append((action, draw(st.integers(0, 20)), draw(history_items(with_models=False))))
    return steps


def recipe_callback(
    recipe: list[tuple[str, int, Any]],
) -> Callable[[list[Any], list[Any]], list[Any]]:
    def callback(history: list[Any], new_items: list[Any]) -> list[Any]:
        combined: list[Any] = []
        for action, index, extra in recipe:
            pool = history if "history" in action else new_items
            if action == "made_up" or not pool:
                combined.append(copy.deepcopy(extra))
            elif action in ("history", "new"):
                combined.append(pool[index % len(pool)])
            elif action.startswith("copy_"):
                combined.append(copy.deepcopy(pool[index % len(pool)]))
            elif action == "leak_history":
                # What the callback sees of a history item (e.g. metadata) made visible.
                seen = pool[index % len(pool)]
                shown = sorted(map(str, seen)) if isinstance(seen, dict) else repr(type(seen))
                combined.append({"role": "user", "content": json.dumps(shown)})
            elif action.startswith("variant_"):
                # Equal to the SDK up to its session metadata, which its keys ignore.
                variant = copy.deepcopy(pool[index % len(pool)])
                if isinstance(variant, dict):
                    for key in ("_agents_tool_description", "_agents_tool_title", "created_by"):
                        variant.pop(key, None)
                    if index % 3 == 0:
                        variant["created_by"] = "someone"
                    elif index % 3 == 1:
                        variant["_agents_tool_title"] = "title"
                combined.append(variant)
            elif action == "mutate_history" and isinstance(pool[index % len(pool)], dict):
                pool[index % len(pool)]["mutated"] = index
                combined.append(pool[index % len(pool)])
            elif action == "pop_history":
                combined.append(pool.pop(index % len(pool)))
        return combined

    return callback


def _prepare_outcome(
    history: list[Any],
    new: list[Any] | str,
    recipe: list[tuple[str, int, Any]],
    limit: int | None,
    policy: str | None = None,
) -> tuple[str, Any]:
    from agents.memory import SessionSettings

    session = CopyingListSession(copy.deepcopy(history))
    settings_ = SessionSettings(limit=limit) if limit is not None else None
    try:
        prepared, persisted = asyncio.run(
            sdk_session.prepare_input_with_session(
                copy.deepcopy(new),
                session,
                recipe_callback(recipe),
                settings_,
                reasoning_item_id_policy=policy,  # type: ignore[arg-type]
            )
        )
    except Exception as exc:
        return "raise", (type(exc), str(exc))
    return "ok", (prepared, persisted)


WITH_METADATA = st.builds(
    lambda item, key: {**item, key: "meta"},
    sdk_items_strategy(),
    st.sampled_from(["_agents_tool_description", "_agents_tool_title", "created_by"]),
)
PLAIN_HISTORY = st.lists(
    st.one_of(
        sdk_items_strategy(),
        WITH_METADATA,
        st.sampled_from(
            [{"role": "user", "content": "same"}, {"type": "message", "content": [1, 1.0]}]
        ),
    ),
    max_size=8,
)
ODD_HISTORY = st.lists(
    st.one_of(history_items(with_models=False, junk=False), odd_items()), max_size=6
)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=st.one_of(PLAIN_HISTORY, ODD_HISTORY),
    # A str input is the case whose history copies take one deep copy (``_history_copies``).
    new=st.one_of(
        st.lists(
            st.one_of(sdk_items_strategy(), history_items(with_models=False, junk=False)),
            min_size=1,
            max_size=4,
        ),
        st.text(max_size=12),
    ),
    recipe=callback_recipes(),
    limit=st.one_of(st.none(), st.integers(0, 6)),
    policy=st.sampled_from([None, "omit", "preserve"]),
)
def test_prepare_input_with_session_matches_sdk_installed(
    history: list[Any],
    new: list[Any] | str,
    recipe: list[tuple[str, int, Any]],
    limit: int | None,
    policy: str | None,
) -> None:
    expected = _prepare_outcome(history, new, recipe, limit, policy)
    with accelerator.installed():
        actual = _prepare_outcome(history, new, recipe, limit, policy)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "raise":
        assert actual[1] == expected[1]
    else:
        assert_same_tree(expected[1], actual[1])


def test_prepare_uses_canonical_keys_for_plain_items_and_text_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tables: list[bool] = []
    real = session_keys.canonical_key_table

    def spy(call: Any) -> Any:
        table = real(call)
        tables.append(table is not None)
        return table

    monkeypatch.setattr(session_keys, "canonical_key_table", spy)
    plain = [{"role": "user", "content": "a"}, {"type": "function_call", "call_id": "c", "x": None}]
    recipe = [
        ("history", 0, None),
        ("copy_history", 1, None),
        ("new", 0, None),
        ("copy_new", 0, None),
    ]
    for history in (
        plain,
        [*plain, {"type": "message", "v": float("nan")}],
        [*plain, {"k": Kind.CALL}],
    ):
        expected = _prepare_outcome(history, [{"role": "user", "content": "b"}], recipe, None)
        with accelerator.installed():
            actual = _prepare_outcome(history, [{"role": "user", "content": "b"}], recipe, None)
        assert_same_tree(expected, actual)
    if public_items.BACKEND == "rust":
        # NaN is plain (json.dumps and canonical_json both write it as a token); an enum is not.
        assert tables == [True, True, False]
    else:
        assert tables == [], "the pure twin encodes slower than the SDK: text keys only"


def test_prepare_copies_a_plain_history_once_for_a_str_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stripping copy that only feeds the deep copy is skipped exactly when it would
    change nothing: a str input, no stripped key, a policy that keeps the list."""
    from histcore.openai_agents import _prepare

    converted: list[int] = []
    real = _prepare._converted

    def counting(module: Any, items: list[Any], stripped: Any) -> list[Any]:
        converted.append(len(items))
        return real(module, items, stripped)

    monkeypatch.setattr(_prepare, "_converted", counting)
    plain = [
        {"role": "user", "content": [{"type": "input_text", "text": "a"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]
    recipe = [("history", 0, None), ("history", 1, None), ("copy_history", 2, None)]
    recipe += [("mutate_history", 3, None), ("new", 0, None)]
    strips = int(
        "created_by" not in sdk_items.strip_internal_input_item_metadata({"created_by": 1})
    )
    cases = [
        (plain, "hi", None, 0),
        (plain, "hi", "preserve", 0),
        (plain, "hi", "omit", 1),  # the policy makes new reasoning items
        (plain, [{"role": "user", "content": "hi"}], None, 1),  # list input: SDK order
        # A key the SDK strips (0.22.1 on; 0.22.0 strips only the tool metadata).
        ([*plain, {"role": "user", "content": "x", "created_by": "me"}], "hi", None, strips),
        ([plain[0], plain[0]], "hi", None, 1),  # a repeated item: deepcopy shares it
    ]
    for history, new, policy, expected_converted in cases:
        expected = _prepare_outcome(history, new, recipe, None, policy)
        converted.clear()
        with accelerator.installed():
            actual = _prepare_outcome(history, new, recipe, None, policy)
        assert_same_tree(expected, actual)
        assert actual[0] == "ok"
        assert len(converted) == expected_converted, (new, policy)


def test_prepared_input_is_new_dicts_even_when_pruning_reads_the_callbacks() -> None:
    """The orphan pruning reads the callback's own dicts; what the model gets are copies."""
    from agents.memory import SessionSettings

    history = [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]
    returned: list[Any] = []

    def callback(past: list[Any], new: list[Any]) -> list[Any]:
        returned.extend([*past, *new, {"role": "user", "content": "made up"}])
        return returned

    with accelerator.installed():
        prepared, persisted = asyncio.run(
            sdk_session.prepare_input_with_session(
                "hi", CopyingListSession(history), callback, SessionSettings()
            )
        )
    # The orphan call is pruned; the rest are equal to, and not, the callback's dicts.
    assert prepared == returned[1:]
    assert not {id(item) for item in prepared} & {id(item) for item in returned}
    assert persisted == returned[1:]


def test_reference_map_consumes_each_occurrence_once() -> None:
    shared = {"role": "user", "content": "same"}
    twin = {"role": "user", "content": "same"}
    items = [shared, twin, shared]
    key = REPLACED_SESSION_KEY
    build = session_keys.make_build_reference_map(key)
    sdk_map = sdk_session._build_reference_map(items)
    our_map = build(items)
    text = key(shared)
    sequence = [shared, shared, shared, twin, twin, {"role": "user", "content": "same"}]
    expected = [sdk_session._consume_reference(sdk_map, text, c) for c in sequence]
    actual = [session_keys.consume_reference(our_map, text, c) for c in sequence]
    assert actual == expected == [True, True, False, True, False, False]
    assert sdk_map == {}
    assert not any(our_map.counts.values())
    freq = session_keys.make_build_frequency_map(key)(items)
    assert freq == sdk_session._build_frequency_map(items) == {text: 3}


# --- whole-list copies -------------------------------------------------------------------


def shared_and_cyclic(items: list[Any], draw: st.DrawFn) -> list[Any]:
    """Make some sub-objects shared, repeated or cyclic, as in-memory sessions may."""
    if len(items) >= 2 and draw(st.booleans()):
        items.append(items[draw(st.integers(0, len(items) - 1))])
    dicts = [item for item in items if isinstance(item, dict)]
    if len(dicts) >= 2 and draw(st.booleans()):
        dicts[0]["shared"] = dicts[1]["shared"] = [1, {"x": 2}]
    if dicts and draw(st.integers(0, 12)) == 0 and not any("deep" in d for d in dicts):
        dicts[-1]["self"] = dicts[-1]
    return items


@st.composite
def copyable_lists(draw: st.DrawFn) -> list[Any]:
    plain = st.dictionaries(st.text(max_size=4), json_values(max_leaves=6), max_size=4)
    odd = st.dictionaries(st.text(max_size=3), ODD_VALUES, max_size=3)
    items: list[Any] = draw(
        st.lists(
            st.one_of(plain, plain, plain, odd, odd_items(), st.builds(Loose, plain)),
            max_size=8,
        )
    )
    if draw(st.integers(0, 9)) == 0:
        items.append({"deep": _nested(draw(st.integers(240, 270)))})
    return shared_and_cyclic(items, draw)


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


REPLACED_TO_DUMP = replacements.make_to_dump_compatible(sdk_json._to_dump_compatible)
REPLACED_CLONE = replacements.make_clone_original_input(sdk_run_state._clone_original_input)
COPY_MODULE = replacements.CopyModule()


@SETTINGS
@given(items=copyable_lists())
def test_to_dump_compatible_matches_sdk(items: list[Any]) -> None:
    assert_same_copy(outcome(sdk_json._to_dump_compatible, items), outcome(REPLACED_TO_DUMP, items))


@SETTINGS
@given(items=copyable_lists())
def test_deepcopy_matches_stdlib(items: list[Any]) -> None:
    assert_same_copy(outcome(copy.deepcopy, items), outcome(COPY_MODULE.deepcopy, items))
    assert_same_copy(
        outcome(sdk_run_state._clone_original_input, items), outcome(REPLACED_CLONE, items)
    )


def test_copies_take_the_c_path_on_plain_items(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [
        {"role": "user", "content": "caf\u00e9"},
        {"type": "function_call", "call_id": "c1", "arguments": "{}", "n": [1, 2.5, None]},
    ]
    copied = COPY_MODULE.deepcopy(items)
    dumped = REPLACED_TO_DUMP(items)
    assert copied == items == dumped
    assert all(a is not b for a, b in zip(copied, items, strict=True))
    # Nothing else may reach the stdlib's deepcopy or the SDK's converter for them.
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("stdlib deepcopy used"))
    assert replacements.CopyModule(copy).deepcopy(items) == items
    boom = replacements.make_to_dump_compatible(lambda obj: pytest.fail("SDK converter used"))
    assert boom(items) == items


def test_copies_defer_on_tuples_nan_and_enums() -> None:
    for items in (
        [{"t": (1, 2)}],
        [{"f": float("nan")}],
        [{"k": Kind.CALL}],
        [{"n": 2**70}],
        [{1: "int key"}],
    ):
        assert_same_copy(
            outcome(sdk_json._to_dump_compatible, items), outcome(REPLACED_TO_DUMP, items)
        )
        assert_same_copy(outcome(copy.deepcopy, items), outcome(COPY_MODULE.deepcopy, items))


def test_copy_module_passes_everything_else_through() -> None:
    memo: dict[int, Any] = {}
    value = [{"a": 1}]
    assert COPY_MODULE.deepcopy(value, memo) == value
    assert memo
    assert COPY_MODULE.copy is copy.copy
    assert COPY_MODULE.Error is copy.Error
    assert COPY_MODULE.deepcopy("text") == "text"


def test_sorted_json_matches_json_dumps_on_awkward_values() -> None:
    from histcore.openai_agents._sorted_json import FAST_ENCODER, sorted_json

    assert FAST_ENCODER  # CPython ships the C encoder; the probe must accept it
    value = {
        "b": [1.0, 1e-05, -0.0, float("inf"), 2**80],
        "a": {"\u00e9": "\ud800", "x": Colour.RED},
    }
    text, used_default = sorted_json(value)
    assert text == json.dumps(value, sort_keys=True, default=str)
    assert used_default
    assert sorted_json({"a": 1}) == ('{"a": 1}', False)
    with pytest.raises(ValueError):  # noqa: PT012
        cyclic: list[Any] = []
        cyclic.append(cyclic)
        sorted_json(cyclic)
    assert sorted_json({"after": "failure"}) == ('{"after": "failure"}', False)


def test_replacements_keep_the_sdk_signatures() -> None:
    pairs = [
        (sdk_items._dedupe_key, REPLACED_KEY),
        (sdk_items.drop_orphan_function_calls, REPLACED_ORPHANS),
        (sdk_items.fingerprint_input_item, REPLACED_FINGERPRINT),
        (sdk_session._session_item_key, REPLACED_SESSION_KEY),
    ]
    for original, replacement in pairs:
        ours = inspect.signature(replacement, follow_wrapped=False).parameters.values()
        theirs = inspect.signature(original).parameters.values()
        assert [(p.name, p.kind, p.default) for p in ours] == [
            (p.name, p.kind, p.default) for p in theirs
        ]
        assert replacement.__name__ == original.__name__


# --- the json stand-in in the SDK's SQLite session -------------------------------------

JSON_STAND_IN = replacements.JsonModule(json)


@st.composite
def stored_texts(draw: st.DrawFn) -> Any:
    """What a message_data column can hold: the SDK's own json.dumps text (big ints, NaN,
    lone surrogates included), that text damaged, other encodings, and non-text."""
    value = draw(json_values())
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    choice = draw(st.integers(0, 7))
    if choice == 0:
        return text[: draw(st.integers(0, len(text)))]  # a truncated write
    if choice == 1:
        return "\ufeff" + text
    if choice == 2:
        return text.encode(draw(st.sampled_from(["utf-8", "utf-16", "utf-8-sig"])), "surrogatepass")
    if choice == 3:
        return draw(st.one_of(st.none(), st.integers(), st.binary(max_size=6), st.text(max_size=6)))
    if choice == 4:
        return f'{{"n": {draw(st.integers(-(10**40), 10**40))}, "f": {draw(st.floats())!r}}}'
    return text


@SETTINGS
@given(stored_texts())
def test_json_stand_in_loads_what_json_loads(data: Any) -> None:
    expected = outcome(json.loads, data)
    actual = outcome(JSON_STAND_IN.loads, data)
    assert expected[0] == actual[0], (data, expected, actual)
    if expected[0] == "raise":
        assert expected[1] == actual[1]
    else:
        assert_same_tree(expected[1], actual[1])


def test_json_stand_in_forwards_everything_else() -> None:
    value = {"n": 2**70, "x": [1.5, None, "é"]}
    assert JSON_STAND_IN.dumps(value) == json.dumps(value)
    assert JSON_STAND_IN.JSONDecodeError is json.JSONDecodeError
    assert JSON_STAND_IN.loads("[1.0]", parse_float=str) == ["1.0"]
    assert JSON_STAND_IN.loads('{"big": 123456789012345678901234567890}') == {
        "big": 123456789012345678901234567890
    }


def test_sdk_sqlite_session_reads_alike_when_installed(tmp_path: Any) -> None:
    memory = pytest.importorskip("agents.memory")
    items = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "c1", "output": "x", "n": 2**70 + 1},
        {"type": "reasoning", "id": "r1", "summary": [], "nan": float("nan")},
    ]
    path = str(tmp_path / "sdk.db")

    async def roundtrip() -> list[Any]:
        session = memory.SQLiteSession("s", path)
        try:
            if not await session.get_items():
                await session.add_items(items)
            return [await session.get_items(), await session.get_items(limit=2)]
        finally:
            session.close()

    plain = asyncio.run(roundtrip())
    accelerator.install()
    fast_read = asyncio.run(roundtrip())
    assert_same_tree(plain, fast_read)
    assert fast_read[0][1]["n"] == 2**70 + 1
