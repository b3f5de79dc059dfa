"""The parts the SQL stores share: the table-name rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from histcore.sessions import SQLiteSession
from histcore.sessions.sql_store import check_table_name


@pytest.mark.parametrize("name", ["agent_messages", "_x", "T1", "a" * 51])
def test_plain_identifiers_of_up_to_51_characters_pass(name: str) -> None:
    assert check_table_name(name, "table") == name


@pytest.mark.parametrize(
    "name", ["", "1x", "x-y", "x; DROP TABLE y", "a" * 52, "é", "x\n", None, 7, b"x"]
)
def test_anything_else_is_a_value_error_naming_the_argument(name: object) -> None:
    with pytest.raises(ValueError, match=r"^messages_table must be a plain SQL identifier"):
        check_table_name(name, "messages_table")


def test_the_sqlite_session_applies_the_same_rule(tmp_path: Path) -> None:
    with SQLiteSession("s", tmp_path / "ok.db", messages_table="m" * 51):
        pass
    with pytest.raises(ValueError, match="51 characters at most"):
        SQLiteSession("s", tmp_path / "long.db", sessions_table="s" * 52)
