"""The names ``histcore`` itself exports, at run time and for the type checker.

CI also runs ``mypy --strict`` over this file: the annotated uses below must type-check
against ``histcore``'s own names (PostgresSession included, which is imported lazily).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

import histcore
from histcore import (
    MemorySession,
    SessionSettings,
    SQLiteSession,
    StoredHistory,
    input_problems,
    prepare_input_with_session,
)
from histcore import sessions as sessions_module

if TYPE_CHECKING:
    from histcore import PostgresSession

SESSION_NAMES = ("SQLiteSession", "MemorySession", "SessionSettings", "prepare_input_with_session")


def test_session_names_are_the_sessions_modules_own() -> None:
    assert SQLiteSession is sessions_module.SQLiteSession
    assert MemorySession is sessions_module.MemorySession
    assert SessionSettings is sessions_module.SessionSettings
    assert prepare_input_with_session is sessions_module.prepare_input_with_session
    for name in SESSION_NAMES:
        assert name in histcore.__all__


def test_stored_history_is_the_item_apis() -> None:
    """``StoredHistory`` is public at ``histcore.items`` (and here), for type checkers too."""
    assert StoredHistory is histcore.items.StoredHistory
    assert "StoredHistory" in histcore.items.__all__
    assert "StoredHistory" in histcore.__all__
    stored: StoredHistory = StoredHistory([{"type": "reasoning", "id": "rs_1"}])
    stored.extend([{"type": "message", "role": "assistant", "id": "msg_1"}])
    assert len(stored) == 2
    assert input_problems([{"type": "reasoning", "id": "rs_1"}], history=stored) != []


def test_every_name_in_all_resolves() -> None:
    assert len(set(histcore.__all__)) == len(histcore.__all__)
    for name in histcore.__all__:
        assert getattr(histcore, name) is not None, name


async def test_a_turn_through_the_top_level_names() -> None:
    settings: SessionSettings = SessionSettings(limit=2)
    with SQLiteSession("top-level", ":memory:", session_settings=settings) as session:
        model_input, to_persist = await prepare_input_with_session("hello", session)
        await session.add_items(to_persist)
        assert [item["content"] for item in model_input] == ["hello"]
    memory: MemorySession = MemorySession("top-level")
    await memory.add_items([{"role": "user", "content": "hi"}])
    assert len(await memory.get_items()) == 1


def _fresh(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_postgres_session_loads_only_on_use() -> None:
    result = _fresh(
        "import json, sys\n"
        "import histcore\n"
        "from histcore import *\n"
        "before = sorted(m for m in ('psycopg', 'psycopg_pool', 'histcore.sessions.postgres')"
        " if m in sys.modules)\n"
        "print(json.dumps({'before': before, 'in_all': 'PostgresSession' in histcore.__all__}))\n"
    )
    # Neither `import histcore` nor `from histcore import *` touches psycopg.
    assert result == {"before": [], "in_all": False}


def test_postgres_session_by_name() -> None:
    pytest.importorskip("psycopg", reason="PostgresSession needs the postgres extra")
    from histcore.sessions.postgres import PostgresSession as direct

    postgres_session: type[PostgresSession] = histcore.PostgresSession
    assert postgres_session is direct
    assert sessions_module.PostgresSession is direct


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchSession'"):
        histcore.NoSuchSession  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(histcore, "NoSuchSession")
