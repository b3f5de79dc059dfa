"""``prepared_model_input``: orphan pruning, the latest-value dedupe and the repair of a
session turn's model input, read in one walk per item by the Rust engine, must answer as
their composition does, in both engines: the kept objects, NotImplemented, exceptions, and
the order in which values that run Python code are compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.test_checked_dedupe import repeated
from tests.engine.test_input_rules import (
    LOG,
    ODD_CASES,
    RAISING_CASES,
    reasoning_histories,
    without_tools,
)
from tests.support.examples import examples
from tests.support.strategies import call, histories, history_items, output, sdk_histories

PROPERTY = settings(max_examples=examples(200), deadline=None)

METADATA = ("_agents_tool_description", "_agents_tool_title")

Outcome = tuple[str, Any]


def _outcome(run: Any) -> Outcome:
    try:
        result = run()
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))
    if result is NotImplemented:
        return ("declined", None)
    return ("returned", [id(item) for item in result])


def _history_arg(engine: ModuleType, history: Any, kept: bool) -> Any:
    return engine.StoredHistory(history) if kept and history is not None else history


def _fused(
    engine: ModuleType,
    items: Any,
    pruning: Any,
    output_pruning: Any,
    history: Any,
    kept: bool = False,
    without: Any = None,
) -> Outcome:
    def run() -> Any:
        return engine.prepared_model_input(
            items,
            pruning,
            output_pruning_indexes=output_pruning,
            history=_history_arg(engine, history, kept),
            without=without,
        )

    return _outcome(run)


def _composed(
    engine: ModuleType, items: Any, pruning: Any, output_pruning: Any, history: Any, kept: bool
) -> Outcome:
    def run() -> Any:
        stored = _history_arg(engine, history, kept)
        pruned = engine.drop_orphan_function_calls(
            items, pruning, output_pruning_indexes=output_pruning
        )
        deduplicated = engine.deduplicate_input_items_preferring_latest(pruned)
        return engine.repair_input(deduplicated, history=stored)

    return _outcome(run)


def _assert_composes(
    pure: ModuleType,
    core: ModuleType,
    items: list[Any],
    history: list[Any] | None,
    pruning: Any = None,
    output_pruning: Any = None,
) -> None:
    for kept in (False, True):
        expected = _composed(pure, items, pruning, output_pruning, history, kept)
        assert _composed(core, items, pruning, output_pruning, history, kept) == expected
        for engine in (pure, core):
            assert _fused(engine, items, pruning, output_pruning, history, kept) == expected
            screened = _fused(engine, items, pruning, output_pruning, history, kept, METADATA)
            plain = type(items) is list and all(
                type(item) is dict and not any(key in item for key in METADATA) for item in items
            )
            assert screened == (expected if plain else ("declined", None))


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[Any], list[Any], range | set[int] | None, bool]:
    """(items, stored history, pruning indexes, output pruning): a history read for a
    turn (whole, or a window of it) followed by new items, as ``prepare_input_with_session``
    passes them, the history being the items' own prefix."""
    history = draw(
        st.one_of(
            repeated(sdk_histories(max_size=20)),
            repeated(reasoning_histories()),
            repeated(histories(with_models=False)),
            reasoning_histories().map(without_tools),
        )
    )
    if draw(st.booleans()):
        history = history[draw(st.integers(0, len(history))) :]
    new = draw(st.lists(history_items(with_models=False), max_size=4))
    positions = range(len(history))
    pruning = draw(st.sampled_from([positions, set(positions), None]))
    return [*history, *new], history, pruning, draw(st.booleans())


@PROPERTY
@given(turn=turns())
def test_a_turn_answers_as_the_composition(
    pure: ModuleType, core: ModuleType, turn: tuple[list[Any], list[Any], Any, bool]
) -> None:
    # Duplicates (same objects and equal copies), reorderings, orphan calls and outputs,
    # reasoning that lost its item, junk and odd field values; the history is the items'
    # own prefix (read from the items' walks) or a StoredHistory of it.
    items, history, pruning, windowed = turn
    _assert_composes(pure, core, items, history, pruning, pruning if windowed else None)


@PROPERTY
@given(
    items=st.one_of(
        repeated(sdk_histories(max_size=20)),
        repeated(reasoning_histories()),
        repeated(histories(with_models=False)),
        histories(),
    ),
    history=st.one_of(st.none(), sdk_histories(), reasoning_histories(), histories()),
    pruning=st.one_of(st.none(), st.sets(st.integers(-2, 40), max_size=30)),
    output_pruning=st.one_of(st.none(), st.sets(st.integers(0, 40), max_size=30)),
)
def test_any_items_and_history_answer_as_the_composition(
    pure: ModuleType,
    core: ModuleType,
    items: list[Any],
    history: list[Any] | None,
    pruning: set[int] | None,
    output_pruning: set[int] | None,
) -> None:
    # A history that is not the items' prefix (models and junk included), any positions.
    _assert_composes(pure, core, items, history, pruning, output_pruning)


@PROPERTY
@given(data=st.data())
def test_a_callback_reordering_answers_as_the_composition(
    pure: ModuleType, core: ModuleType, data: st.DataObject
) -> None:
    # What a session_input_callback may return: the history reordered and repeated, so
    # the stored history is no longer the items' prefix.
    history = data.draw(st.one_of(reasoning_histories(), sdk_histories(max_size=20)))
    items = data.draw(repeated(st.just(history)))
    positions = set(data.draw(st.sets(st.integers(0, max(len(items) - 1, 0)))))
    _assert_composes(pure, core, items, history, positions, None)


def _generated(values: list[Any]) -> Iterator[Any]:
    yield from values


def test_generators_are_read_once_as_the_composition_reads_them(
    pure: ModuleType, core: ModuleType
) -> None:
    history = [call("c1"), output("c1"), call("c2"), {"role": "user", "content": "x"}]
    items = [*history, {"role": "user", "content": "new"}]
    for engine in (pure, core):
        expected = _composed(pure, list(items), [0, 1, 2, 3], None, list(history), False)
        assert expected[0] == "returned"
        outcome = _fused(
            engine,
            _generated(items),
            _generated([0, 1, 2, 3]),
            _generated([2]),
            _generated(history),
        )
        assert outcome == _composed(
            pure, _generated(items), _generated([0, 1, 2, 3]), _generated([2]), history, False
        )


@pytest.mark.parametrize("case", ODD_CASES.values(), ids=ODD_CASES.keys())
def test_values_that_run_code_are_compared_as_the_composition_compares_them(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, history = case
    for pruning in (None, set(range(len(items) // 2))):
        LOG.clear()
        expected = _composed(pure, items, pruning, pruning, history, False)
        expected_log = list(LOG)
        for engine in (core, pure):
            LOG.clear()
            assert _fused(engine, items, pruning, pruning, history) == expected
            assert LOG == expected_log


@pytest.mark.parametrize("case", RAISING_CASES.values(), ids=RAISING_CASES.keys())
def test_exceptions_are_the_compositions(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, history = case
    expected = _composed(pure, items, None, None, history, False)
    for engine in (core, pure):
        assert _fused(engine, items, None, None, history) == expected


def test_bad_arguments_are_named_as_the_composition_names_them(
    pure: ModuleType, core: ModuleType
) -> None:
    items = [call("c1"), output("c1")]
    for bad in ("ab", 5, [1.5], [True]):
        expected = _composed(pure, items, bad, None, None, False)
        assert expected[0] == "raised"
        for engine in (core, pure):
            assert _fused(engine, items, bad, None, None) == expected
            assert _fused(engine, items, None, bad, None) == _composed(
                pure, items, None, bad, None, False
            )
            # The screen comes first: a declined list is declined whatever the positions.
            assert _fused(engine, [*items, [1]], bad, None, None, without=METADATA) == (
                "declined",
                None,
            )
    for bad_history in (5, "text", {"a": 1}):
        expected = _composed(pure, items, None, None, bad_history, False)
        assert expected[0] == "raised"
        for engine in (core, pure):
            assert _fused(engine, items, None, None, bad_history) == expected
    for bad_items in (5, "text", {"a": 1}):
        expected = _composed(pure, bad_items, None, None, None, False)
        assert expected[0] == "raised"
        for engine in (core, pure):
            assert _fused(engine, bad_items, None, None, None) == expected


def test_without_screens_exact_lists_of_exact_dicts(pure: ModuleType, core: ModuleType) -> None:
    class Dict(dict[str, Any]):
        pass

    plain = [{"role": "user", "content": "x"}, call("c1"), output("c1")]
    for engine in (pure, core):
        assert _fused(engine, plain, None, None, None, without=METADATA)[0] == "returned"
        assert _fused(engine, plain, None, None, None, without=())[0] == "returned"
        for declined in (
            tuple(plain),
            [*plain, Dict(role="user")],
            [*plain, {"role": "user", "_agents_tool_title": "t"}],
            [{**call("c2"), "_agents_tool_description": None}],
        ):
            assert _fused(engine, declined, None, None, None, without=METADATA) == (
                "declined",
                None,
            )
        for bad, message in (
            (["a"], "without must be a tuple of str, not list"),
            (("a", 1), "without must be a tuple of str, not a tuple holding int"),
        ):
            with pytest.raises(TypeError, match=rf"^{message}$"):
                engine.prepared_model_input(plain, without=bad)


def test_a_history_of_many_keys_or_odd_keys_answers_alike(
    pure: ModuleType, core: ModuleType
) -> None:
    # Items the walk cannot read (many keys, a non-str key) make the engine read as the
    # composition does; so does a history holding such items.
    many = {"type": "function_call", "call_id": "c1", **{f"k{n}": n for n in range(20)}}
    int_keyed: dict[Any, Any] = {"type": "function_call_output", "call_id": "c1", 7: "seven"}
    reasoning = {"type": "reasoning", "id": "r1", ("a", 1): None}
    message = {"type": "message", "id": "m1", "role": "assistant"}
    items = [many, int_keyed, reasoning, message, {"type": "reasoning", "id": "r2"}]
    _assert_composes(pure, core, items, None)
    _assert_composes(pure, core, items, items[:3])
    _assert_composes(pure, core, items[2:], [reasoning, {"type": "message", "id": "m1"}])
    _assert_composes(pure, core, [message], [many, reasoning, message])


@PROPERTY
@given(
    items=repeated(sdk_histories(max_size=20)),
    bounds=st.tuples(
        st.integers(-30, 30) | st.integers(-(2**70), 2**70),
        st.integers(-30, 30) | st.integers(-(2**70), 2**70),
        st.integers(-7, 7).filter(bool) | st.integers(-(2**66), 2**66).filter(bool),
    ).filter(lambda bounds: len(range(*bounds)[:1001]) <= 1000),
)
def test_a_range_of_positions_is_its_members(
    pure: ModuleType, core: ModuleType, items: list[Any], bounds: tuple[int, int, int]
) -> None:
    # The engine reads a range's bounds instead of iterating it: the same positions, as
    # pruning and as output pruning positions.
    positions = range(*bounds)
    for function in ("drop_orphan_function_calls", "prepared_model_input"):
        expected = [
            [id(item) for item in getattr(pure, function)(items, list(positions))],
            [
                id(item)
                for item in getattr(pure, function)(
                    items, None, output_pruning_indexes=list(positions)
                )
            ],
        ]
        for engine in (pure, core):
            run = getattr(engine, function)
            assert [
                [id(item) for item in run(items, positions)],
                [id(item) for item in run(items, None, output_pruning_indexes=positions)],
            ] == expected
