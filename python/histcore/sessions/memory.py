"""``MemorySession``: a session held in this process's memory.

Items are kept as their stored JSON text, the same encoding ``SQLiteSession`` writes,
so both backends accept, refuse and return exactly the same things, and every read
hands out freshly decoded objects that the caller may change at will. Revisions and op
ids (``_transactions``) are kept next to the items, under the same lock; with
``keep_replaced=True`` so are the removed items (``transcript``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from histcore.engine.collector import collector_paused
from histcore.sessions._codec import decode_row, encode_items_utf8
from histcore.sessions._transactions import (
    DEFAULT_OP_ID_WINDOW,
    check_expected_revision,
    check_keep_replaced,
    check_op_id,
    check_op_id_window,
    check_start,
    start_beyond,
)
from histcore.sessions.base import (
    InputItem,
    SessionABC,
    SessionSettings,
    check_session_id,
    describe_session_id,
    items_argument,
)
from histcore.sessions.transcript import TranscriptEntry

__all__ = ["MemorySession"]


class MemorySession(SessionABC):
    """An in-memory session; thread-safe, lost when the process ends.

    ``revision()`` counts its committed changes; ``add_items(items, op_id=...)`` stores
    nothing for an op id among the latest ``op_id_window`` (1000) it applied;
    ``replace_suffix`` replaces the items from a position if the revision is unchanged.
    With ``keep_replaced=True``, removed items are kept for ``transcript()``.
    """

    # Every read decodes the stored text anew.
    _returns_fresh_items = True

    def __init__(
        self,
        session_id: str = "default",
        session_settings: SessionSettings | None = None,
        *,
        op_id_window: int = DEFAULT_OP_ID_WINDOW,
        keep_replaced: bool = False,
    ) -> None:
        self.session_id = check_session_id(session_id)
        self.session_settings = session_settings or SessionSettings()
        self._texts: list[bytes] = []
        self._lock = threading.Lock()
        self._revision = 0
        self._op_id_window = check_op_id_window(op_id_window)
        self._op_ids: OrderedDict[str, None] = OrderedDict()
        self._keep_replaced = check_keep_replaced(keep_replaced)
        # With keep_replaced: the revision that stored each live text (parallel to
        # ``_texts``), and the removed ``(text, stored, removed)`` in removal order.
        self._stored: list[int] = []
        self._removed: list[tuple[int, bytes, int, int]] = []
        self._seq = 0  # numbers the texts in the order stored
        self._seqs: list[int] = []

    async def get_items(self, limit: int | None = None) -> list[InputItem]:
        limit = self._read_limit(limit)
        with self._lock:
            texts = (
                self._texts if limit is None else self._texts[max(0, len(self._texts) - limit) :]
            )
            with collector_paused():
                return [decode_row(text) for text in texts]

    async def add_items(self, items: list[InputItem], *, op_id: str | None = None) -> None:
        """Append ``items``; when ``op_id`` is among the latest ``op_id_window`` op ids
        this session applied, store nothing (a retried call)."""
        op_id = check_op_id(op_id)
        texts = encode_items_utf8(items_argument(items))
        if not texts:
            return
        with self._lock:
            if op_id is not None and op_id in self._op_ids:
                return
            self._texts.extend(texts)
            self._revision += 1
            self._note_stored(len(texts))
            if op_id is not None:
                self._op_ids[op_id] = None
                while len(self._op_ids) > self._op_id_window:
                    self._op_ids.popitem(last=False)

    async def pop_item(self) -> InputItem | None:
        with self._lock:
            if not self._texts:
                return None
            self._revision += 1
            self._archive(len(self._texts) - 1)
            return decode_row(self._texts.pop())

    async def clear_session(self) -> None:
        with self._lock:
            if self._texts:
                self._revision += 1
                self._archive(0)
            self._texts.clear()

    async def revision(self) -> int:
        """The session's revision: one more after every committed change, never reused
        (not even after ``clear_session``)."""
        with self._lock:
            return self._revision

    async def replace_suffix(
        self, start: int, items: list[InputItem], *, expected_revision: int
    ) -> bool:
        """Replace the items from position ``start`` (0-based, oldest first; the length
        appends) with ``items``, if the revision is still ``expected_revision``;
        otherwise return False and change nothing."""
        start = check_start(start)
        expected_revision = check_expected_revision(expected_revision)
        texts = encode_items_utf8(items_argument(items))
        with self._lock:
            if self._revision != expected_revision:
                return False
            if start > len(self._texts):
                raise start_beyond(start, len(self._texts))
            if start == len(self._texts) and not texts:
                return True  # nothing changes
            self._revision += 1
            self._archive(start)
            self._texts[start:] = texts
            self._note_stored(len(texts))
            return True

    async def transcript(self) -> list[TranscriptEntry]:
        """Every item this session stored, in the order stored, each with the revision
        that stored it and the one that removed it (None: live). Needs
        ``keep_replaced=True``: otherwise a ValueError."""
        if not self._keep_replaced:
            raise ValueError("transcript() needs a session made with keep_replaced=True")
        with self._lock:
            rows: list[tuple[int, bytes, int, int | None]] = [
                (seq, text, stored, None)
                for seq, text, stored in zip(self._seqs, self._texts, self._stored, strict=True)
            ]
            rows += [(seq, text, stored, removed) for seq, text, stored, removed in self._removed]
        rows.sort(key=lambda row: row[0])
        with collector_paused():
            return [
                TranscriptEntry(decode_row(text), stored, removed)
                for _, text, stored, removed in rows
            ]

    def _note_stored(self, count: int) -> None:
        """Under the lock: ``count`` texts were appended by the current revision."""
        if self._keep_replaced:
            self._stored.extend([self._revision] * count)
            self._seqs.extend(range(self._seq, self._seq + count))
            self._seq += count

    def _archive(self, start: int) -> None:
        """Under the lock, before ``_texts[start:]`` goes: keep it, removed by the
        current revision."""
        if self._keep_replaced:
            self._removed += [
                (seq, text, stored, self._revision)
                for seq, text, stored in zip(
                    self._seqs[start:], self._texts[start:], self._stored[start:], strict=True
                )
            ]
            del self._seqs[start:], self._stored[start:]

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return f"MemorySession({describe_session_id(self.session_id)}, items={len(self._texts)})"
