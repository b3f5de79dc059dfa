"""The window experiment: a 600-item history of a reasoning model cut by 84 windows.

42 limits (``SessionSettings(limit=k)``, k = 1..39, 97, 150, 333) and 42 callbacks
(``lambda h, n: h[-k:] + n``, the same k). Every model input histcore prepares passes
the checker, with the stored history (rule e); the SDK's own preparation, given the
same store, breaks the rules in some of them, which is what the experiment is for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from histcore.items import input_problems
from histcore.sessions import SessionSettings, SQLiteSession, prepare_input_with_session
from histcore.testing import generate_history

SIZES = [*range(1, 40), 97, 150, 333]
HISTORY = generate_history(600, seed=3)
NEW = [{"role": "user", "content": "and now?"}]


def _cut(k: int) -> Callable[[list[Any], list[Any]], list[Any]]:
    return lambda history, new: history[-k:] + new


WINDOWS: list[tuple[str, Any, Any]] = [
    *[(f"limit={k}", None, SessionSettings(limit=k)) for k in SIZES],
    *[(f"h[-{k}:] + n", _cut(k), None) for k in SIZES],
]


def _broken(model_input: list[Any]) -> list[str]:
    return [problem.message for problem in input_problems(model_input, history=HISTORY)]


async def test_every_window_gives_an_input_the_api_accepts(tmp_path: Path) -> None:
    assert len(WINDOWS) == 84
    broken: dict[str, list[str]] = {}
    with SQLiteSession("s", tmp_path / "ours.db") as session:
        await session.add_items(HISTORY)
        for name, callback, settings in WINDOWS:
            model_input, _ = await prepare_input_with_session(NEW, session, callback, settings)
            if problems := _broken(model_input):
                broken[name] = problems
            assert model_input[-1] == NEW[0], name
    assert broken == {}


async def test_the_sdk_breaks_some_of_the_same_windows(tmp_path: Path) -> None:
    memory = pytest.importorskip("agents.memory")
    persistence = pytest.importorskip("agents.run_internal.session_persistence")
    session = memory.SQLiteSession("s", tmp_path / "sdk.db")
    try:
        await session.add_items(HISTORY)
        broken = []
        for name, callback, settings in WINDOWS:
            sdk_settings = (
                None if settings is None else memory.SessionSettings(limit=settings.limit)
            )
            model_input, _ = await persistence.prepare_input_with_session(
                list(NEW), session, callback, sdk_settings
            )
            if _broken(model_input):
                broken.append(name)
    finally:
        session.close()
    # The experiment finds real breaks in the reference (23 of 84 when it was written).
    assert broken, "the SDK prepared a valid input for every window"
