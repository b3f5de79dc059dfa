"""Which sessions' histories preparation uses without a deep copy: the ones whose class
declares that ``get_items`` returns fresh objects (``SessionABC._returns_fresh_items``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from histcore.sessions import MemorySession, SessionABC, SQLiteSession, prepare_input_with_session
from histcore.sessions.prepare import _returns_fresh_items
from tests.support.pg import ListSession, require_psycopg


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class KeepsItems(MemorySession):
    """Hands out the same objects on every read: its history must be copied."""

    def __init__(self) -> None:
        super().__init__("s")
        self.kept = [user("u0")]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return self.kept


class SaysFresh(KeepsItems):
    _returns_fresh_items = True


class Inherits(SQLiteSession):
    """Does not touch get_items, so keeps its parent's promise."""


def test_histcores_own_stores_declare_fresh_items(tmp_path: Path) -> None:
    assert _returns_fresh_items(MemorySession("s"))
    with SQLiteSession("s", tmp_path / "db.sqlite") as sqlite:
        assert _returns_fresh_items(sqlite)
    with Inherits("s", tmp_path / "db.sqlite") as inherited:
        assert _returns_fresh_items(inherited)


def test_postgres_declares_fresh_items() -> None:
    require_psycopg()
    from histcore.sessions.postgres import PostgresSession

    assert PostgresSession._returns_fresh_items is True


def test_an_overridden_get_items_loses_the_promise_unless_restated() -> None:
    assert not _returns_fresh_items(KeepsItems())
    assert _returns_fresh_items(SaysFresh())
    assert SessionABC._returns_fresh_items is False


def test_other_sessions_are_not_trusted() -> None:
    third_party: Any = ListSession()
    assert not _returns_fresh_items(third_party)

    class Anything:
        def __getattr__(self, name: str) -> object:
            return object()  # a truthy value for every attribute, as a mock gives

    assert not _returns_fresh_items(Anything())  # type: ignore[arg-type]


async def test_an_untrusted_history_is_copied_before_use() -> None:
    session = KeepsItems()
    model_input, _ = await prepare_input_with_session("u1", session)
    model_input[0]["content"] = "edited"
    assert session.kept == [user("u0")]


@pytest.mark.parametrize("limit", [None, 1])
async def test_a_trusted_history_is_still_the_callers_own(tmp_path: Path, limit: Any) -> None:
    with SQLiteSession("s", tmp_path / "db.sqlite") as session:
        await session.add_items([user("u0")])
        model_input, _ = await prepare_input_with_session(
            "u1", session, session_settings={"limit": limit}
        )
        model_input[0]["content"] = "edited"
        assert await session.get_items() == [user("u0")]
