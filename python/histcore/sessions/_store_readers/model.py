"""A session store's rows exactly as stored, decoded as the sessions decode them.

A ``StoreReader`` (SQLite in ``sqlite.py``, PostgreSQL in ``postgres.py``) gives what
``histcore doctor`` and ``histcore bench --store``/``--dsn`` read of a session store: the
session ids, the rows no session reads, and one session's rows, each read a statement of
its own, so no lock is held between them. Every failure is a ``StoreError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from histcore.sessions.base import MESSAGES_TABLE, SESSIONS_TABLE
from histcore.sessions.rows import CorruptRow, decode_json
from histcore.sessions.sql_store import check_table_name

__all__ = [
    "MESSAGES_TABLE",
    "SESSIONS_TABLE",
    "Row",
    "StoreError",
    "StoreLocked",
    "StoreReader",
    "Tables",
    "decode_text",
    "row_ids_text",
]


class StoreError(Exception):
    """The store cannot be read (missing, not SQLite, not a session store, ...)."""


class StoreLocked(StoreError):
    """Another process holds a lock the reader waited for in vain."""


@dataclass(frozen=True)
class Tables:
    """The two tables of a session store (the SDK's names by default)."""

    sessions: str = SESSIONS_TABLE
    messages: str = MESSAGES_TABLE

    def __post_init__(self) -> None:
        for name in (self.sessions, self.messages):
            try:
                check_table_name(name, "table")
            except ValueError:
                raise StoreError(f"{name!r} is not a plain SQL table name") from None


@dataclass(frozen=True)
class Row:
    """One stored row, whole: its stored data and its decoded item (``histcore bench
    --store`` reads sessions so; the doctor keeps only the facts of each row)."""

    row_id: int
    data: Any  # message_data exactly as stored (written back unchanged)
    item: Any  # the decoded item, when ``valid``
    valid: bool
    #: why the row is not valid JSON (not UTF-8, not JSON, nested too deeply, NULL, ...)
    reason: str | None = None


def decode_text(row_id: int, data: Any, missing: str | None = None) -> Row:
    """The row stored as ``data`` (None: ``missing`` says why there is none), decoded by
    the sessions' own rule (``histcore.sessions.rows``): a row they read as an item is
    an item here, and a row they skip is not valid JSON here."""
    if data is None:
        return Row(row_id, None, None, False, missing or "NULL, not text")
    try:
        return Row(row_id, data, decode_json(data), True)
    except CorruptRow as exc:
        return Row(row_id, data, None, False, exc.reason)


def row_ids_text(row_ids: Sequence[int], limit: int = 8) -> str:
    """Row ids for a message: the first ``limit``, then how many there are in all."""
    shown = ", ".join(map(str, row_ids[:limit]))
    return shown + (f", ... ({len(row_ids)} in all)" if len(row_ids) > limit else "")


class StoreReader(Protocol):
    """What a session store gives its readers; every failure is a StoreError."""

    name: str

    def session_ids(self) -> list[str]:
        """Every session with rows, or registered without any."""
        ...

    def rows_without_session(self) -> dict[str, list[int]]:
        """Row ids no session reads, by why: ``{"null": [...], "blob": [...], ...}``
        (after ``session_ids``)."""
        ...

    def row_count(self) -> int:
        """How many rows the messages table holds (after ``session_ids``)."""
        ...

    def read_rows(self, session_id: str) -> list[Row]:
        """One session's rows in id order (the conversation's order), whole."""
        ...

    def rows_without_structure(self, session_id: str) -> list[int]:
        """Row ids of the session's messages with no ``message_structure`` row, which the
        SDK's ``AdvancedSQLiteSession`` does not read ([] in a store without the table)."""
        ...

    def read_data(self, session_id: str) -> list[tuple[int, Any]]:
        """``read_rows``, undecoded: each row's id and ``Row.data`` (a quick look at
        whether a session changed)."""
        ...

    def close(self) -> None: ...
