"""The SQLite session store as the doctor reads and repairs it (the ``Store`` of
``read.py``): the SDK's ``SQLiteSession`` and ``AsyncSQLiteSession`` files, histcore's
own, and the SDK's ``AdvancedSQLiteSession`` with its linked tables (``linked.py``)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from histcore.cli.doctor.linked import Linked
from histcore.cli.doctor.read import (
    DoctorError,
    Row,
    RowChanges,
    RowFacts,
    Source,
    StoreLocked,
    Tables,
    backup_stamp,
    data_digest,
    decode_text,
    row_facts,
    utf8_text_digest,
)
from histcore.cli.doctor.side import SideFacts, bump_sqlite, sqlite_side_facts
from histcore.cli.doctor.sqlite_files import immutable_refusal, remove_side_files, side_files
from histcore.sessions._sqlite_schema import note_rewrite

__all__ = ["SQLiteStore", "remove_side_files", "side_files"]

_Made = TypeVar("_Made")

# The longest pause after a repair's transaction (see SQLiteStore.transaction).
_MAX_PAUSE = 1.0
# Rows (rowids) a statement reads at most, where a read need not be one snapshot.
_CHUNK = 10_000
# Row ids a statement names at most (SQLite before 3.32 takes 999 parameters).
_IDS_PER_STATEMENT = 500


def _sqlite_failure(name: str, exc: sqlite3.Error) -> DoctorError:
    code = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if code in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in text:
        return StoreLocked(
            f"{name}: the database is locked by another process ({text}); try again when "
            "it is done (--busy-timeout waits longer)"
        )
    return DoctorError(f"{name}: {text}")


class SQLiteStore:
    """A SQLite session store, opened read-only unless ``writable``.

    The URI modes never create a file, and read-only stays read-only. No implicit
    transactions (isolation_level=None): each read is one statement, and
    ``transaction()`` opens and ends the repairs' own. ``busy_timeout``: seconds to
    wait for another process's lock before StoreLocked. Read-only, a WAL-mode file
    SQLite cannot open for want of a ``-shm`` file is opened immutable (``notice``
    says so), and ``close`` removes the ``-wal``/``-shm`` files the reads made.
    """

    def __init__(
        self, path: str, *, writable: bool, busy_timeout: float, tables: Tables | None = None
    ) -> None:
        if os.path.isdir(path):
            raise DoctorError(f"{path}: is a directory, not a SQLite database file")
        if not os.path.isfile(path):
            raise DoctorError(f"{path}: no such file")
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
            raise DoctorError(f"{path}: not a session store (it has no {tables.messages} table)")
        self._has_sessions_table = tables.sessions in names
        self._without_session: dict[str, list[int]] = {}
        self._row_count = 0
        try:
            self._linked = Linked(self._conn, tables.messages, tables.sessions)
            refusal = self._linked.refusal(self._conn, writable)
        except sqlite3.Error as exc:
            self.close()
            raise _sqlite_failure(path, exc) from exc
        if refusal is not None:
            self.close()
            raise DoctorError(f"{path}: {refusal}")

    def _open(self, busy_timeout: float) -> set[str]:
        """Connect and read the table names (where SQLite finds whether it can read);
        read-only, the immutable fallback when only it reads the file."""
        try:
            return self._connect_and_list(busy_timeout)
        except sqlite3.Error as exc:
            failure = _sqlite_failure(self.name, exc)
            if isinstance(failure, StoreLocked):
                raise failure from exc
            refusal = None if self._writable else immutable_refusal(self.name, exc)
            if refusal != "":
                hint = f": {refusal}" if refusal else ""
                raise DoctorError(
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
            raise DoctorError(f"{self.name}: not a readable SQLite database ({exc})") from exc

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
            raise _sqlite_failure(self.name, exc) from exc

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
            session_id, lambda row_id, raw, kind: (row_id, _stored_data(raw, kind))
        )

    def read_facts(self, session_id: str) -> list[RowFacts]:
        # A chunk's data and decoded items go once its facts are made.
        return self._each_row(session_id, _sqlite_facts)

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

    def _stored(self, session_id: str) -> Iterator[tuple[int, bytes]]:
        # What a repair compares under the write lock (so the chunks are one view):
        # ids and digests of the stored data, never the whole session's data at once.
        for chunk in self._session_chunks(session_id):
            for row_id, raw, kind in chunk:
                yield int(row_id), _stored_digest(raw, str(kind))

    def _stored_data_of(self, session_id: str, row_ids: Iterable[int]) -> dict[int, Any]:
        """The stored data of these rows of the session (as a repair writes it back)."""
        wanted = sorted(set(row_ids))
        found: dict[int, Any] = {}
        for start in range(0, len(wanted), _IDS_PER_STATEMENT):
            some = wanted[start : start + _IDS_PER_STATEMENT]
            found.update(
                (int(row_id), _stored_data(raw, str(kind)))
                for row_id, raw, kind in self._conn.execute(
                    f"SELECT id, CAST(message_data AS BLOB), typeof(message_data) "
                    f"FROM {self._tables.messages} WHERE session_id = ? "
                    f"AND id IN ({', '.join('?' * len(some))})",
                    (session_id, *some),
                )
            )
        return found

    def write_backup(self, session_ids: Sequence[str]) -> str:
        """Copy every row of ``session_ids`` to ``PATH.bak-<UTC time>`` (never
        overwriting one): a SQLite file with the store's own two tables, so a store of
        its own, holding the rows with their ids and stored values exactly."""
        target = f"{self.name}.bak-{backup_stamp()}"
        suffix = 1
        while os.path.exists(target):
            suffix += 1
            target = f"{self.name}.bak-{backup_stamp()}-{suffix}"
        try:
            self._create_tables_in(target)
            self._copy_sessions_to(target, session_ids)
        except (sqlite3.Error, OSError) as exc:
            if os.path.exists(target):
                os.remove(target)
            failure = (
                _sqlite_failure(self.name, exc)
                if isinstance(exc, sqlite3.Error)
                else DoctorError(f"{self.name}: {exc}")
            )
            message = f"{failure}; writing the backup {target} failed, nothing was changed"
            raise type(failure)(message) from exc
        return target

    def _tables_present(self) -> list[str]:
        tables = [self._tables.sessions] if self._has_sessions_table else []
        return [*tables, self._tables.messages, *self._linked.tables]

    @property
    def tables(self) -> Tables:
        return self._tables

    @property
    def linked_tables(self) -> list[str]:
        """The tables beside the messages table that hold rows of its sessions."""
        return self._linked.tables

    @contextmanager
    def attached(self, path: str, alias: str) -> Iterator[sqlite3.Connection]:
        """The store's connection, with the SQLite file ``path`` attached read-only as
        ``alias`` (outside any transaction: SQLite attaches and detaches only there)."""
        uri = Path(path).absolute().as_uri() + "?mode=ro"
        with self._errors():
            self._conn.execute("ATTACH DATABASE ? AS " + alias, (uri,))
        try:
            yield self._conn
        finally:
            with self._errors():
                self._conn.execute("DETACH DATABASE " + alias)

    def _create_tables_in(self, target: str) -> None:
        # The tables' own CREATE statements: the same columns, types and affinities.
        statements = dict(
            self._conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
        )
        destination = sqlite3.connect(target, isolation_level=None)
        try:
            for table in self._tables_present():
                destination.execute(statements[table])
        finally:
            destination.close()

    def _copy_sessions_to(self, target: str, session_ids: Sequence[str]) -> None:
        # One statement per session and table, so the store is read-locked no longer
        # than that (a rollback-journal store's writers wait for readers); SQLite copies
        # the values, storage classes and all. Synced to disk once, at the end.
        uri = Path(target).absolute().as_uri() + "?mode=rw"
        self._conn.execute("ATTACH DATABASE ? AS doctor_backup", (uri,))
        try:
            self._conn.execute("PRAGMA doctor_backup.journal_mode = OFF")
            self._conn.execute("PRAGMA doctor_backup.synchronous = OFF")
            for session_id in session_ids:
                for table in self._tables_present():
                    self._conn.execute(
                        f"INSERT INTO doctor_backup.{table} SELECT * FROM main.{table} "
                        "WHERE session_id = ?",
                        (session_id,),
                    )
        finally:
            self._conn.execute("DETACH DATABASE doctor_backup")
        descriptor = os.open(target, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        # The write lock from a repair's re-read to the commit, so no writer slips in
        # between; committed at the end of the block, rolled back on any error.
        started = time.monotonic()
        with self._errors():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        # Then as long without the lock: a writer's busy handler polls for the lock
        # (every 100 ms at worst), and transactions back to back would leave it no gap.
        time.sleep(min(time.monotonic() - started, _MAX_PAUSE))

    def repair(self, session_id: str, changes: RowChanges) -> bool:
        updates, deletions = changes.updates, changes.deletions
        with self._errors():
            if not changes.expected.matches(self._stored(session_id)):
                return False
            if not self._linked.still_one_branch(self._conn, session_id):
                return False
            # The session holds the rows planned on: its sources hold the data planned
            # on, read before any row changes (a row may be another's source).
            sources = [*updates, *((0, source) for source in changes.appended)]
            data = self._stored_data_of(
                session_id, [source for _, source in sources if isinstance(source, int)]
            )

            def stored(source: Source) -> Any:
                return data[source] if isinstance(source, int) else source.text

            # Synthesized outputs are refused where the linked tables are (check.py).
            linked = [(row_id, source) for row_id, source in updates if isinstance(source, int)]
            self._linked.repair(self._conn, session_id, linked, deletions)
            messages = self._tables.messages
            self._conn.executemany(
                f"UPDATE {messages} SET message_data = ? WHERE id = ? AND session_id = ?",
                [(stored(source), row_id, session_id) for row_id, source in updates],
            )
            # One by one, so each gets the next id: the repaired order.
            for source in changes.appended:
                self._conn.execute(
                    f"INSERT INTO {messages} (session_id, message_data) VALUES (?, ?)",
                    (session_id, stored(source)),
                )
            self._conn.executemany(
                f"DELETE FROM {messages} WHERE id = ? AND session_id = ?",
                [(row_id, session_id) for row_id in deletions],
            )
            if updates:
                # Sessions that cache the history notice appends and removals, not
                # a row rewritten in place: this tells them.
                note_rewrite(self._conn, messages, session_id)
            bump_sqlite(self._conn, messages, session_id)
            changes.check_read_back(self.name, session_id, self._stored(session_id))
        return True

    def side_facts(self, session_id: str) -> SideFacts:
        with self._errors():
            return sqlite_side_facts(self._conn, self._tables.messages, session_id)

    def _rollback(self) -> None:
        # SQLite ends the transaction itself on some errors (a full disk among them):
        # then there is nothing to roll back, and the original error is what matters.
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

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


def _stored_data(raw: bytes | None, kind: str) -> Any:
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


def _stored_digest(raw: bytes | None, kind: str) -> bytes:
    """``data_digest`` of the row's ``_stored_data``."""
    data = _stored_data(raw, kind)
    if isinstance(data, str) and raw is not None:
        # The str is ``raw`` decoded as UTF-8: digest those bytes, not the str encoded.
        return utf8_text_digest(bytes(raw))
    return data_digest(data)


def _sqlite_row(row_id: int, raw: bytes | None, kind: str) -> Row:
    data = _stored_data(raw, kind)
    if data is None:
        return decode_text(row_id, None, f"message_data is {kind.upper()}, not text")
    # Decoded from the bytes the session reads (TEXT and BLOB alike), kept as stored.
    found = decode_text(row_id, bytes(raw) if raw is not None else None)
    return dataclasses.replace(found, data=data)


def _sqlite_facts(row_id: int, raw: bytes | None, kind: str) -> RowFacts:
    digest = _stored_digest(raw, kind)
    if kind not in ("text", "blob") or raw is None:
        return row_facts(row_id, digest, None, f"message_data is {kind.upper()}, not text")
    # Decoded from the bytes the session reads (TEXT and BLOB alike), as _sqlite_row.
    return row_facts(row_id, digest, bytes(raw))
