"""A SQLite file's ``-wal`` and ``-shm`` side files, as a read-only open of a store
leaves them (docs/doctor.md, "Read-only checks and read-only stores")."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

__all__ = ["immutable_refusal", "remove_side_files", "side_files"]

_SIDE_FILES = ("-wal", "-shm")


def side_files(path: str) -> frozenset[str]:
    """Which of ``path``'s ``-wal`` and ``-shm`` files exist."""
    return frozenset(suffix for suffix in _SIDE_FILES if os.path.exists(path + suffix))


def remove_side_files(path: str, found: frozenset[str]) -> None:
    """Remove the ``-wal`` and ``-shm`` files of ``path`` when neither was ``found``
    before it was read. SQLite removes them when the last connection to a WAL-mode file
    closes, but not a read-only one (it cannot checkpoint): a connection that may
    write, opened and closed without writing, does. SQLite does so only when no other
    connection has the file open, so a writer that came meanwhile keeps its files."""
    if found or not side_files(path):
        return
    try:
        conn = sqlite3.connect(Path(path).absolute().as_uri() + "?mode=rw", uri=True, timeout=0)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # the file cannot be written (nor checkpointed): the files stay


def immutable_refusal(path: str, exc: sqlite3.Error) -> str | None:
    """Why a read-only open that failed with ``exc`` may not be tried again immutable:
    "" when it may (a WAL-mode file SQLite cannot open for want of a -shm file it cannot
    make, with no -wal file, whose changes immutable would not read), else None or a
    hint. Immutable is safe only while nobody writes, and a writer needs the directory."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    cannot_open = (
        (int(code) & 0xFF) == _SQLITE_CANTOPEN
        if code is not None
        else "unable to open database file" in str(exc)
    )
    directory = os.path.dirname(os.path.abspath(path))
    if not cannot_open or os.access(directory, os.W_OK) or not _wal_mode(path):
        return None
    if os.path.exists(path + "-wal"):
        return (
            "a WAL-mode file with a -wal file but no -shm file, in a directory that cannot "
            "be written: copy the file and its -wal file to a writable directory to read it"
        )
    return ""


_SQLITE_CANTOPEN = 14


def _wal_mode(path: str) -> bool:
    """Whether the file's header says WAL mode (read and write versions 2)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    return header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x02\x02"
