"""A process's peak resident set size (RSS), over its life or over one turn.

Linux: ``VmHWM`` from ``/proc/self/status``, the high-water mark of this program's own
memory, which writing ``5`` to ``/proc/self/clear_refs`` starts again from the current
RSS (so a turn's peak is read after resetting it before the turn). Not ``ru_maxrss``:
Linux carries it over from the parent through fork and exec, so a child of a large bench
process would report the parent's peak. Elsewhere ``ru_maxrss``, and no turn's peak.
"""

from __future__ import annotations

import sys

__all__ = ["peak_rss", "process_peak_rss", "reset_peak_rss"]

#: the highest peak read so far: the kernel's mark starts again at a reset, and it may
#: miss a peak between two reads (Linux updates it lazily, at unmaps)
_highest = 0


def peak_rss() -> int | None:
    """This process's peak RSS in bytes since it started or since ``reset_peak_rss``
    (``process_peak_rss``: over its life), or None where the platform does not say."""
    global _highest
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
                    _highest = max(_highest, peak)
                    return peak
    except OSError:
        pass
    try:
        import resource
    except ImportError:
        return None
    # macOS reports bytes, other systems KiB.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def process_peak_rss() -> int | None:
    """This process's peak RSS in bytes over its whole life, resets or not (at least
    every peak read before)."""
    peak = peak_rss()
    return None if peak is None else max(peak, _highest)


def reset_peak_rss() -> bool:
    """Start the peak RSS again from the current RSS; False where that cannot be done
    (not Linux, or ``/proc`` not writable): then ``peak_rss`` is the process's."""
    peak_rss()  # noted in _highest before the mark starts again
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return False
    return True
