"""A SQLite session store as its readers read it (the ``StoreReader`` of ``model.py``):
the SDK's ``SQLiteSession`` and ``AsyncSQLiteSession`` files, histcore's own, and the
SDK's ``AdvancedSQLiteSession`` with its linked tables (``sqlite_linked.py``)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from histcore.sessions._store_readers.model import Row, StoreError, StoreLocked, Tables, decode_text
from histcore.sessions._store_readers.sqlite_files import (
    immutable_refusal,
    remove_side_files,
    side_files,
)
from histcore.sessions._store_readers.sqlite_linked import Linked

__all__ = ["SQLiteReader", "sqlite_failure", "stored_data"]

_Made = TypeVar("_Made")

# Rows (rowids) a statement reads at most, where a read need not be one snapshot.
_CHUNK = 10_000


def sqlite_failure(name: str, exc: sqlite3.Error) -> StoreError:
    """The StoreError (StoreLocked for a lock) that SQLite's ``exc`` on ``name`` is."""
    code = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if code in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in text:
        return StoreLocked(
            f"{name}: the database is locked by another process ({text}); try again when "
            "it is done (--busy-timeout waits longer)"
        )
    return StoreError(f"{name}: {text}")


class SQLiteReader:
    """A SQLite session store, opened read-only unless ``writable``.

    The URI modes never create a file, and read-only stays read-only. No implicit
    transactions (isolation_level=None): each read is one statement, and a writer opens
    and ends its own transactions. ``busy_timeout``: seconds to wait for another
    process's lock before StoreLocked. Read-only, a WAL-mode file SQLite cannot open for
    want of a ``-shm`` file is opened immutable (``notice`` says so), and ``close``
    removes the ``-wal``/``-shm`` files the reads made.
    """

    def __init__(
        self, path: str, *, writable: bool, busy_timeout: float, tables: Tables | None = None
    ) -> None:
        if os.path.isdir(path):
            raise StoreError(f"{path}: is a directory, not a SQLite database file")
        if not os.path.isfile(path):
            raise StoreError(f"{path}: no such file")
        self.name = path
        self._tables = tables = tables if tables is not None else Tables()
        self._writable = writable
        #: the side files of a WAL-mode file that were there before this store opened
        self._found_side_files = side_files(path)
        #: the URI the store is read through (a session reading it may use it too)
        self.uri = Path(path).absolute().as_uri() + ("?mode=rw" if writable else "?mode=ro")
        #: why the store was opened in an unusual way (None: it was not)
        self.notice: str | None = None
        names = self._open(busy_timeout)
        if tables.messages not in names:
            self.close()
            raise StoreError(f"{path}: not a session store (it has no {tables.messages} table)")
        self._has_sessions_table = tables.sessions in names
        self._without_session: dict[str, list[int]] = {}
        self._row_count = 0
        try:
            self._linked = Linked(self._conn, tables.messages, tables.sessions)
            refusal = self._linked.refusal(self._conn, writable)
        except sqlite3.Error as exc:
            self.close()
            raise sqlite_failure(path, exc) from exc
        if refusal is not None:
            self.close()
            raise StoreError(f"{path}: {refusal}")

    def _open(self, busy_timeout: float) -> set[str]:
        """Connect and read the table names (where SQLite finds whether it can read);
        read-only, the immutable fallback when only it reads the file."""
        try:
            return self._connect_and_list(busy_timeout)
        except sqlite3.Error as exc:
            failure = sqlite_failure(self.name, exc)
            if isinstance(failure, StoreLocked):
                raise failure from exc
            refusal = None if self._writable else immutable_refusal(self.name, exc)
            if refusal != "":
                hint = f": {refusal}" if refusal else ""
                raise StoreError(
                    f"{self.name}: not a readable SQLite database ({exc}){hint}"
                ) from exc
        self.uri = Path(self.name).absolute().as_uri() + "?mode=ro&immutable=1"
        self.notice = (
            f"{self.name} is a WAL-mode database in a directory that cannot be written, "
            "with no -wal file beside it: SQLite cannot make the -shm file a reader needs, "
            "so it was opened immutable (read as it is, assuming nobody writes to it)"
        )
        try:
            return self._connect_and_list(busy_timeout)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.name}: not a readable SQLite database ({exc})") from exc

    def _connect_and_list(self, busy_timeout: float) -> set[str]:
        self._conn = sqlite3.connect(self.uri, uri=True, isolation_level=None, timeout=busy_timeout)
        try:
            return self._table_names()
        except BaseException:
            self._conn.close()
            raise

    def _table_names(self) -> set[str]:
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        return {str(name) for (name,) in self._conn.execute(query)}

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlite_failure(self.name, exc) from exc

    def _chunks(self, table: str, columns: str) -> Iterator[list[tuple[Any, ...]]]:
        # A whole table, _CHUNK rows (in rowid order) a statement: in a rollback-journal
        # store a reader holds writers off for as long as its statement runs.
        after = -(2**63)
        with self._errors():
            while True:
                chunk = self._conn.execute(
                    f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                    (after, _CHUNK),
                ).fetchall()
                yield [row[1:] for row in chunk]
                if len(chunk) < _CHUNK:
                    return
                after = chunk[-1][0]

    def session_ids(self) -> list[str]:
        # Read as bytes, so a session id that is not UTF-8 cannot stop the whole check:
        # no session can read its rows, and rows_without_session reports them.
        decoded: dict[bytes, str | None] = {}
        self._without_session = {}
        self._row_count = 0
        for chunk in self._chunks(
            self._tables.messages, "id, typeof(session_id), CAST(session_id AS BLOB)"
        ):
            self._row_count += len(chunk)
            for row_id, kind, raw in chunk:
                why = str(kind) if kind != "text" else None
                if why is None and _decoded(decoded, raw) is None:
                    why = "not_utf8"
                if why is not None:
                    self._without_session.setdefault(why, []).append(int(row_id))
        if self._has_sessions_table:
            for chunk in self._chunks(
                self._tables.sessions, "typeof(session_id), CAST(session_id AS BLOB)"
            ):
                for kind, raw in chunk:
                    if kind == "text":
                        _decoded(decoded, raw)
        for row_ids in self._without_session.values():
            row_ids.sort()
        return sorted(value for value in decoded.values() if value is not None)

    def rows_without_session(self) -> dict[str, list[int]]:
        return self._without_session

    def rows_without_structure(self, session_id: str) -> list[int]:
        with self._errors():
            return self._linked.rows_without_structure(self._conn, session_id)

    def row_count(self) -> int:
        return self._row_count

    def read_rows(self, session_id: str) -> list[Row]:
        return self._each_row(session_id, _sqlite_row)

    def read_data(self, session_id: str) -> list[tuple[int, Any]]:
        return self._each_row(
            session_id, lambda row_id, raw, kind: (row_id, stored_data(raw, kind))
        )

    def _each_row(self, session_id: str, make: Callable[[int, Any, str], _Made]) -> list[_Made]:
        # Chunk by chunk, each fetched before it is decoded, so no statement holds
        # writers off for long. Not one snapshot, but a repair compares the session
        # under the write lock before it changes anything.
        with self._errors():
            return [
                make(int(row_id), raw, str(kind))
                for chunk in self._session_chunks(session_id)
                for row_id, raw, kind in chunk
            ]

    def _session_chunks(self, session_id: str) -> Iterator[list[tuple[Any, ...]]]:
        """The session's ``(id, data as bytes, storage class)`` rows in id order, _CHUNK
        rows a statement."""
        after = -(2**63)
        while True:
            chunk = self._conn.execute(
                f"SELECT id, CAST(message_data AS BLOB), typeof(message_data) "
                f"FROM {self._tables.messages} WHERE session_id = ? AND id > ? "
                "ORDER BY id ASC LIMIT ?",
                (session_id, after, _CHUNK),
            ).fetchall()
            yield chunk
            if len(chunk) < _CHUNK:
                return
            after = chunk[-1][0]

    @property
    def tables(self) -> Tables:
        return self._tables

    def close(self) -> None:
        """Close the store, and remove the -wal and -shm files its reads made."""
        self._conn.close()
        if not self._writable:
            remove_side_files(self.name, self._found_side_files)


def _decoded(cache: dict[bytes, str | None], raw: bytes) -> str | None:
    """``raw`` as UTF-8 text, or None when it is not (remembered in ``cache``)."""
    value = bytes(raw)
    if value not in cache:
        try:
            cache[value] = value.decode("utf-8")
        except UnicodeDecodeError:
            cache[value] = None
    return cache[value]


def stored_data(raw: bytes | None, kind: str) -> Any:
    # A TEXT row is kept as str and a BLOB row as bytes, so a row written back keeps
    # its storage class; TEXT that is not UTF-8 stays bytes, and NULL, INTEGER and REAL
    # (what the SDK's json.loads refuses) are None.
    if kind not in ("text", "blob") or raw is None:
        return None
    if kind == "blob":
        return bytes(raw)
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(raw)


def _sqlite_row(row_id: int, raw: bytes | None, kind: str) -> Row:
    data = stored_data(raw, kind)
    if data is None:
        return decode_text(row_id, None, f"message_data is {kind.upper()}, not text")
    # Decoded from the bytes the session reads (TEXT and BLOB alike), kept as stored.
    found = decode_text(row_id, bytes(raw) if raw is not None else None)
    return dataclasses.replace(found, data=data)
