"""``prepare_input_with_session`` without a ``session_input_callback``: under ``install()``
the SDK's result by whole-list copies, not a helper call per item, on every store kind.

The SDK's branch without a callback calls ``ensure_input_item_format`` twice per history
item (converting the history, then the prepared list): 2 x 10^4 calls a turn at 10^4
items. The counting test runs one turn on each store the SDK offers and bounds those
calls by a number independent of the history's size.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.openai_agents.test_equivalence import (
    ODD_HISTORY,
    PLAIN_HISTORY,
    CopyingListSession,
    assert_same_tree,
)
from tests.support.examples import examples
from tests.support.strategies import history_items
from tests.support.strategies import sdk_items as sdk_items_strategy

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.run_internal.session_persistence as sdk_session
from agents import RunConfig, Runner, SQLiteSession

import histcore.openai_agents as accelerator
from histcore.openai_agents.testing import SDKScriptedModel
from histcore.testing_histories import generate_history
from tests.support.sdk_suite import sdk_suite_module

#: the SDK suite's path counts (scripts/sdk_suite/path_counts.py)
_path_counts = sdk_suite_module("path_counts")

#: Items in the counted store: the old code made twice as many calls.
SIZE = 300
#: Calls a turn makes whatever the history's size (the run loop's own conversions of
#: the caller's input and the turn's new items).
MOST_CALLS = 12


def _outcome(
    history: list[Any], new: list[Any] | str, limit: int | None, policy: str | None
) -> tuple[str, Any]:
    from agents.memory import SessionSettings

    session = CopyingListSession(copy.deepcopy(history))
    settings_ = SessionSettings(limit=limit) if limit is not None else None
    try:
        prepared, persisted = asyncio.run(
            sdk_session.prepare_input_with_session(
                copy.deepcopy(new),
                session,
                None,
                settings_,
                reasoning_item_id_policy=policy,  # type: ignore[arg-type]
            )
        )
    except Exception as exc:
        return "raise", (type(exc), str(exc))
    return "ok", (prepared, persisted)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=st.one_of(PLAIN_HISTORY, ODD_HISTORY),
    new=st.one_of(
        st.lists(
            st.one_of(sdk_items_strategy(), history_items(with_models=False, junk=False)),
            min_size=1,
            max_size=4,
        ),
        st.text(max_size=12),
    ),
    limit=st.one_of(st.none(), st.integers(0, 6)),
    policy=st.sampled_from([None, "omit", "preserve"]),
)
def test_without_a_callback_the_result_is_the_sdks(
    history: list[Any], new: list[Any] | str, limit: int | None, policy: str | None
) -> None:
    accelerator.uninstall()
    expected = _outcome(history, new, limit, policy)
    with accelerator.installed():
        actual = _outcome(history, new, limit, policy)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "raise":
        assert actual[1] == expected[1]
    else:
        assert_same_tree(expected[1], actual[1])


# --- per-item helper calls, per store kind -----------------------------------------


def _sqlite(path: Path) -> Any:
    return SQLiteSession("count", str(path))


def _async_sqlite(path: Path) -> Any:
    pytest.importorskip("aiosqlite")
    from agents.extensions.memory import AsyncSQLiteSession

    return AsyncSQLiteSession("count", str(path))


def _encrypted(path: Path) -> Any:
    pytest.importorskip("cryptography")
    from agents.extensions.memory import EncryptedSession

    return EncryptedSession("count", SQLiteSession("count", str(path)), "k" * 44, ttl=10**6)


def _sqlalchemy(path: Path) -> Any:
    from tests.support.pg import require_pg, unique

    pytest.importorskip("sqlalchemy")
    pytest.importorskip("asyncpg")
    server = require_pg()
    from agents.extensions.memory import SQLAlchemySession

    url = server.dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    return SQLAlchemySession.from_url(unique("count"), url=url, create_tables=True)


STORES: dict[str, Callable[[Path], Any]] = {
    "SQLiteSession": _sqlite,
    "AsyncSQLiteSession": _async_sqlite,
    "EncryptedSession(SQLiteSession)": _encrypted,
    "SQLAlchemySession, PostgreSQL": _sqlalchemy,
}


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    accelerator.uninstall()
    monkeypatch.setattr(_path_counts, "_tallies", {})
    monkeypatch.setattr(_path_counts, "_directory", None)
    _path_counts.start(str(tmp_path / "counts"))
    yield
    _path_counts.stop()
    accelerator.uninstall()


async def _close(session: Any) -> None:
    inner = getattr(session, "underlying_session", session)
    closed = inner.close() if hasattr(inner, "close") else None
    if asyncio.iscoroutine(closed):
        await closed
    engine = getattr(inner, "_engine", None)
    if engine is not None:
        await inner.clear_session()
        await engine.dispose()


def _keep(history: list[Any], new_items: list[Any]) -> list[Any]:
    return history + new_items


@pytest.mark.usefixtures("counting")
@pytest.mark.parametrize("callback", [None, _keep], ids=["no callback", "callback"])
@pytest.mark.parametrize("store", list(STORES))
def test_a_turn_makes_no_helper_call_per_item(store: str, callback: Any, tmp_path: Path) -> None:
    session = STORES[store](tmp_path / "store.db")
    accelerator.install()
    config = RunConfig(session_input_callback=callback, tracing_disabled=True)

    async def turns() -> list[int]:
        try:
            await session.add_items(generate_history(SIZE, 0, refresh_reasoning=False))
            calls = []
            for turn in range(2):  # the first reads the whole store, the second what is new
                tally = _path_counts._tallies[("normalize", "ensure_input_item_format")]
                before = tally.calls
                model = SDKScriptedModel(record=False, id_prefix=f"t{turn}_")
                agent = _agent(model)
                await Runner.run(agent, f"Paris, turn {turn}", session=session, run_config=config)
                calls.append(tally.calls - before)
            return calls
        finally:
            await _close(session)

    calls = asyncio.run(turns())
    assert all(0 < count <= MOST_CALLS for count in calls), (store, calls)


def _agent(model: SDKScriptedModel) -> Any:
    from histcore.cli.bench.sdk_conversation import conversation_agent

    return conversation_agent(model)
