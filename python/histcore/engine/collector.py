"""Pausing the cyclic garbage collector while many containers are built at once.

Decoding or copying a long history builds hundreds of thousands of acyclic dicts and
lists that reference counting alone frees; collections triggered meanwhile traverse the
whole live heap. So bulk builds pause it (``collector_paused``, ``paused_for``).

Rules: nested and concurrent pauses are counted, and the collector comes back on only
when the last ends and only if it was on when the first began; a pause that built more
than ``PROMOTE_AFTER`` containers promotes them to the oldest generation
(``gc.freeze()`` then ``gc.unfreeze()``) unless the program keeps objects frozen itself;
builds from fewer than ``PAUSE_FROM_ITEMS`` items are not paused. Why each rule:
docs/design.md, "Sessions" ("The collector during bulk builds").
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

__all__ = [
    "PAUSE_FROM_ITEMS",
    "PROMOTE_AFTER",
    "collector_paused",
    "interpreter_frozen",
    "paused_for",
]

#: Lists of fewer items than this are built from without a pause (``paused_for``).
PAUSE_FROM_ITEMS = 100

#: Containers built during a pause above which they are promoted when it ends. Not
#: higher: the 10^3-item history of an SDK turn is copied eight times (some 3,000
#: containers each), and promoting its copies made that turn about 1 ms (a tenth)
#: faster than the young collections that came after each copy.
PROMOTE_AFTER = 1_000

# More frozen objects than this at import means the program froze them (see above).
_INTERPRETER_FROZEN_MAX = 1_000


def interpreter_frozen(count: int) -> int:
    """How many of ``count`` frozen objects (seen at import) the interpreter froze itself."""
    return count if count <= _INTERPRETER_FROZEN_MAX else 0


_interpreter_frozen = interpreter_frozen(gc.get_freeze_count())

_lock = threading.Lock()
_active = 0
_reenable = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with automatic garbage collection off."""
    global _active, _reenable
    with _lock:
        if _active == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _reenable:
                young = gc.get_count()[0]
                if young > PROMOTE_AFTER and gc.get_freeze_count() <= _interpreter_frozen:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


_UNPAUSED = nullcontext()


def paused_for(items: object) -> AbstractContextManager[None]:
    """``collector_paused()`` for building containers from ``items``, or nothing when
    ``items`` is an exact list of fewer than ``PAUSE_FROM_ITEMS`` (see above)."""
    if type(items) is list and len(items) < PAUSE_FROM_ITEMS:
        return _UNPAUSED
    return collector_paused()
