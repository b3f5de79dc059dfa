"""``transcript()``: every item a ``keep_replaced=True`` session ever stored.

With ``keep_replaced=True`` the rows that ``replace_suffix``, ``pop_item`` and
``clear_session`` remove are archived (a side table; a list in memory) with the
revision that removed them, and each write notes the revision that stored its rows.
``transcript()`` merges the live history and the archive in the order the items were
stored (row id order); ``get_items()`` is unchanged by the option.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from histcore.engine.collector import collector_paused
from histcore.sessions._codec import decode_id_rows
from histcore.sessions.base import InputItem

__all__ = ["TranscriptEntry", "merge", "stored_revisions"]


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One item of a session's transcript, oldest first.

    ``stored_revision``: the revision whose write stored the item (None when it was
    written before the session kept a transcript, or by another program, such as the
    SDK's own ``SQLiteSession``). ``removed_revision``: the revision that removed it
    (a ``replace_suffix``, ``pop_item`` or ``clear_session``), None while it is live.
    The items a replacement stored carry its ``removed_revision`` as their
    ``stored_revision``: that is what replaced what.
    """

    item: InputItem
    stored_revision: int | None
    removed_revision: int | None

    @property
    def live(self) -> bool:
        """Whether the item is still in the history (``get_items()``)."""
        return self.removed_revision is None


def stored_revisions(
    ids: Sequence[int], writes: Sequence[tuple[int, int, int]]
) -> list[int | None]:
    """The revision that stored each row id in ``ids``, from ``writes``: the
    ``(first_id, last_id, revision)`` of each noted write, sorted by ``first_id`` and
    not overlapping; None for an id no noted write covers."""
    firsts = [write[0] for write in writes]
    found: list[int | None] = []
    for row in ids:
        at = bisect_right(firsts, row) - 1
        if at >= 0 and writes[at][0] <= row <= writes[at][1]:
            found.append(writes[at][2])
        else:
            found.append(None)
    return found


def merge(
    live: list[tuple[int, Any]],
    archived: list[tuple[int, Any, int]],
    writes: Sequence[tuple[int, int, int]],
) -> list[TranscriptEntry]:
    """The transcript of a SQL session: its live ``(id, text)`` rows and archived
    ``(id, text, removed_revision)`` rows in id order (rows that hold no item left
    out), with the stored revisions from ``writes`` (``stored_revisions``)."""
    rows: list[tuple[int, Any, int | None]] = [(row_id, text, None) for row_id, text in live]
    rows += archived
    rows.sort(key=lambda row: row[0])
    with collector_paused():
        # Decoded by position: an id may repeat in a table that reuses ids.
        kept, items, _ = decode_id_rows([(at, row[1]) for at, row in enumerate(rows)])
    stored = stored_revisions([rows[at][0] for at in kept], writes)
    return [
        TranscriptEntry(item, revision, rows[at][2])
        for at, item, revision in zip(kept, items, stored, strict=True)
    ]
