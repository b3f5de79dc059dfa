"""prepare_input_with_session: model input and persisted items (docs/design.md rules 1-6)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.exceptions import UserError
from histcore.items import repair_input
from histcore.sessions import (
    MemorySession,
    SessionABC,
    SessionSettings,
    SQLiteSession,
    prepare_input_with_session,
    save_turn_to_session,
)
from histcore.testing import generate_history
from tests.support.examples import examples
from tests.support.pg import ListSession

Factory = Callable[[], SessionABC]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str, arguments: str = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": arguments}


def output(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


@pytest.fixture(params=["memory", "sqlite"])
async def make_session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    opened: list[SQLiteSession] = []

    def factory() -> SessionABC:
        if request.param == "memory":
            return MemorySession("s")
        session = SQLiteSession("s", tmp_path / f"db{len(opened)}.sqlite")
        opened.append(session)
        return session

    yield factory
    for session in opened:
        session.close()


async def seeded(make_session: Factory, items: list[Any]) -> SessionABC:
    session = make_session()
    await session.add_items(items)
    return session


# --- without a callback -------------------------------------------------------------------


async def test_without_callback_model_input_is_history_plus_new(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    model_input, to_persist = await prepare_input_with_session("u1", session)
    assert model_input == [user("u0"), assistant("a0"), user("u1")]
    assert to_persist == [user("u1")]
    model_input, to_persist = await prepare_input_with_session([user("x"), user("y")], session)
    assert model_input[-2:] == [user("x"), user("y")]
    assert to_persist == [user("x"), user("y")]


async def test_str_input_is_one_user_message(make_session: Factory) -> None:
    session = make_session()
    assert await prepare_input_with_session("hi", session) == ([user("hi")], [user("hi")])


async def test_without_session_the_input_is_the_model_input() -> None:
    items = [user("a")]
    model_input, to_persist = await prepare_input_with_session(items, None)
    assert model_input == items
    assert model_input[0] is not items[0]
    assert to_persist == []


# --- the classification rules ---------------------------------------------------------------


async def test_design_example_repeating_history_zero(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    model_input, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: [*history, history[0], *new]
    )
    assert model_input == [user("u0"), assistant("a0"), user("u0"), user("u1")]
    assert to_persist == [user("u1")]


async def test_four_turns_appending_history_zero_store_each_turn_once(
    make_session: Factory,
) -> None:
    session = make_session()

    def callback(history: list[Any], new: list[Any]) -> list[Any]:
        return history + ([history[0]] if history else []) + new

    for turn in range(4):
        _model_input, to_persist = await prepare_input_with_session(f"u{turn}", session, callback)
        assert to_persist == [user(f"u{turn}")]
        await save_turn_to_session(session, to_persist, [assistant(f"a{turn}")])
    stored = await session.get_items()
    assert len(stored) == 8
    assert stored == [item for t in range(4) for item in (user(f"u{t}"), assistant(f"a{t}"))]


async def test_repeated_new_item_is_persisted_once_at_its_first_position(
    make_session: Factory,
) -> None:
    session = await seeded(make_session, [user("u0")])
    model_input, to_persist = await prepare_input_with_session(
        [user("a"), user("b")], session, lambda history, new: [new[1], new[0], new[1], *history]
    )
    assert model_input == [user("b"), user("a"), user("b"), user("u0")]
    assert to_persist == [user("b"), user("a")]


async def test_repeated_history_item_is_never_persisted(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    _, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: history * 3 + new + history
    )
    assert to_persist == [user("u1")]


async def test_reordered_items(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    model_input, to_persist = await prepare_input_with_session(
        [user("x"), user("y")], session, lambda history, new: new[::-1] + history[::-1]
    )
    assert model_input == [user("y"), user("x"), assistant("a0"), user("u0")]
    assert to_persist == [user("y"), user("x")]


async def test_deep_copied_reconstructions_are_classified_by_content(
    make_session: Factory,
) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    model_input, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: copy.deepcopy(history + new + history)
    )
    assert model_input == [user("u0"), assistant("a0"), user("u1"), user("u0"), assistant("a0")]
    assert to_persist == [user("u1")]


async def test_rebuilt_dicts_are_classified_by_content(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0")])

    def rebuild(history: list[Any], new: list[Any]) -> list[Any]:
        # New dicts with the same content, keys in another order.
        return [dict(reversed(list(item.items()))) for item in history + new + new]

    model_input, to_persist = await prepare_input_with_session("u1", session, rebuild)
    assert model_input == [user("u0"), user("u1"), user("u1")]
    assert to_persist == [user("u1")]


async def test_filtering_callbacks(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0"), assistant("a0")])
    model_input, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: new
    )
    assert model_input == [user("u1")]
    assert to_persist == [user("u1")]
    model_input, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: history[-1:]
    )
    assert model_input == [assistant("a0")]
    assert to_persist == []


async def test_items_made_up_by_the_callback_are_persisted(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0")])
    note = {"role": "system", "content": "be brief"}
    model_input, to_persist = await prepare_input_with_session(
        "u1", session, lambda history, new: [dict(note), *history, *new]
    )
    assert model_input == [note, user("u0"), user("u1")]
    assert to_persist == [note, user("u1")]


async def test_new_input_equal_to_a_history_item(make_session: Factory) -> None:
    session = await seeded(make_session, [user("same"), assistant("a0")])
    # By identity: the history copy stays history, the new copy is persisted.
    model_input, to_persist = await prepare_input_with_session(
        "same", session, lambda history, new: history + new
    )
    assert model_input == [user("same"), assistant("a0"), user("same")]
    assert to_persist == [user("same")]
    # By content: the first equal reconstruction takes the unplaced new item, the
    # second is history. Still exactly one item persisted.
    model_input, to_persist = await prepare_input_with_session(
        "same", session, lambda history, new: copy.deepcopy(history + new)
    )
    assert to_persist == [user("same")]
    # Without a callback the new item is simply persisted.
    _, to_persist = await prepare_input_with_session("same", session)
    assert to_persist == [user("same")]


async def test_async_callback_is_awaited(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0")])

    async def callback(history: list[Any], new: list[Any]) -> list[Any]:
        return [*history, history[0], *new]

    model_input, to_persist = await prepare_input_with_session("u1", session, callback)
    assert model_input == [user("u0"), user("u0"), user("u1")]
    assert to_persist == [user("u1")]


async def test_callback_may_mutate_what_it_gets(make_session: Factory) -> None:
    history_items = [{"role": "user", "content": [{"type": "input_text", "text": "u0"}]}]
    session = await seeded(make_session, history_items)
    new = [{"role": "user", "content": [{"type": "input_text", "text": "u1"}]}]
    new_before = copy.deepcopy(new)

    def callback(history: list[Any], new_items: list[Any]) -> list[Any]:
        history[0]["content"][0]["text"] = "edited history"
        new_items[0]["content"][0]["text"] = "edited new"
        history.append(user("appended in place"))
        return history + new_items

    model_input, to_persist = await prepare_input_with_session(new, session, callback)
    assert model_input[0]["content"][0]["text"] == "edited history"
    # The in-place mutated objects are still the copies they got: classified by identity.
    assert to_persist == [
        user("appended in place"),
        {"role": "user", "content": [{"type": "input_text", "text": "edited new"}]},
    ]
    assert new == new_before
    assert await session.get_items() == history_items


async def test_callback_result_must_be_a_list_of_items(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0")])

    def returns_tuple(history: list[Any], new: list[Any]) -> Any:
        return tuple(history + new)

    with pytest.raises(
        UserError, match=r"session_input_callback .*returns_tuple must return a list"
    ):
        await prepare_input_with_session("u1", session, returns_tuple)

    async def returns_none(history: list[Any], new: list[Any]) -> Any:
        return None

    with pytest.raises(UserError, match=r"returns_none must return a list .*not NoneType"):
        await prepare_input_with_session("u1", session, returns_none)
    with pytest.raises(UserError, match=r"returned by .*\[1\] is a str, not an input item"):
        await prepare_input_with_session("u1", session, lambda history, new: [*history, "x"])
    with pytest.raises(UserError, match="session_input_callback must be callable or None"):
        await prepare_input_with_session("u1", session, "not callable")  # type: ignore[arg-type]
    assert await session.get_items() == [user("u0")]


async def test_bad_input_is_refused(make_session: Factory) -> None:
    session = make_session()
    with pytest.raises(UserError, match="input must be a str or a list of input items, not dict"):
        await prepare_input_with_session(user("a"), session)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"input\[1\] is an int, not an input item"):
        await prepare_input_with_session([user("a"), 3], session)


# --- limits ---------------------------------------------------------------------------------


async def test_session_settings_limit_the_history(make_session: Factory) -> None:
    session = await seeded(make_session, [user(str(index)) for index in range(6)])
    seen: list[list[Any]] = []

    def callback(history: list[Any], new: list[Any]) -> list[Any]:
        seen.append(list(history))
        return history + new

    model_input, _ = await prepare_input_with_session(
        "n", session, callback, SessionSettings(limit=2)
    )
    assert seen[-1] == [user("4"), user("5")]
    assert model_input == [user("4"), user("5"), user("n")]
    model_input, _ = await prepare_input_with_session("n", session, None, {"limit": 3})
    assert model_input == [user("3"), user("4"), user("5"), user("n")]
    model_input, _ = await prepare_input_with_session("n", session, None, SessionSettings(limit=0))
    assert model_input == [user("n")]


async def test_the_session_own_limit_applies_unless_overridden(tmp_path: Path) -> None:
    with SQLiteSession("s", tmp_path / "x.db", session_settings=SessionSettings(limit=1)) as s:
        await s.add_items([user("a"), user("b")])
        model_input, _ = await prepare_input_with_session("n", s)
        assert model_input == [user("b"), user("n")]
        model_input, _ = await prepare_input_with_session("n", s, None, SessionSettings(limit=2))
        assert model_input == [user("a"), user("b"), user("n")]


async def test_a_limit_window_extends_back_to_the_call_of_an_output_it_would_cut(
    make_session: Factory,
) -> None:
    session = await seeded(make_session, [user("q"), call("c1"), output("c1"), assistant("a")])
    whole_unit = [call("c1"), output("c1"), assistant("a"), user("n")]
    model_input, _ = await prepare_input_with_session("n", session, None, SessionSettings(limit=2))
    assert model_input == whole_unit
    model_input, _ = await prepare_input_with_session(
        "n", session, lambda history, new: history + new, SessionSettings(limit=2)
    )
    assert model_input == whole_unit
    model_input, _ = await prepare_input_with_session("n", session, None, SessionSettings(limit=1))
    assert model_input == [assistant("a"), user("n")]


async def test_a_limit_window_keeps_a_reasoning_run_with_its_call(make_session: Factory) -> None:
    thoughts = [{"type": "reasoning", "id": f"rs_{n}", "summary": []} for n in range(3)]
    fc = call("c1") | {"id": "fc_1"}
    stored = [user("q"), *thoughts, fc, output("c1"), assistant("a")]
    session = await seeded(make_session, stored)
    for limit in range(2, 6):
        model_input, _ = await prepare_input_with_session(
            "n", session, None, SessionSettings(limit=limit)
        )
        assert model_input == [*thoughts, fc, output("c1"), assistant("a"), user("n")], limit


async def test_an_output_whose_call_was_never_stored_is_dropped_from_a_window(
    make_session: Factory,
) -> None:
    session = await seeded(make_session, [user("q"), output("lost"), assistant("a")])
    model_input, _ = await prepare_input_with_session("n", session, None, SessionSettings(limit=2))
    assert model_input == [assistant("a"), user("n")]


async def test_a_callback_slice_that_cuts_a_unit_is_repaired(make_session: Factory) -> None:
    session = await seeded(make_session, [user("q"), call("c1"), output("c1"), assistant("a")])
    model_input, to_persist = await prepare_input_with_session(
        "n", session, lambda history, new: history[-2:] + new
    )
    assert model_input == [assistant("a"), user("n")]
    assert to_persist == [user("n")]


# --- the model-input passes -------------------------------------------------------------------


async def test_orphan_calls_are_pruned_from_history_only(make_session: Factory) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    session = await seeded(make_session, [user("q"), reasoning, call("dangling"), user("q2")])
    new_call = call("new")  # persisted as given, but a call without output never
    model_input, to_persist = await prepare_input_with_session([new_call], session)
    assert model_input == [user("q"), user("q2")]  # reaches the model: the API rejects it
    assert to_persist == [new_call]


async def test_latest_value_dedupe_on_the_model_input(make_session: Factory) -> None:
    session = await seeded(make_session, [user("q"), call("c1"), output("c1", "stale")])
    model_input, to_persist = await prepare_input_with_session(
        [output("c1", "fresh")], session, lambda history, new: history + new
    )
    assert model_input == [user("q"), call("c1"), output("c1", "fresh")]
    assert to_persist == [output("c1", "fresh")]


async def test_sdk_metadata_is_stripped(make_session: Factory) -> None:
    tagged = dict(call("c1"), _agents_tool_description="d", _agents_tool_title="t")
    session = await seeded(make_session, [tagged, output("c1")])
    seen: list[Any] = []

    def callback(history: list[Any], new: list[Any]) -> list[Any]:
        seen.extend(history)
        return history + new

    new = dict(user("n"), _agents_tool_title="t")
    model_input, to_persist = await prepare_input_with_session([new], session, callback)
    assert seen[0] == call("c1")
    assert model_input == [call("c1"), output("c1"), user("n")]
    assert to_persist == [user("n")]
    assert new["_agents_tool_title"] == "t"  # the caller's item is untouched


class InputMessage(pydantic.BaseModel):
    role: str
    content: str
    status: str | None = None


async def test_model_items_are_dumped(make_session: Factory) -> None:
    session = make_session()
    model_input, to_persist = await prepare_input_with_session(
        [InputMessage(role="user", content="hi")], session, lambda history, new: history + new
    )
    assert model_input == [user("hi")]
    assert to_persist == [user("hi")]


async def test_results_share_no_objects(make_session: Factory) -> None:
    session = await seeded(make_session, [user("u0")])
    new = [{"role": "user", "content": [{"type": "input_text", "text": "u1"}]}]
    for callback in (None, lambda history, new_items: history + new_items):
        model_input, to_persist = await prepare_input_with_session(new, session, callback)
        model_input[-1]["content"][0]["text"] = "edited"
        assert to_persist == new
        to_persist[0]["content"].append("x")
        assert new == [{"role": "user", "content": [{"type": "input_text", "text": "u1"}]}]
        assert await session.get_items() == [user("u0")]


async def test_third_party_session_store_is_never_touched() -> None:
    session = ListSession([{"role": "user", "content": [{"type": "input_text", "text": "u0"}]}])

    def callback(history: list[Any], new: list[Any]) -> list[Any]:
        history[0]["content"][0]["text"] = "edited"
        return history + new

    model_input, to_persist = await prepare_input_with_session("u1", session, callback)
    assert model_input[0]["content"][0]["text"] == "edited"
    assert session.items[0]["content"][0]["text"] == "u0"
    assert to_persist == [user("u1")]
    model_input[0]["content"][0]["text"] = "edited again"
    assert session.items[0]["content"][0]["text"] == "u0"


async def test_sdk_sqlite_session_works_as_a_session(tmp_path: Path) -> None:
    memory = pytest.importorskip("agents.memory")
    session = memory.SQLiteSession("s", tmp_path / "sdk.db")
    try:
        await session.add_items([user("u0"), assistant("a0")])
        model_input, to_persist = await prepare_input_with_session(
            "u1", session, lambda history, new: [*history, history[0], *new]
        )
        assert model_input == [user("u0"), assistant("a0"), user("u0"), user("u1")]
        await save_turn_to_session(session, to_persist, [assistant("a1")])
        assert len(await session.get_items()) == 4
    finally:
        session.close()


@pytest.mark.parametrize(
    "callback",
    [
        None,
        lambda history, new: [*history, history[0], *new],
        lambda history, new: copy.deepcopy(new + history[::-1]),
        lambda history, new: history[::2] + new,
    ],
    ids=["none", "repeat-first", "deep-copy-reversed", "filter"],
)
async def test_same_results_as_the_sdk_on_a_generated_history(
    tmp_path: Path, callback: Any
) -> None:
    """Where the SDK's rules agree with docs/design.md, the results are the SDK's, with
    the units that break the model-input rules dropped (``repair_input``): the SDK
    sends those to the model as they are.

    (They differ on purpose for a callback repeating a new item: the SDK persists
    every repeat, see test_repeated_new_item_is_persisted_once_at_its_first_position.)
    """
    memory = pytest.importorskip("agents.memory")
    persistence = pytest.importorskip("agents.run_internal.session_persistence")
    history = generate_history(1500, seed=11)
    new = [user("next question"), call("c_new"), output("c_new")]
    theirs = memory.SQLiteSession("s", tmp_path / "sdk.db")
    try:
        await theirs.add_items(history)
        sdk_input, sdk_persisted = await persistence.prepare_input_with_session(
            new, theirs, callback
        )
    finally:
        theirs.close()
    expected = (repair_input(sdk_input, history=history), sdk_persisted)
    with SQLiteSession("s", tmp_path / "ours.db") as ours:
        await ours.add_items(history)
        assert await prepare_input_with_session(new, ours, callback) == expected
        await ours.get_items()  # and again on a session that holds the history already
        assert await prepare_input_with_session(new, ours, callback) == expected


# --- properties -------------------------------------------------------------------------------

# A callback plan: a list of (source, index, rebuilt) entries. source "h" takes
# history[index], "n" new[index], "m" makes up a fresh item; rebuilt means a deep copy.
plans = st.lists(st.tuples(st.sampled_from("hnm"), st.integers(0, 9), st.booleans()), max_size=25)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history_size=st.integers(0, 6), new_size=st.integers(0, 4), plan=plans)
async def test_persisted_items_follow_the_rules_for_distinct_contents(
    history_size: int, new_size: int, plan: list[tuple[str, int, bool]]
) -> None:
    session = MemorySession()
    await session.add_items([user(f"h{index}") for index in range(history_size)])
    new = [user(f"n{index}") for index in range(new_size)]
    made_up = iter(range(100))

    def callback(history: list[Any], new_items: list[Any]) -> list[Any]:
        result = []
        for source, index, rebuilt in plan:
            if source == "m":
                result.append(user(f"m{next(made_up)}"))
                continue
            pool = history if source == "h" else new_items
            if pool:
                item = pool[index % len(pool)]
                result.append(copy.deepcopy(item) if rebuilt else item)
        return result

    model_input, to_persist = await prepare_input_with_session(new, session, callback)
    # Expected, spelled out for distinct contents: history never; a new item once, at
    # its first identical occurrence, else at its first rebuilt one; made-up always.
    sizes = {"h": history_size, "n": new_size, "m": 1}
    entries = [
        (source, index % sizes[source], rebuilt) for source, index, rebuilt in plan if sizes[source]
    ]
    assert len(model_input) == len(entries)
    first_identity: dict[int, int] = {}
    for position, (source, index, rebuilt) in enumerate(entries):
        if source == "n" and not rebuilt:
            first_identity.setdefault(index, position)
    placed = set(first_identity)
    persisted_positions = set(first_identity.values())
    for position, (source, index, rebuilt) in enumerate(entries):
        if source == "m":
            persisted_positions.add(position)
        elif source == "n" and rebuilt and index not in placed:
            placed.add(index)
            persisted_positions.add(position)
    assert to_persist == [model_input[p] for p in sorted(persisted_positions)]
    await session.add_items(to_persist)
    stored = [item["content"] for item in await session.get_items()]
    assert len(stored) == len(set(stored))  # nothing is ever stored twice
