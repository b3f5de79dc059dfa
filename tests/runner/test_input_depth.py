"""Runner input nested deeper than the engine's ``MAX_DEPTH`` (256 containers, the item
itself counted), or holding itself, is refused with ``UserError`` naming the input and
the item's position, before the model is called or anything is stored."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.engine.items import MAX_DEPTH
from histcore.exceptions import UserError
from histcore.runner.agent import Agent
from histcore.runner.run import Runner
from histcore.sessions import MemorySession
from histcore.testing import ScriptedModel, text_message, user_message
from tests.support.examples import examples
from tests.support.runner import drive


def nested(levels: int) -> Any:
    """``levels`` lists around a string."""
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def item_of_depth(depth: int) -> dict[str, Any]:
    """A user message of ``depth`` containers, the item itself counted."""
    return {"role": "user", "content": nested(depth - 1)}


def make_agent() -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([[text_message("Done.")]])
    return Agent("deep", model=model), model


class Dumped:
    """An input item given as a model: read through ``model_dump``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return self.data


def self_holding() -> dict[str, Any]:
    item: dict[str, Any] = {"role": "user", "content": []}
    item["content"].append(item)
    return item


REFUSED = [
    ("past the limit", item_of_depth(MAX_DEPTH + 1)),
    ("far past the limit", item_of_depth(10 * MAX_DEPTH)),
    ("holds itself", self_holding()),
    ("a model past the limit", Dumped(item_of_depth(MAX_DEPTH + 1))),
]


@pytest.mark.parametrize("with_session", [False, True], ids=["no session", "session"])
@pytest.mark.parametrize("item", [item for _, item in REFUSED], ids=[name for name, _ in REFUSED])
async def test_input_nested_too_deep_is_a_user_error_naming_the_item(
    mode: str, with_session: bool, item: Any
) -> None:
    agent, model = make_agent()
    session = MemorySession("s") if with_session else None
    items = [user_message("first"), item, user_message("last")]
    with pytest.raises(UserError, match=re.escape("input[1]")) as caught:
        await drive(mode, agent, items, session=session)
    assert f"nested deeper than {MAX_DEPTH} levels" in str(caught.value)
    assert model.calls == []
    if session is not None:
        assert await session.get_items() == []


@pytest.mark.parametrize("with_session", [False, True], ids=["no session", "session"])
async def test_input_at_the_limit_runs(mode: str, with_session: bool) -> None:
    agent, model = make_agent()
    session = MemorySession("s") if with_session else None
    deepest = item_of_depth(MAX_DEPTH)
    result = await drive(mode, agent, [deepest], session=session)
    assert result.final_output == "Done."
    assert model.calls[0].input == [deepest]


def test_run_streamed_refuses_at_once_without_a_session() -> None:
    agent, _ = make_agent()

    async def start() -> None:
        Runner.run_streamed(agent, [item_of_depth(MAX_DEPTH + 1)])

    with pytest.raises(UserError, match=re.escape("input[0]")):
        asyncio.run(start())


@settings(max_examples=examples(40), deadline=None, derandomize=True)
@given(
    count=st.integers(min_value=1, max_value=5),
    data=st.data(),
    depth=st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3),
)
def test_the_deep_item_is_named_wherever_it_is(count: int, data: Any, depth: int) -> None:
    position = data.draw(st.integers(min_value=0, max_value=count - 1))
    items = [user_message(f"m{index}") for index in range(count)]
    items[position] = item_of_depth(depth)
    agent, model = make_agent()
    if depth <= MAX_DEPTH:
        assert Runner.run_sync(agent, items).final_output == "Done."
        return
    with pytest.raises(UserError, match=re.escape(f"input[{position}] is nested deeper")):
        Runner.run_sync(agent, items)
    assert model.calls == []
