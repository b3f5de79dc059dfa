"""What changed since a read, in a SQLite session table of the SDK's layout: the one
freshness rule for SQLite (histcore's ``SQLiteSession`` and the drop-in's readers of the
SDK's ``SQLiteSession`` and ``AsyncSQLiteSession`` all use it).

A reader keeps, with the rows it read (ids up to ``last_id``, above ``floor`` when it
read only the latest ones), a ``Stamp``: the schema version, the session's rewrite
generation, the database file, and the newest row with ``id <= last_id``. Inside one
read transaction, ``unchanged`` says whether those rows are still the database's: the
same schema, generation and file, as many rows in ``(floor, last_id]``, the same newest
row (or, when asked, the same ``Digest`` of every row). Then the rows above ``last_id``
(``NEWER``) are exactly what is new; otherwise the reader reads everything again. This
needs ids never reused (``ids_never_reused``). What it does not see, and what each check
costs: docs/design.md, "What a store's read does not see".
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from histcore.sessions._sqlite_schema import ids_never_reused, rewrite_generation

__all__ = [
    "AFTER_ALL",
    "CHUNK",
    "ROW",
    "Digest",
    "Row",
    "Stamp",
    "database_file",
    "file_identity",
    "ids_never_reused",
    "newer",
    "newest_row",
    "stamp",
    "unchanged",
]

#: A row as the rule compares it: its id, its text, and whether that is a BLOB (bytes
#: and an ASCII str hash alike, and ``json.loads`` may read them apart).
ROW = "id, message_data, typeof(message_data) = 'blob'"
#: Rows a ``Digest`` hashes at a time (and a whole read fetches at a time).
CHUNK = 4096
#: Above every row id SQLite assigns.
AFTER_ALL = 2**63 - 1

Row = tuple[Any, ...]


@dataclass(slots=True)
class Stamp:
    """What a reader keeps, besides its rows, to tell later whether they are current."""

    #: ``PRAGMA schema_version`` (a table dropped, rebuilt or altered changes it)
    schema: int
    #: the session's rewrite generation (``_sqlite_schema.note_rewrite``: the doctor)
    generation: int
    #: (device, inode) of the database file (None: in memory, or not known)
    file: tuple[int, int] | None = None
    #: the newest row with ``id <= last_id``, as a ``ROW`` (None: there is none)
    newest: Row | None = None
    #: ``Digest.value`` of every kept row (None: not taken, the rows are not checked)
    digest: int | None = None

    def same_database(self, now: Stamp) -> bool:
        """Whether ``now`` (``stamp`` taken since) has this stamp's schema, generation
        and file."""
        return (self.schema, self.generation, self.file) == (now.schema, now.generation, now.file)


def database_file(conn: sqlite3.Connection) -> str:
    """The file name of ``conn``'s main database ("" in memory or temporary)."""
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name in ("main", b"main"):
            return file.decode() if isinstance(file, bytes) else str(file)
    return ""


def file_identity(name: str) -> tuple[int, int] | None:
    """(device, inode) of the file now at ``name``; None in memory ("") or when it cannot
    be looked at (no stamp then matches it)."""
    if not name:
        return None
    try:
        status = os.stat(name)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def stamp(
    conn: sqlite3.Connection, table: str, session_id: str, file: tuple[int, int] | None
) -> Stamp:
    """The database's side of a stamp now (inside the read transaction), for ``file``
    (the database file's identity, as the reader knows it); the reader sets ``newest``."""
    schema: int = conn.execute("PRAGMA schema_version").fetchone()[0]
    return Stamp(schema, rewrite_generation(conn, table, session_id), file)


def newest_row(
    conn: sqlite3.Connection, table: str, session_id: str, last_id: int = AFTER_ALL
) -> Row | None:
    """The session's newest row with ``id <= last_id`` (all rows: its newest), a ``ROW``."""
    row: Row | None = conn.execute(
        f"SELECT {ROW} FROM {table} WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1",
        (session_id, last_id),
    ).fetchone()
    return row


def newer(table: str) -> str:
    """The query of the session's ``ROW`` rows above a last id, in id order (parameters:
    session id, last id)."""
    return f"SELECT {ROW} FROM {table} WHERE session_id = ? AND id > ? ORDER BY id ASC"


class Digest:
    """Hashes of a session's ``ROW`` rows, ``CHUNK`` at a time from its first row, in id
    order: ``hash`` in C per row and per chunk (tuple hashes chain each item through a
    multiply and a rotation, so a change or an exchange of rows gives another value;
    str and bytes hashes are keyed per process, and a reader lives in one).
    ``value`` is the hash of the chunks' hashes; ``tail`` the last chunk's rows."""

    __slots__ = ("chunks", "tail")

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.tail: list[Row] = []

    def add(self, rows: list[Row]) -> None:
        """Take the next rows (a cursor's ``fetchmany(CHUNK)``: a whole chunk, or the
        session's last rows)."""
        if not rows:
            return
        if len(self.tail) < CHUNK and self.chunks:
            # The last chunk was not whole: it takes these rows first.
            rows = self.tail + rows
            self.chunks.pop()
        for start in range(0, len(rows), CHUNK):
            self.tail = rows[start : start + CHUNK]
            self.chunks.append(hash(tuple(self.tail)))

    def read(self, cursor: sqlite3.Cursor) -> None:
        """Take every row of ``cursor``."""
        while chunk := cursor.fetchmany(CHUNK):
            self.add(chunk)

    @property
    def value(self) -> int:
        return hash(tuple(self.chunks))


def unchanged(
    conn: sqlite3.Connection,
    table: str,
    session_id: str,
    kept: Stamp,
    now: Stamp,
    rows: int,
    last_id: int,
    floor: int | None = None,
    check: bool = False,
) -> tuple[bool, Digest | None]:
    """Inside the read transaction that took ``now``: whether the session's rows in
    ``(floor, last_id]``, ``rows`` of them read under ``kept``, are still those: the
    same database (``Stamp.same_database``), as many rows, and the same newest row; with
    ``check`` (``floor`` None), every row the same instead, and their ``Digest``."""
    if not kept.same_database(now):
        return False, None
    where = f"FROM {table} WHERE session_id = ? AND id <= ?"
    params: tuple[Any, ...] = (session_id, last_id)
    if floor is not None:
        where += " AND id > ?"
        params += (floor,)
    (count,) = conn.execute(f"SELECT COUNT(*) {where}", params).fetchone()
    if count != rows:
        return False, None
    if check:
        digest = Digest()
        digest.read(conn.execute(f"SELECT {ROW} {where} ORDER BY id ASC", params))
        return digest.value == kept.digest, digest
    return newest_row(conn, table, session_id, last_id) == kept.newest, None
