"""``screened_deduplicate_checked``: the screened dedupe and ``input_problems`` of what it
keeps, read in one pass by the Rust engine, must answer as their composition does, in
both engines: the kept objects, the problems, NotImplemented, exceptions, and the order in
which values that run Python code are compared.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.test_input_rules import (
    LOG,
    ODD_CASES,
    RAISING_CASES,
    Loud,
    reasoning_histories,
    without_tools,
)
from tests.support.examples import examples
from tests.support.strategies import histories, history_items, sdk_histories

PROPERTY = settings(max_examples=examples(200), deadline=None)

Outcome = tuple[str, Any]


def _stored(engine: ModuleType, history: list[Any] | None) -> Any:
    return None if history is None else engine.StoredHistory(history)


def _fused(
    engine: ModuleType, items: Any, latest: bool, history: list[Any] | None, watch: Any = None
) -> Outcome:
    """What ``screened_deduplicate_checked`` gave: kept objects (by identity) and problems,
    NotImplemented, or the exception raised."""
    try:
        stored = _stored(engine, history)
        result = engine.screened_deduplicate_checked(items, latest, watch, history=stored)
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))
    if result is NotImplemented:
        return ("declined", None)
    kept, problems = result
    return ("returned", ([id(item) for item in kept], problems))


def _composed(
    engine: ModuleType, items: Any, latest: bool, history: list[Any] | None, watch: Any = None
) -> Outcome:
    """The same, from ``screened_deduplicate`` and then ``input_problems``."""
    try:
        stored = _stored(engine, history)
        kept = engine.screened_deduplicate(items, latest, watch)
        if kept is NotImplemented:
            return ("declined", None)
        problems = engine.input_problems(kept, history=stored)
    except Exception as exc:  # the exception itself is what gets compared
        return ("raised", (type(exc), str(exc)))
    return ("returned", ([id(item) for item in kept], problems))


def _assert_composes(
    pure: ModuleType, core: ModuleType, items: Any, history: list[Any] | None
) -> None:
    for latest in (True, False):
        expected = _composed(pure, items, latest, history)
        assert _composed(core, items, latest, history) == expected
        assert _fused(pure, items, latest, history) == expected
        assert _fused(core, items, latest, history) == expected


@st.composite
def repeated(draw: st.DrawFn, items: st.SearchStrategy[list[Any]]) -> list[Any]:
    """``items`` with some of them repeated (the same objects, and equal copies) and
    reordered: what the dedupe collapses."""
    base = draw(items)
    if not base:
        return base
    extra = draw(st.lists(st.sampled_from(base), max_size=6))
    copies = [dict(item) if type(item) is dict else item for item in extra]
    mixed = [*base, *extra, *copies]
    return draw(st.permutations(mixed)) if draw(st.booleans()) else mixed


@PROPERTY
@given(
    items=st.one_of(
        repeated(sdk_histories(max_size=20)),
        repeated(reasoning_histories()),
        repeated(histories(with_models=False)),
        histories(),
    ),
    history=st.one_of(st.none(), sdk_histories(), reasoning_histories()),
)
def test_engines_answer_as_the_composition(
    pure: ModuleType, core: ModuleType, items: list[Any], history: list[Any] | None
) -> None:
    # Duplicates (same objects and equal copies), reorderings, junk, odd field values.
    _assert_composes(pure, core, items, history)


@PROPERTY
@given(data=st.data())
def test_a_window_of_the_history_answers_as_the_composition(
    pure: ModuleType, core: ModuleType, data: st.DataObject
) -> None:
    history = data.draw(st.one_of(reasoning_histories(), sdk_histories(max_size=20)))
    start = data.draw(st.integers(0, len(history)))
    items = [*history[start:], *data.draw(st.lists(history_items(with_models=False), max_size=4))]
    _assert_composes(pure, core, items, history)


@PROPERTY
@given(data=st.data())
def test_a_filtered_history_answers_as_the_composition(
    pure: ModuleType, core: ModuleType, data: st.DataObject
) -> None:
    # What a filter removing tool calls and outputs leaves (reasoning items that lost
    # their successor, rule (f)), repeated as a retry would, with and without the history.
    history = data.draw(reasoning_histories())
    items = data.draw(repeated(st.just(without_tools(history))))
    _assert_composes(pure, core, items, history)
    _assert_composes(pure, core, items, None)


@pytest.mark.parametrize("case", ODD_CASES.values(), ids=ODD_CASES.keys())
def test_values_that_run_code_are_compared_as_the_composition_compares_them(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, history = case
    history = None if history is None else [item for item in history if type(item) is dict]
    for latest in (True, False):
        LOG.clear()
        expected = _composed(pure, items, latest, history)
        expected_log = list(LOG)
        for engine, answer in ((core, _fused), (pure, _fused), (core, _composed)):
            LOG.clear()
            assert answer(engine, items, latest, history) == expected
            assert LOG == expected_log


@pytest.mark.parametrize("case", RAISING_CASES.values(), ids=RAISING_CASES.keys())
def test_exceptions_are_the_compositions(
    pure: ModuleType, core: ModuleType, case: tuple[list[Any], list[Any] | None]
) -> None:
    items, _ = case
    for latest in (True, False):
        expected = _composed(pure, items, latest, None)
        assert _fused(core, items, latest, None) == expected
        assert _fused(pure, items, latest, None) == expected


class _Rewriter:
    """A key whose comparison with ``"type"`` (its hash is that of ``"type"``) rewrites
    another item: Python code that runs while the dedupe reads the items."""

    def __init__(self, victim: dict[str, Any]) -> None:
        self.victim = victim

    def __hash__(self) -> int:
        return hash("type")

    def __eq__(self, other: object) -> bool:
        LOG.append(f"rewrite on {other!r}")
        self.victim["call_id"] = "rewritten"
        return False


def _rewritten_case() -> list[Any]:
    call = {"type": "function_call", "call_id": "c1", "id": "fc1"}
    output = {"type": "function_call_output", "call_id": "c1"}
    odd: dict[Any, Any] = {"role": "user", "content": "hi"}
    odd[_Rewriter(call)] = 1
    return [call, output, odd]


def test_code_run_by_one_item_changes_what_later_reads_of_another_see(
    pure: ModuleType, core: ModuleType
) -> None:
    # The call's fields were walked before the odd item's lookup rewrote its call_id: the
    # problems are those of the rewritten call, as when the dedupe and the check are apart.
    LOG.clear()
    expected = _composed(pure, _rewritten_case(), True, None)
    expected_log = list(LOG)
    assert expected[0] == "returned"
    kinds = [(at, kind) for at, kind, _ in expected[1][1]]
    assert kinds == [(0, "call_without_output"), (1, "output_without_call")]
    # The dedupe's reads, then the check's (how many lookups probe the odd key depends on
    # the process's string hashes).
    assert len(expected_log) >= 2
    assert set(expected_log) == {"rewrite on 'type'"}
    for engine in (pure, core):
        LOG.clear()
        outcome = _fused(engine, _rewritten_case(), True, None)
        assert (outcome[0], outcome[1][1]) == (expected[0], expected[1][1])
        assert LOG == expected_log


def test_dicts_the_engine_reads_by_lookups_answer_alike(pure: ModuleType, core: ModuleType) -> None:
    # Many keys, a non-str key, an int key equal to nothing: read by lookups, not a walk.
    many = {"type": "function_call", "call_id": "c1", **{f"k{n}": n for n in range(20)}}
    int_keyed: dict[Any, Any] = {"type": "function_call_output", "call_id": "c1", 7: "seven"}
    reasoning = {"type": "reasoning", "id": "r1", ("a", 1): None}
    items = [many, int_keyed, reasoning, {"type": "message", "id": "m1", "role": "assistant"}]
    _assert_composes(pure, core, items, None)
    _assert_composes(pure, core, items, [reasoning, {"type": "message", "id": "m1"}])


def test_lists_the_dedupe_declines_are_declined(pure: ModuleType, core: ModuleType) -> None:
    class Text(str):
        pass

    for engine in (pure, core):
        for items in (
            ({"type": "message"},),
            [{"type": "function_call_output", "call_id": Text("c1")}],
            [{"type": 5}],
            [{"type": "message", "id": 3}],
        ):
            assert _fused(engine, items, True, None) == ("declined", None)


def test_a_watch_that_is_not_intact_declines(pure: ModuleType, core: ModuleType) -> None:
    for engine in (pure, core):
        namespace = {"name": len}
        watch = engine.NameWatch([(namespace, ["name"])])
        watch.arm()
        items = [{"type": "message", "role": "user"}]
        assert _fused(engine, items, True, None, watch)[0] == "returned"
        namespace["name"] = max
        assert _fused(engine, items, True, None, watch) == ("declined", None)


def test_history_must_be_a_stored_history(pure: ModuleType, core: ModuleType) -> None:
    for engine in (pure, core):
        for bad, name in (([], "list"), ((), "tuple"), (5, "int")):
            with pytest.raises(
                TypeError, match=rf"^history must be a StoredHistory or None, not {name}$"
            ):
                engine.screened_deduplicate_checked([], True, None, history=bad)
        other = core if engine is pure else pure
        with pytest.raises(TypeError, match=r"^history must be a StoredHistory or None"):
            engine.screened_deduplicate_checked([], history=other.StoredHistory())


def test_loud_values_of_dropped_duplicates_are_not_compared(
    pure: ModuleType, core: ModuleType
) -> None:
    # A shell call repeated with a status that logs its comparisons: only the kept copy
    # is read by the check (as in the composition), whichever copy the dedupe keeps.
    first = {"type": "shell_call", "call_id": "s1", "id": "sh1", "status": Loud("first", True)}
    later = {"type": "shell_call", "call_id": "s1", "id": "sh1", "status": Loud("later", False)}
    items = [first, {"role": "user", "content": "x"}, later]
    for latest in (True, False):
        LOG.clear()
        expected = _composed(pure, items, latest, None)
        expected_log = list(LOG)
        assert len(expected_log) == 1
        for engine in (pure, core):
            LOG.clear()
            assert _fused(engine, items, latest, None) == expected
            assert LOG == expected_log
