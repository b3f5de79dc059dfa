"""How ``histcore bench`` ends on a signal: through its cleanup, never half-way through
starting something it must clean up.

``ended_by_sigterm`` makes SIGTERM end the program as Ctrl-C does, through every
``finally``. ``signals_held`` makes SIGTERM and SIGINT wait while a process or a server
is started and recorded for cleanup: one that arrived then ends the program once the
record is made, instead of leaving a process nobody will end. ``run_process`` is
``subprocess.run`` with its start held so.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["ended_by_sigterm", "run_process", "signals_held"]

#: The signals ``signals_held`` holds: a terminal's Ctrl-C and a plain ``kill``.
ENDING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def ended_by_sigterm() -> Iterator[None]:
    """Within it, SIGTERM ends the program through every ``finally`` (``SystemExit``),
    as Ctrl-C does, instead of on the spot: temporary copies of a store (yours, with
    ``--store``) are removed, a throwaway PostgreSQL cluster is stopped and deleted, and
    timing processes are ended. Only the main thread can set a handler; elsewhere
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_held() -> Iterator[None]:
    """Within it, SIGINT and SIGTERM wait; each that arrived is raised again when the
    block is left, through the handler it had before (so Ctrl-C raises
    ``KeyboardInterrupt`` there, and SIGTERM under ``ended_by_sigterm`` ``SystemExit``).
    Only the main thread receives signals; elsewhere nothing changes. A signal whose
    handler was not set from Python is not held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    held = [signum for signum in ENDING if signal.getsignal(signum) is not None]
    previous = {signum: signal.signal(signum, hold) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for waited in dict.fromkeys(arrived):
            signal.raise_signal(waited)


def run_process(command: list[str]) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)``, but a process
    started as the program is interrupted is ended too (its start is held)."""
    child: subprocess.Popen[str] | None = None
    try:
        with signals_held():
            child = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        stdout, stderr = child.communicate()
    except BaseException:
        if child is not None:
            child.kill()
            child.communicate()
        raise
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
