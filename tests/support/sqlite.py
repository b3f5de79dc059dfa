"""Plain sqlite3 access for tests: another program using the same file.

A ``sqlite3.Connection`` used as a context manager only commits or rolls back; it is not
closed, and CPython 3.13 warns about every connection left to the garbage collector.
"""

from __future__ import annotations

import gc
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def connected(path: str | Path, **options: Any) -> Iterator[sqlite3.Connection]:
    """A connection that commits (or rolls back) and is closed when the block ends."""
    connection = sqlite3.connect(path, **options)
    try:
        with connection:
            yield connection
    finally:
        connection.close()


def query(path: str | Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """All rows of one statement, run and committed on a connection of its own."""
    with connected(path) as connection:
        return connection.execute(sql, params).fetchall()


@contextmanager
def no_file_left_open() -> Iterator[None]:
    """Fail when the block leaves a file descriptor open (Linux: /proc/self/fd).

    The collector stays off meanwhile, so a connection dropped without ``close()`` (in
    a cycle through an error's traceback, say) still holds its file when checked.
    """
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("counts /proc/self/fd")
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        yield
        assert len(os.listdir("/proc/self/fd")) == before, "a file was left open"
    finally:
        if enabled:
            gc.enable()


def write_junk(path: str | Path) -> None:
    """A file that is not a SQLite database."""
    Path(path).write_text("this is not a database" * 100, encoding="utf-8")
