"""Session stores and session-input preparation.

``Session`` is the protocol every store follows (``SessionABC`` the base class of
histcore's own); ``MemorySession`` and ``SQLiteSession`` are the backends;
``prepare_input_with_session`` builds a turn's model input from the history and the
new input, and ``save_turn_to_session`` persists a finished turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from histcore.sessions.base import (
    InputItem,
    Session,
    SessionABC,
    SessionInputCallback,
    SessionSettings,
)
from histcore.sessions.memory import MemorySession
from histcore.sessions.prepare import prepare_input_with_session, save_turn_to_session
from histcore.sessions.sqlite import SQLiteSession
from histcore.sessions.transcript import TranscriptEntry

if TYPE_CHECKING:
    from histcore.sessions.postgres import PostgresSession as PostgresSession

__all__ = [
    "InputItem",
    "MemorySession",
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionInputCallback",
    "SessionSettings",
    "TranscriptEntry",
    "prepare_input_with_session",
    "save_turn_to_session",
]


def __getattr__(name: str) -> Any:
    # PostgresSession needs the optional postgres extra (psycopg): import it on use.
    if name == "PostgresSession":
        from histcore.sessions.postgres import PostgresSession as PostgresSession

        return PostgresSession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
