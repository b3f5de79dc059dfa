"""What a drop-in session read hands out: fresh copies of its kept items, or within a
``kept_handout`` block the kept list itself, noted for the caller (the batch
preparation, which copies it once itself); and, within ``noting_reads``, a ``ReadNote``
of what went out, through which the guard keeps rule (e) of the history with it.

Rule: a read hands out the kept list only to a ``kept_handout`` block of that very
session object, of the SDK's own class. Details: docs/design.md, "Drop-in accelerator".
"""

from __future__ import annotations

import contextvars
import copy
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, TypeVar, cast

from histcore.engine import items as engine_items
from histcore.engine.collector import paused_for
from histcore.engine.input_rules import StoredHistory

__all__ = [
    "KeptHandout",
    "KeptItems",
    "ReadNote",
    "can_keep",
    "copied",
    "current_handout",
    "current_note",
    "fresh_copy",
    "kept_handout",
    "noting_reads",
]


def can_keep(session: Any) -> bool:
    """Whether a reader can keep a history for ``session``: kept histories are keyed by
    the session object, weakly (hashable, weakly referenced)."""
    try:
        weakref.ref(session)
        hash(session)
    except TypeError:
        return False
    return True


class KeptItems(Protocol):
    """A session's kept history as a note sees it."""

    items: list[Any]

    def stored_history(self, length: int) -> StoredHistory | None: ...


def copied(items: list[Any]) -> list[Any] | None:
    """A fresh copy of decoded items (plain JSON trees, nothing shared), or None."""
    if engine_items.BACKEND != "rust":
        # The pure twin runs Python code while it copies: it copies with the collector on.
        return cast("list[Any] | None", engine_items.plain_json_copy(items, allow_shared=True))
    with paused_for(items):
        return cast("list[Any] | None", engine_items.plain_json_copy(items, allow_shared=True))


def fresh_copy(items: list[Any]) -> list[Any]:
    """What a read would have handed out instead of the kept ``items``."""
    items_copy = copied(items)
    return items_copy if items_copy is not None else copy.deepcopy(items)


class KeptHandout:
    """A read of ``session`` may hand out its kept items: ``items`` is then that list."""

    __slots__ = ("items", "session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.items: list[Any] | None = None


class ReadNote:
    """What an unlimited read of ``session`` through its history handed out: ``items``
    (the kept list or a fresh copy of it), made from the first ``length`` items of
    ``history``."""

    __slots__ = ("history", "items", "length", "session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.items: list[Any] | None = None
        self.history: KeptItems | None = None
        self.length = 0

    def note(self, items: list[Any], history: KeptItems) -> None:
        """``items`` went out, made from all of ``history``'s items now."""
        self.items, self.history, self.length = items, history, len(history.items)

    def stored_history(self, items: list[Any]) -> StoredHistory | None:
        """Rule (e) of ``items`` kept with the session's history, when ``items`` is what
        the read handed out (else None)."""
        if self.history is None or self.items is not items:
            return None
        return self.history.stored_history(self.length)


_Noted = TypeVar("_Noted", "KeptHandout", "ReadNote")

_read_note: contextvars.ContextVar[ReadNote | None] = contextvars.ContextVar(
    "histcore_read_note", default=None
)
_handout: contextvars.ContextVar[KeptHandout | None] = contextvars.ContextVar(
    "histcore_kept_handout", default=None
)


@contextmanager
def _set_within(var: contextvars.ContextVar[_Noted | None], value: _Noted) -> Iterator[_Noted]:
    """``value`` in ``var`` within the block."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def noting_reads(session: Any) -> AbstractContextManager[ReadNote]:
    """Within the block, what a read of ``session`` through its history hands out is
    noted in the ``ReadNote`` given."""
    return _set_within(_read_note, ReadNote(session))


def kept_handout(session: Any) -> AbstractContextManager[KeptHandout]:
    """Within the block, an unlimited read of ``session`` may hand out the kept list
    itself (noted in the handout); the caller must copy it before anything mutates it."""
    return _set_within(_handout, KeptHandout(session))


def current_handout(session: Any, exact_class: bool) -> KeptHandout | None:
    """The ``kept_handout`` block a read of ``session`` is in, if it may hand out the
    kept items (``exact_class``: the session is the SDK class's own, not a subclass)."""
    handout = _handout.get()
    return handout if handout is not None and handout.session is session and exact_class else None


def current_note(session: Any) -> ReadNote | None:
    """The ``noting_reads`` block a read of ``session`` is in, if any."""
    note = _read_note.get()
    return note if note is not None and note.session is session else None
