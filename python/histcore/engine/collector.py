"""Pausing the cyclic garbage collector while many containers are built at once.

Decoding or copying 10^5 items allocates a few hundred thousand dicts and lists. With
the collector running, those allocations trigger collections that traverse every live
container, the large history included, and bulk building gets 2-4x slower. The
objects built here are acyclic JSON trees that reference counting alone frees, so
nothing is lost by pausing collection for the duration.

Nested and concurrent pauses (several sessions in several threads) are counted: the
collector is switched back on when the last one ends, and only if it was on when the
first one began.

Switching it back on has a cost of its own: every container built during the pause is
still in the youngest generation, so the next allocation triggers a collection that
traverses all of them (about 55 ms for the 200,000 containers of 10^5 decoded items on
CPython 3.11), only to promote them. When a pause built more than ``PROMOTE_AFTER``
containers (a few more than the young generation's threshold, 700: a collection would
follow at once), they are promoted at once instead: ``gc.freeze()`` then ``gc.unfreeze()``
moves every tracked object to the oldest generation without traversing anything. Those
objects are still collected, by full collections, as any long-lived object is; besides
the containers built in the pause, only what the two younger generations held (a few
thousand objects at the default thresholds) is promoted with them.

Nothing is moved while the program keeps objects frozen itself, so a ``gc.freeze()``
made before forking workers keeps its effect. ``gc.get_freeze_count()`` alone does not
tell: CPython 3.12 starts with a few hundred of its own tuples frozen (the base and MRO
tuples of its static types, all immortal, so unfreezing them changes nothing), while a
program's ``gc.freeze()`` freezes every tracked object, some 4,000 even in a bare
interpreter. So a count at most what the interpreter held when this module was
imported, if that was below ``_INTERPRETER_FROZEN_MAX``, is the interpreter's own.

Small builds are not worth a pause (``paused_for``): from fewer than
``PAUSE_FROM_ITEMS`` items of the usual shapes (a dict with a few nested containers)
they make a few hundred containers, under CPython's young-generation threshold (700),
so at most one collection falls in the build, paused or not (the allocation count goes
on during a pause, and that collection comes right after it), while the pause itself
costs about 2 us: more than the engine's copy of 10 items.
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
