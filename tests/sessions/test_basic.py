"""The session contract, run against every histcore backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest

from histcore.exceptions import SessionClosedError
from histcore.sessions import (
    MemorySession,
    Session,
    SessionABC,
    SessionSettings,
    SQLiteSession,
)
from tests.support.pg import ListSession, backends

Factory = Callable[..., SessionABC]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": "{}"}


def output(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


@pytest.fixture(params=["memory", "sqlite-memory", "sqlite-file", "postgres"])
async def make_session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    """Builds sessions of one backend; they are closed afterwards. The PostgreSQL one
    needs a server (HISTCORE_PG_DSN, or one that tests/support/pg.py can start)."""
    if request.param == "postgres":
        async with backends("postgres", tmp_path) as made:
            yield made.session
        return
    opened: list[SQLiteSession] = []

    def factory(session_id: str = "s", **kwargs: Any) -> SessionABC:
        if request.param == "memory":
            return MemorySession(session_id, **kwargs)
        path = ":memory:" if request.param == "sqlite-memory" else tmp_path / "sessions.db"
        session = SQLiteSession(session_id, path, **kwargs)
        opened.append(session)
        return session

    yield factory
    for session in opened:
        session.close()


async def test_add_then_get_returns_items_in_order(make_session: Factory) -> None:
    session = make_session()
    items = [user("a"), call("c1"), output("c1"), user("b")]
    await session.add_items(items[:2])
    await session.add_items(items[2:])
    assert await session.get_items() == items


async def test_limit_returns_latest_items_oldest_first(make_session: Factory) -> None:
    session = make_session()
    items = [user(str(index)) for index in range(10)]
    await session.add_items(items)
    assert await session.get_items(3) == items[-3:]
    assert await session.get_items(0) == []
    assert await session.get_items(10) == items
    assert await session.get_items(25) == items
    assert await session.get_items(1) == items[-1:]


async def test_bad_limit_is_refused(make_session: Factory) -> None:
    session = make_session()
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        await session.get_items(-1)
    with pytest.raises(TypeError, match="limit must be an int >= 0 or None, not bool"):
        await session.get_items(True)
    with pytest.raises(TypeError, match="not str"):
        await session.get_items("3")  # type: ignore[arg-type]


async def test_session_settings_limit_applies_when_no_limit_is_given(
    make_session: Factory,
) -> None:
    session = make_session(session_settings=SessionSettings(limit=2))
    items = [user(str(index)) for index in range(5)]
    await session.add_items(items)
    assert await session.get_items() == items[-2:]
    assert await session.get_items(4) == items[-4:]


async def test_pop_item_removes_newest(make_session: Factory) -> None:
    session = make_session()
    assert await session.pop_item() is None
    await session.add_items([user("a"), user("b")])
    assert await session.pop_item() == user("b")
    assert await session.get_items() == [user("a")]
    assert await session.pop_item() == user("a")
    assert await session.pop_item() is None
    assert await session.get_items() == []
    await session.add_items([user("c")])
    assert await session.get_items() == [user("c")]


async def test_clear_session_removes_only_this_session(make_session: Factory) -> None:
    first, second = make_session("one"), make_session("two")
    await first.add_items([user("a"), user("b")])
    await second.add_items([user("x")])
    await first.clear_session()
    assert await first.get_items() == []
    await first.add_items([user("c")])
    assert await first.get_items() == [user("c")]
    if not isinstance(first, MemorySession):  # memory sessions never share a store
        assert await second.get_items() == [user("x")]


async def test_callers_may_mutate_what_they_get(make_session: Factory) -> None:
    session = make_session()
    message = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    }
    await session.add_items([message, user("q")])
    first = await session.get_items()
    first[0]["content"][0]["text"] = "changed"
    first[0]["content"].append({"type": "output_text", "text": "extra"})
    first[1]["content"] = "changed"
    first.append(user("appended"))
    assert await session.get_items() == [message, user("q")]
    popped = await session.pop_item()
    assert popped == user("q")
    popped["content"] = "changed"
    assert await session.get_items() == [message]


async def test_mutating_added_items_later_does_not_change_the_store(
    make_session: Factory,
) -> None:
    session = make_session()
    items = [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]
    await session.add_items(items)
    items[0]["content"][0]["text"] = "changed"
    items.append(user("b"))
    assert await session.get_items() == [
        {"role": "user", "content": [{"type": "input_text", "text": "a"}]}
    ]


async def test_unencodable_item_names_its_position_and_writes_nothing(
    make_session: Factory,
) -> None:
    session = make_session()
    await session.add_items([user("kept")])
    before = await session.get_items()
    bad = [user("a"), user("b"), {"role": "user", "content": {1, 2}}]
    with pytest.raises(TypeError, match=r"items\[2\] cannot be encoded as JSON"):
        await session.add_items(bad)
    with pytest.raises(TypeError, match=r"items\[1\] is a str, not an input item"):
        await session.add_items([user("a"), "not an item"])
    with pytest.raises(TypeError, match="items must be a list of input items, not dict"):
        await session.add_items(user("a"))  # type: ignore[arg-type]
    assert await session.get_items() == before


async def test_circular_item_is_refused(make_session: Factory) -> None:
    session = make_session()
    loop: dict[str, Any] = {"role": "user"}
    loop["content"] = [loop]
    with pytest.raises(TypeError, match=r"items\[0\] cannot be encoded as JSON"):
        await session.add_items([loop])
    assert await session.get_items() == []


async def test_values_round_trip_as_json_does(make_session: Factory) -> None:
    session = make_session()
    item = {
        "type": "function_call_output",
        "call_id": "c",
        "output": 'quotes " back\\slash \n newline \t tab \u0000 nul é 日本 😀',
        "numbers": [0, -1, 2**63 - 1, -(2**63), 1.5, 1e-300, 1e300],
        "nested": {"tuple": (1, 2), "empty": {}, "list": [], "none": None, "bool": True},
    }
    await session.add_items([item])
    (stored,) = await session.get_items()
    expected = dict(item, nested=dict(item["nested"], tuple=[1, 2]))
    assert stored == expected
    assert type(stored["numbers"][0]) is int
    assert type(stored["numbers"][4]) is float


async def test_values_orjson_refuses_are_kept_as_json_writes_them(make_session: Factory) -> None:
    session = make_session()
    items = [
        {"role": "user", "content": "nan", "score": float("nan"), "inf": [float("-inf")]},
        {"role": "user", "content": "big", "map": {"n": 2**64, "keys": {"\udfff": -(2**70)}}},
        {"role": "user", "content": "surrogate \ud800 alone"},
        {"role": "user", "content": "null stays null", "value": None},
    ]
    await session.add_items(items)
    stored = await session.get_items()
    assert math.isnan(stored[0]["score"])
    assert stored[0]["inf"] == [float("-inf")]
    assert stored[1:] == items[1:]
    # Int keys would come back as str keys (and {1: "a", "1": "b"} as one key): refused.
    with pytest.raises(TypeError, match=r"items\[0\] cannot be encoded as JSON.*key 1 \(int\)"):
        await session.add_items([{"role": "user", "content": "int keys", "map": {1: "one"}}])


class Message(pydantic.BaseModel):
    role: str
    content: str
    status: str | None = None


async def test_models_are_stored_as_their_dump(make_session: Factory) -> None:
    session = make_session()
    await session.add_items([Message(role="user", content="hi")])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]


def test_session_settings_validate_and_resolve() -> None:
    assert SessionSettings().limit is None
    with pytest.raises(ValueError, match=r"SessionSettings.limit must be an int >= 0"):
        SessionSettings(limit=-2)
    with pytest.raises(TypeError, match=r"SessionSettings.limit"):
        SessionSettings(limit=1.5)  # type: ignore[arg-type]
    base = SessionSettings(limit=5)
    assert base.resolve(None) is base
    assert base.resolve(SessionSettings()) == base
    assert base.resolve(SessionSettings(limit=2)) == SessionSettings(limit=2)
    assert base.resolve({"limit": 3}) == SessionSettings(limit=3)
    with pytest.raises(ValueError, match="unknown keys: size"):
        base.resolve({"size": 3})
    assert base.to_dict() == {"limit": 5}


def test_protocol_is_runtime_checkable() -> None:
    assert isinstance(MemorySession(), Session)
    with SQLiteSession("s") as session:
        assert isinstance(session, Session)
    assert isinstance(ListSession(), Session)
    assert not isinstance(object(), Session)


def test_sdk_sessions_satisfy_the_protocol() -> None:
    memory = pytest.importorskip("agents.memory")
    sdk_session = memory.SQLiteSession("sdk")
    try:
        assert isinstance(sdk_session, Session)
    finally:
        sdk_session.close()


def test_session_id_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="session_id must be a str, not int"):
        MemorySession(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="session_id must be a str, not int"):
        SQLiteSession(3)  # type: ignore[arg-type]


async def test_closed_sqlite_session_raises_on_every_operation(tmp_path: Path) -> None:
    session = SQLiteSession("s", tmp_path / "x.db")
    await session.add_items([user("a")])
    session.close()
    session.close()  # idempotent
    for operation in (
        session.get_items(),
        session.add_items([user("b")]),
        session.add_items([]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(SessionClosedError, match="SQLiteSession 's' is closed"):
            await operation
    with SQLiteSession("s", tmp_path / "x.db") as reopened:
        assert await reopened.get_items() == [user("a")]
