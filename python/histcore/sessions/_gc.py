"""Pausing the cyclic garbage collector while many containers are built at once.

Decoding or copying 10^5 items allocates a few hundred thousand dicts and lists. With
the collector running, those allocations trigger collections that traverse every live
container, the large history included, and bulk building gets 2-4x slower. The
objects built here are acyclic JSON trees that reference counting alone frees, so
nothing is lost by pausing collection for the duration.

Nested and concurrent pauses (several sessions in several threads) are counted: the
collector is switched back on when the last one ends, and only if it was on when the
first one began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

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
                gc.enable()
