"""prepare_input_with_session without a callback: the engine's one-read path
(``prepared_model_input``) gives what the general path's passes give one after the
other (normalise, prune orphans, dedupe, repair), on histories with duplicates,
reorderings, orphan calls and outputs, reasoning that lost its item, the SDK's metadata
keys, models and odd values (which the general path takes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.engine.vocabulary import METADATA_KEYS
from histcore.sessions import SessionSettings, SQLiteSession, prepare_input_with_session
from histcore.sessions import prepare as prepare_module
from histcore.testing import generate_history
from tests.engine.test_checked_dedupe import repeated
from tests.engine.test_input_rules import reasoning_histories, without_tools
from tests.support.examples import examples
from tests.support.pg import ListSession
from tests.support.strategies import call, histories, history_items, output, sdk_histories

PROPERTY = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class Spy:
    """Wraps the engine's ``prepared_model_input`` in the prepare module: ``answered``
    counts the calls it answered (not NotImplemented); ``unfused`` makes it decline, so
    that the general path runs."""

    def __init__(self) -> None:
        self.original = prepare_module.prepared_model_input
        self.answered = 0
        self.unfused = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.unfused:
            return NotImplemented
        result = self.original(*args, **kwargs)
        self.answered += result is not NotImplemented
        return result


@contextmanager
def spying() -> Iterator[Spy]:
    spy = Spy()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prepare_module, "prepared_model_input", spy)
        yield spy


async def _both(new: Any, session: Any, limit: int | None) -> tuple[Any, Any, bool]:
    """(fused result, unfused result, whether the engine's one-read path answered)."""
    session_settings = None if limit is None else SessionSettings(limit=limit)

    async def prepared() -> Any:
        try:
            return await prepare_input_with_session(new, session, None, session_settings)
        except Exception as exc:  # the exception itself is what gets compared
            return (type(exc), str(exc))

    with spying() as spy:
        fused = await prepared()
        answered = spy.answered == 1
        spy.unfused = True
        unfused = await prepared()
    return fused, unfused, answered


def _plain(items: list[Any]) -> bool:
    return all(
        type(item) is dict and not any(key in item for key in METADATA_KEYS) for item in items
    )


@st.composite
def with_metadata(draw: st.DrawFn, items: st.SearchStrategy[list[Any]]) -> list[Any]:
    """``items`` with the SDK's session-only metadata keys on some dicts."""
    drawn = draw(items)
    marked = draw(st.sets(st.integers(0, max(len(drawn) - 1, 0)), max_size=2))
    return [
        {**item, METADATA_KEYS[at % 2]: "tool"} if at in marked and type(item) is dict else item
        for at, item in enumerate(drawn)
    ]


stored_histories = st.one_of(
    repeated(sdk_histories(max_size=20)),
    repeated(reasoning_histories()),
    repeated(histories(with_models=False)),
    reasoning_histories().map(without_tools),
    with_metadata(sdk_histories()),
    histories(),
)


@PROPERTY
@given(
    history=stored_histories,
    new=st.one_of(
        st.text(max_size=5),
        st.lists(history_items(with_models=False, junk=False), max_size=3),
        st.lists(history_items(), max_size=2),
    ),
    limit=st.one_of(st.none(), st.integers(1, 25)),
)
async def test_the_one_read_path_gives_the_passes_result(
    history: list[Any], new: Any, limit: int | None
) -> None:
    session = ListSession(list(history))
    fused, unfused, answered = await _both(new, session, limit)
    # Odd values are copied, not equal by value: compared by what they print.
    assert repr(fused) == repr(unfused)
    if type(fused[0]) is type:
        return  # the input was refused, alike
    assert [list(map(type, part)) for part in fused] == [list(map(type, part)) for part in unfused]
    read = history if limit is None else history[-limit:]
    if _plain(read) and (isinstance(new, str) or _plain(new)) and limit is None:
        assert answered
    model_input, to_persist = fused

    # No item (but immutable ones) shared with the store or between the two lists.
    def ids(items: list[Any]) -> set[int]:
        return {id(item) for item in items if isinstance(item, (dict, list))}

    assert not ids(session.items) & ids(model_input)
    assert not ids(model_input) & ids(to_persist)


@pytest.mark.parametrize("limit", [None, 700])
async def test_a_damaged_generated_history_in_sqlite(tmp_path: Path, limit: int | None) -> None:
    # Duplicates, an orphan call and an orphan output, a moved output: the one-read path
    # answers, with the result of the passes.
    history = generate_history(2000, seed=5)
    history[1500:1500] = [call("orphan"), history[40], output("lost"), history[300]]
    history.append(history[1000])
    with SQLiteSession("s", tmp_path / "db.sqlite") as session:
        await session.add_items(history)
        fused, unfused, answered = await _both([{"role": "user", "content": "q"}], session, limit)
    assert answered
    assert fused == unfused
    assert len(fused[0]) < len(history) + 1
