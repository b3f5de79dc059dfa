"""The SQLite plumbing histcore's SQLite stores share (the session's ``_sqlite_store``
and the versioned text store, ``versioned_sqlite``): the busy timeout check, the
connection as they use it, and its transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["check_busy_timeout", "connect", "transaction"]


def check_busy_timeout(busy_timeout: object) -> float:
    """``busy_timeout`` if it is a number of seconds >= 0; TypeError or ValueError if not."""
    if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
        raise TypeError(f"busy_timeout must be a number, not {type(busy_timeout).__name__}")
    if busy_timeout < 0:
        raise ValueError(f"busy_timeout must be >= 0 seconds, got {busy_timeout}")
    return busy_timeout


def connect(target: str, busy_timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    """A connection to ``target`` that waits ``busy_timeout`` seconds for another
    connection's lock, opens no transaction by itself (``transaction`` does) and may be
    used from any thread (the stores run one operation at a time, under their lock)."""
    return sqlite3.connect(
        target, timeout=busy_timeout, isolation_level=None, check_same_thread=False, uri=uri
    )


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    """``begin`` (``BEGIN`` or ``BEGIN IMMEDIATE``), committed when the block ends, rolled
    back when it raises (for a read the two are the same: they only end the snapshot)."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
