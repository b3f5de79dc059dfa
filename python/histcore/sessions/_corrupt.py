"""Stored rows a session store skips because they are not JSON (SQLite and PostgreSQL)."""

from __future__ import annotations

import logging

__all__ = ["SkipsCorruptRows"]

logger = logging.getLogger("histcore.sessions")


class SkipsCorruptRows:
    """Mixin of a store that leaves rows which are not JSON out of the history.

    The class sets ``session_id``, ``messages_table`` and ``_skipped = {}`` (row id ->
    reason, cleared with the session); each skipped row is logged once, when first met.
    Not locked: a store used from several threads calls these under its own lock.
    """

    session_id: str
    messages_table: str
    _skipped: dict[int, str]

    def _skip(self, row_id: int, reason: str) -> None:
        if row_id not in self._skipped:
            self._skipped[row_id] = reason
            logger.warning(
                "session %r: skipped row %d of %s, it is not JSON (%s)",
                self.session_id,
                row_id,
                self.messages_table,
                reason,
            )

    def _skipped_ids(self) -> tuple[int, ...]:
        """The ids of the skipped rows, ascending."""
        return tuple(sorted(self._skipped))
