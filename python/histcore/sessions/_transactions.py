"""Argument checks shared by the history transactions of every session backend:
``revision()``, ``add_items(items, op_id=...)`` and ``replace_suffix``.

A revision is a per-session counter kept in the store: every committed change (add,
pop, clear, replace) adds one, and it is never reset, not even by ``clear_session``.
An op id names one ``add_items`` call; the store remembers the op ids of the session's
latest ``op_id_window`` such calls (``DEFAULT_OP_ID_WINDOW``), in the transaction that
wrote their rows, so a retry of a call whose acknowledgement was lost stores nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from histcore.sessions.base import check_int, items_argument

__all__ = [
    "DEFAULT_OP_ID_WINDOW",
    "OpIdAppending",
    "Replacement",
    "SuffixReplacing",
    "check_expected_revision",
    "check_keep_replaced",
    "check_op_id",
    "check_op_id_window",
    "check_start",
    "doomed_rows",
    "start_beyond",
]

_Item = TypeVar("_Item")
_Text = TypeVar("_Text")


class _History(Protocol):
    """Rows of a history that hold items: their ids and the items, oldest first."""

    ids: list[int]
    items: list[Any]


#: How many op ids a session remembers by default (its latest ones).
DEFAULT_OP_ID_WINDOW = 1000


def check_op_id(op_id: object) -> str | None:
    """``op_id`` if it is None or a non-empty str of valid UTF-8 text; otherwise a
    TypeError/ValueError naming it."""
    if op_id is None:
        return None
    if not isinstance(op_id, str):
        raise TypeError(f"op_id must be a non-empty str or None, not {type(op_id).__name__}")
    if not op_id:
        raise ValueError("op_id must be a non-empty str or None, got ''")
    try:
        op_id.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"op_id must be valid UTF-8 text, got {op_id[:64]!r}") from None
    if "\x00" in op_id:
        raise ValueError(f"op_id must not hold a NUL character, got {op_id[:64]!r}")
    return op_id


def check_op_id_window(window: object) -> int:
    """``window`` if it is an int >= 1; otherwise a TypeError/ValueError naming it."""
    return check_int(window, "op_id_window", 1)


def check_keep_replaced(keep: object) -> bool:
    """``keep`` if it is a bool; otherwise a TypeError naming it."""
    if not isinstance(keep, bool):
        raise TypeError(f"keep_replaced must be a bool, not {type(keep).__name__}")
    return keep


def check_expected_revision(revision: object) -> int:
    """``revision`` if it is an int >= 0; otherwise a TypeError/ValueError naming it."""
    return check_int(revision, "expected_revision")


def check_start(start: object) -> int:
    """``start`` if it is an int >= 0 (checked against the length later, in the
    transaction); otherwise a TypeError/ValueError naming it."""
    return check_int(start, "start", hint=" (a position, oldest first)")


def start_beyond(start: int, length: int) -> ValueError:
    """The error of a ``start`` past the end of a history of ``length`` items."""
    return ValueError(f"start must be at most the number of items ({length}), got {start}")


def doomed_rows(
    ids: list[int],
    items: list[Any],
    start: int,
    *,
    from_end: bool = False,
    prune_prefix: Callable[[Any], bool] | None = None,
) -> list[int] | None:
    """The row ids a replacement from ``start`` removes, given the ids and items of a
    history (rows that hold no item left out): ``ids[start:]``, and with
    ``prune_prefix`` also the leading items it calls expired (up to the first it does
    not, never into the replaced part). ``from_end``: ``start`` counts items from the
    newest; None when there are fewer. A ``start`` beyond the history is a ValueError.
    """
    if from_end:
        if start > len(ids):
            return None
        start = len(ids) - start
    elif start > len(ids):
        raise start_beyond(start, len(ids))
    expired = 0
    if prune_prefix is not None:
        while expired < start and prune_prefix(items[expired]):
            expired += 1
    return ids[:expired] + ids[start:]


@dataclass(frozen=True)
class Replacement(Generic[_Item]):
    """One ``replace_suffix``, its arguments checked: the items from position ``start``
    (0-based, oldest first; with ``from_end``, counted from the newest) replaced by
    ``items`` (their stored texts once encoded: ``stored``) if the revision is still
    ``expected_revision``; ``prune_prefix``: see ``doomed_rows``."""

    start: int
    items: list[_Item]
    expected_revision: int
    from_end: bool = False
    prune_prefix: Callable[[Any], bool] | None = None

    def stored(self, texts: list[_Text]) -> Replacement[_Text]:
        """This replacement, writing ``texts`` (its items encoded)."""
        return Replacement(
            self.start, texts, self.expected_revision, self.from_end, self.prune_prefix
        )

    def doomed(self, history: _History) -> list[int] | None:
        """The row ids it removes from ``history`` (``doomed_rows`` of its ids and
        items); None when ``from_end`` counts more items than it holds."""
        return doomed_rows(
            history.ids,
            history.items,
            self.start,
            from_end=self.from_end,
            prune_prefix=self.prune_prefix,
        )

    def changes(self, doomed: list[int]) -> bool:
        """Whether removing the rows ``doomed`` and writing its items changes anything."""
        return bool(doomed or self.items)


class OpIdAppending(ABC):
    """``add_items(items, op_id=...)`` written once for the stores whose append is one
    transaction of their own, ``_add`` (SQLite and PostgreSQL)."""

    async def add_items(self, items: list[Any], *, op_id: str | None = None) -> None:
        """Append ``items``, all or none; when ``op_id`` is among the latest
        ``op_id_window`` op ids this session applied, store nothing (a retried call)."""
        items = items_argument(items)
        op_id = check_op_id(op_id)
        self._check_open()
        if items:
            await self._add(items, op_id)

    @abstractmethod
    def _check_open(self) -> None:
        """A SessionClosedError when the session was closed."""

    @abstractmethod
    async def _add(self, items: list[Any], op_id: str | None) -> None:
        """``add_items`` with checked arguments, ``items`` not empty."""


class SuffixReplacing(ABC):
    """``replace_suffix`` written once for the stores that replace in one transaction of
    their own, ``_replace`` (SQLite and PostgreSQL; the SDK's compaction hook calls
    ``_replace`` too, counting ``start`` from the newest item)."""

    async def replace_suffix(self, start: int, items: list[Any], *, expected_revision: int) -> bool:
        """Replace the items from position ``start`` (0-based, oldest first; the length
        appends) with ``items`` in one transaction, if the revision is still
        ``expected_revision``; otherwise return False and change nothing. Rows that
        hold no item are not positions, and are left where they are."""
        start = check_start(start)
        expected_revision = check_expected_revision(expected_revision)
        return await self._replace(Replacement(start, items_argument(items), expected_revision))

    @abstractmethod
    async def _replace(self, replacement: Replacement[Any]) -> bool:
        """``replacement``, its items not encoded yet, in one transaction."""
