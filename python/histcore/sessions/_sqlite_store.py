"""``SQLiteStore``, the blocking half of ``SQLiteSession``: its writes (append, pop,
clear, ``replace_suffix``, the revision) on the connection and history cache of
``SQLiteReads`` (``_sqlite_reads``), in a worker thread under the store's lock.

A write is one ``BEGIN IMMEDIATE`` transaction, so concurrent writers queue; a batch is
encoded ``ENCODE_CHUNK`` items at a time inside it. Each write counts one more revision
(``_sqlite_revisions``) and, with ``keep_replaced``, archives the rows it removes
(``_sqlite_archive``). When no other connection committed since the history cache was
synced, a write keeps it in step; otherwise the next read checks the table. How and
why: docs/design.md, "Sessions" ("The SQLite store").
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from histcore.exceptions import SessionError
from histcore.sessions import _sqlite_archive as archive
from histcore.sessions import _sqlite_freshness as freshness
from histcore.sessions import _sqlite_revisions as revisions
from histcore.sessions._codec import encoded_chunks
from histcore.sessions._sqlite_insert import Written, insert_rows
from histcore.sessions._sqlite_reads import SQLiteReads
from histcore.sessions._transactions import Replacement
from histcore.sessions.sql_store import HistoryCache, NewestPop

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLiteReads):
    """One session's store: the reads of ``SQLiteReads`` and the writes."""

    def _writable(self, operation: str) -> sqlite3.Connection:
        """The connection, for a write; SessionError when the file was opened read-only."""
        conn = self._connected()
        if self._read_only:
            raise SessionError(
                f"{self.who()}: {operation} failed: the database {self._path!r} is "
                "read-only (it cannot be written, so it was opened read-only)"
            )
        return conn

    def _cache_if_current(self) -> HistoryCache | None:
        """The cache, when no other connection committed since it was synced.

        Called inside a write transaction, so nobody can commit before this one ends.
        """
        cache = self._cache
        if cache is None or cache.stamp != self._data_version():
            return None
        return cache

    def _sequence(self) -> tuple[int] | None:
        """The messages table's AUTOINCREMENT counter (inside a write transaction)."""
        row: tuple[int] | None = self._conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = ?", (self.messages_table,)
        ).fetchone()
        return row

    def _add_session_row(self) -> None:
        """The session's row in the sessions table, made when missing, as the SDK does."""
        self._conn.execute(
            f"INSERT OR IGNORE INTO {self.sessions_table} (session_id) VALUES (?)",
            (self.session_id,),
        )

    def _insert(self, texts: list[bytes]) -> None:
        """Inside a write transaction: append the rows ``texts``, in order."""
        insert_rows(
            self._conn,
            self.messages_table,
            self.session_id,
            texts,
            cast=self._bind_bytes,
            rows_per_insert=self._rows_per_insert,
        )

    def _touch_session(self) -> None:
        """The session row's updated_at, as the SDK's writes set it."""
        self._conn.execute(
            f"UPDATE {self.sessions_table} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?",
            (self.session_id,),
        )

    def append(self, items: list[Any], op_id: str | None = None) -> bool:
        """Encode ``items`` and append them in one transaction: all of them or none.

        The items are encoded ``ENCODE_CHUNK`` at a time, each chunk inserted before the
        next is encoded, so a batch of any size holds the text of one chunk at a time.
        The first chunk (every item of a usual batch) is encoded before anything else;
        a TypeError from a later one rolls the transaction back, and the store is left
        as it was (the history cache included).

        Returns True when the write was large and its WAL checkpoint was left for
        ``checkpoint()``, which the caller should run soon, off its critical path.
        With ``op_id``, nothing is written when the session remembers it, and it is
        remembered in the same transaction otherwise (``_sqlite_revisions``).
        """
        with self._lock:
            self._open()
            if not items:
                return False
            chunks = encoded_chunks(items)
            # Encoded before the transaction starts (an error then takes no lock).
            first_chunk = next(chunks)
            conn = self._writable("add_items")
            table = self.messages_table
            written = Written()
            refused: list[TypeError] = []
            try:
                with self._write():
                    cache = self._cache_if_current()
                    if op_id is not None and revisions.applied(conn, table, self.session_id, op_id):
                        return False  # applied before: a retry stores nothing
                    sequence = self._sequence() if cache is not None else None
                    self._add_session_row()
                    texts: list[bytes] | None = first_chunk
                    del first_chunk
                    while texts is not None:
                        self._insert(texts)
                        written.add(texts, keep=cache is not None)
                        # A large batch would make its commit copy the whole batch again
                        # from the WAL into the database (SQLite's automatic checkpoint).
                        # That copy is maintenance, not durability: leave it to a
                        # checkpoint run afterwards.
                        if self._wal and not written.deferred and written.large():
                            conn.execute("PRAGMA wal_autocheckpoint=0")
                            written.deferred = True
                        texts = None  # not held while the next chunk is encoded
                        try:
                            texts = next(chunks, None)
                        except TypeError as exc:
                            refused.append(exc)
                            raise
                    self._touch_session()
                    last: int = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                    newest = self._newest(last) if cache is not None else None
                    revision = revisions.record(
                        conn,
                        table,
                        self.session_id,
                        changed=True,
                        op_id=op_id,
                        window=self._op_id_window,
                    )
                    if self._keep_replaced:
                        # AUTOINCREMENT under the write lock: the batch's ids are
                        # consecutive.
                        archive.note_write(
                            conn, table, self.session_id, last - written.rows + 1, last, revision
                        )
            except BaseException as exc:
                # An item refused by the encoder was rolled back: the table, hence the
                # cache, is as it was. Anything else may have left the cache behind.
                if not refused or exc is not refused[0]:
                    self._cache = None
                raise
            finally:
                if written.deferred:
                    conn.execute(f"PRAGMA wal_autocheckpoint={self._autocheckpoint}")
            if cache is not None and not self._register_append(
                cache, written.rows, written.kept, sequence, last, newest
            ):
                cache.stamp = -1  # data_version is never negative: re-check next read
            return written.deferred

    @staticmethod
    def _register_append(
        cache: HistoryCache,
        rows: int,
        texts: list[bytes] | None,
        sequence: tuple[int] | None,
        last: int,
        newest: freshness.Row | None,
    ) -> bool:
        """Note rows ``last - rows + 1 ... last`` appended through this store (``newest``:
        the newest row with ``id <= last``, read in the write); False when the sequence
        says they are not those (the next read must then check the table)."""
        # AUTOINCREMENT under the write lock hands out seq+1 ... seq+n.
        first = last - rows + 1
        previous = 0 if sequence is None else sequence[0]
        if previous + rows != last or first <= cache.last_id:
            return False
        cache.add_appended(first, rows, texts)
        if cache.freshness is not None:
            cache.freshness.newest = newest
        return True

    def checkpoint(self) -> None:
        """Copy the WAL into the database without waiting for readers (PASSIVE)."""
        with self._lock:
            if self._closed or not self._ready or self._read_only:
                return
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def pop(self) -> Any | None:
        """Remove and return the newest item; rows on the way that hold none are
        skipped and left where they are (a pop removes only the row it returns)."""
        with self._lock:
            conn, table = self._writable("pop_item"), self.messages_table
            if self._cache is not None:
                self._decode_pending(self._cache)
            pop = NewestPop(self)
            try:
                with self._write():
                    cache = self._cache_if_current()
                    while not pop.over:
                        row = conn.execute(
                            f"SELECT id, message_data FROM {table} WHERE session_id = ? "
                            "AND id < ? ORDER BY id DESC LIMIT 1",
                            (self.session_id, pop.below),
                        ).fetchone()
                        if pop.take(row):
                            if self._keep_replaced:
                                archive.archive(
                                    conn, table, self.session_id, self._next_revision(), pop.removed
                                )
                            conn.execute(f"DELETE FROM {table} WHERE id = ?", (pop.removed[0],))
                    newest = self._newest(cache.last_id) if cache is not None else None
                    revisions.record(conn, table, self.session_id, changed=bool(pop.removed))
            except BaseException:
                self._cache = None
                raise
            if cache is not None:
                if not cache.forget_popped(pop.removed):
                    self._cache = None
                elif cache.freshness is not None:
                    cache.freshness.newest = newest
            return pop.item

    def clear(self) -> None:
        """Remove every row of the session, and its sessions-table row."""
        with self._lock:
            conn = self._writable("clear_session")
            try:
                with self._write():
                    cache = self._cache_if_current()
                    if self._keep_replaced:
                        archive.archive(
                            conn, self.messages_table, self.session_id, self._next_revision()
                        )
                    removed = conn.execute(
                        f"DELETE FROM {self.messages_table} WHERE session_id = ?",
                        (self.session_id,),
                    ).rowcount
                    conn.execute(
                        f"DELETE FROM {self.sessions_table} WHERE session_id = ?",
                        (self.session_id,),
                    )
                    revisions.record(
                        conn, self.messages_table, self.session_id, changed=removed > 0
                    )
            except BaseException:
                self._cache = None
                raise
            self._skipped.clear()
            if cache is None:
                self._cache = None
            else:
                # Ids are never reused, so nothing at or below last_id can reappear.
                kept = cache.freshness
                self._cache = HistoryCache(
                    last_id=cache.last_id,
                    floor=None,
                    stamp=cache.stamp,
                    freshness=None if kept is None else replace(kept, newest=None),
                )

    def revision(self) -> int:
        """The session's revision (``_sqlite_revisions``); a change by another program
        not counted yet is counted now, unless the file was opened read-only."""
        with self._lock:
            self._open()
            conn, table = self._connected(), self.messages_table
            with self._snapshot():
                revision, current = revisions.state(conn, table, self.session_id)
            if current or self._read_only:
                return revision
            with self._write():
                return revisions.record(conn, table, self.session_id, changed=False)

    def replace_suffix(self, replacement: Replacement[bytes]) -> bool:
        """``replacement`` (positions of the items ``read`` returns; its items are the
        rows' texts) in one transaction; rows that hold no item stay where they are."""
        texts, prune_prefix = replacement.items, replacement.prune_prefix
        with self._lock:
            conn, table = self._writable("replace_suffix"), self.messages_table
            if self._cache is not None:
                self._decode_pending(self._cache)
            cache: HistoryCache | None = None
            try:
                with self._write():
                    revision = revisions.record(conn, table, self.session_id, changed=False)
                    if revision != replacement.expected_revision:
                        return False
                    # The positions: from the kept history when it holds the whole
                    # session and nobody else committed since (no decode of every row);
                    # not with ``prune_prefix``, which must not see the kept objects.
                    cache = self._cache_if_current() if prune_prefix is None else None
                    if cache is not None and cache.floor is not None:
                        cache = None
                    doomed = replacement.doomed(
                        cache
                        or self._decode_query(
                            f"SELECT id, message_data FROM {table} WHERE session_id = ? "
                            "ORDER BY id",
                            (self.session_id,),
                        )
                    )
                    if doomed is None or not replacement.changes(doomed):
                        return doomed is not None  # None: fewer items than from_end counts
                    sequence = self._sequence() if cache is not None and texts else None
                    if self._keep_replaced:
                        archive.archive(conn, table, self.session_id, revision + 1, doomed)
                    conn.executemany(
                        f"DELETE FROM {table} WHERE id = ?", [(row,) for row in doomed]
                    )
                    if texts:
                        self._add_session_row()
                        self._insert(texts)
                    self._touch_session()
                    # Before ``record``, whose upsert moves last_insert_rowid.
                    last = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                    newest = None
                    if cache is not None:
                        newest = self._newest(last if texts else cache.last_id)
                    revision = revisions.record(conn, table, self.session_id, changed=True)
                    if self._keep_replaced and texts:
                        archive.note_write(
                            conn, table, self.session_id, last - len(texts) + 1, last, revision
                        )
            except BaseException:
                self._cache = None
                raise
            if cache is None or not cache.forget_replaced(doomed):
                self._cache = None  # rebuilt by the next read
            elif not texts:
                if cache.freshness is not None:
                    cache.freshness.newest = newest
            elif not self._register_append(cache, len(texts), texts, sequence, last, newest):
                self._cache = None  # its newest row is not known: rebuilt by the next read
            return True

    def _next_revision(self) -> int:
        """Inside a write transaction: the revision it commits when it changes the
        history (``revisions.record`` adds one to the stored revision)."""
        return revisions.state(self._conn, self.messages_table, self.session_id)[0] + 1
