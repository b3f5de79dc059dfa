"""``GuardLink``: how the guard reaches the checking pass of the dedupe histcore built.

histcore's dedupe can also give, in the same engine pass, the model-input problems of
what it keeps (``make_deduplicate``). Each ``install()`` holds one link; the dedupe
replacement is built with it and records its checking pass there, and the guard asks
the link for the pass of whatever dedupe it wraps: found, one engine call does both;
not found (a dedupe rebound by someone else), the guard dedupes and then checks. The
link also knows the installation's guards, so that a rebound dedupe is noticed.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Checked", "GuardLink"]

#: ``(items, history) -> (dedupe(items), input_problems(...))``, or NotImplemented where
#: the engine's dedupe declines (the dedupe is then the SDK's own)
Checked = Callable[[Sequence[Any], Any], Any]


class GuardLink:
    """The checking pass of each dedupe built for one installation, by the dedupe, and
    the installation's guarded dedupes."""

    __slots__ = ("_checked", "_guards")

    def __init__(self) -> None:
        self._checked: dict[int, tuple[Callable[..., Any], Checked]] = {}
        #: weakly: a guard re-made over a rebound dedupe lives only while bound
        self._guards: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()

    def record(self, dedupe: Callable[..., Any], checked: Checked) -> None:
        """``checked`` is ``dedupe``'s checking pass (the link keeps both alive)."""
        self._checked[id(dedupe)] = (dedupe, checked)

    def checked_of(self, dedupe: Any) -> Checked | None:
        """The checking pass of ``dedupe`` if it is one the link recorded, else None."""
        entry = self._checked.get(id(dedupe))
        return entry[1] if entry is not None and entry[0] is dedupe else None

    def record_guard(self, guard: Callable[..., Any]) -> None:
        """``guard`` is a guarded dedupe of this installation."""
        self._guards.add(guard)

    def is_guard(self, value: Any) -> bool:
        """Whether ``value`` is a guarded dedupe of this installation."""
        try:
            return value in self._guards
        except TypeError:  # not weakly referable (nor a function, then)
            return False
