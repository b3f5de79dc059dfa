"""``MemorySession``: a session held in this process's memory.

Items are kept as their stored JSON text, the same encoding ``SQLiteSession`` writes,
so both backends accept, refuse and return exactly the same things, and every read
hands out freshly decoded objects that the caller may change at will.
"""

from __future__ import annotations

import threading

from histcore.engine.collector import collector_paused
from histcore.sessions._codec import decode_row, encode_items_utf8
from histcore.sessions.base import (
    InputItem,
    SessionABC,
    SessionSettings,
    check_session_id,
    describe_session_id,
    items_argument,
)

__all__ = ["MemorySession"]


class MemorySession(SessionABC):
    """An in-memory session; thread-safe, lost when the process ends."""

    # Every read decodes the stored text anew.
    _returns_fresh_items = True

    def __init__(
        self, session_id: str = "default", session_settings: SessionSettings | None = None
    ) -> None:
        self.session_id = check_session_id(session_id)
        self.session_settings = session_settings or SessionSettings()
        self._texts: list[bytes] = []
        self._lock = threading.Lock()

    async def get_items(self, limit: int | None = None) -> list[InputItem]:
        limit = self._read_limit(limit)
        with self._lock:
            texts = (
                self._texts if limit is None else self._texts[max(0, len(self._texts) - limit) :]
            )
            with collector_paused():
                return [decode_row(text) for text in texts]

    async def add_items(self, items: list[InputItem]) -> None:
        texts = encode_items_utf8(items_argument(items))
        with self._lock:
            self._texts.extend(texts)

    async def pop_item(self) -> InputItem | None:
        with self._lock:
            if not self._texts:
                return None
            return decode_row(self._texts.pop())

    async def clear_session(self) -> None:
        with self._lock:
            self._texts.clear()

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return f"MemorySession({describe_session_id(self.session_id)}, items={len(self._texts)})"
