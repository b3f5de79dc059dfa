"""The SQLite session store as the doctor reads and repairs it (the ``Store`` of
``read.py``): the store's reader (``histcore.sessions._store_readers.sqlite``), with the
doctor's backup, its repairs' transactions and the repairs themselves, linked tables
(``linked.py``) and side tables (``side.py``) included."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from histcore.cli.doctor.linked import repair_linked
from histcore.cli.doctor.read import (
    DoctorError,
    RowChanges,
    RowFacts,
    Source,
    backup_stamp,
    data_digest,
    row_facts,
    utf8_text_digest,
)
from histcore.cli.doctor.side import SideFacts, bump_sqlite, sqlite_side_facts
from histcore.sessions._sqlite_schema import note_rewrite
from histcore.sessions._store_readers.sqlite import SQLiteReader, sqlite_failure, stored_data

__all__ = ["SQLiteStore"]

# The longest pause after a repair's transaction (see SQLiteStore.transaction).
_MAX_PAUSE = 1.0
# Row ids a statement names at most (SQLite before 3.32 takes 999 parameters).
_IDS_PER_STATEMENT = 500


class SQLiteStore(SQLiteReader):
    """A SQLite session store, opened read-only unless ``writable`` (``SQLiteReader``);
    ``transaction()`` opens and ends the repairs' own transactions."""

    def read_facts(self, session_id: str) -> list[RowFacts]:
        # A chunk's data and decoded items go once its facts are made.
        return self._each_row(session_id, _sqlite_facts)

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
                (int(row_id), stored_data(raw, str(kind)))
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
                sqlite_failure(self.name, exc)
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
            repair_linked(self._linked, self._conn, session_id, linked, deletions)
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


def _stored_digest(raw: bytes | None, kind: str) -> bytes:
    """``data_digest`` of the row's ``stored_data``."""
    data = stored_data(raw, kind)
    if isinstance(data, str) and raw is not None:
        # The str is ``raw`` decoded as UTF-8: digest those bytes, not the str encoded.
        return utf8_text_digest(bytes(raw))
    return data_digest(data)


def _sqlite_facts(row_id: int, raw: bytes | None, kind: str) -> RowFacts:
    digest = _stored_digest(raw, kind)
    if kind not in ("text", "blob") or raw is None:
        return row_facts(row_id, digest, None, f"message_data is {kind.upper()}, not text")
    # Decoded from the bytes the session reads (TEXT and BLOB alike), as the reader's
    # read_rows decodes them.
    return row_facts(row_id, digest, bytes(raw))
