"""The blocking half of ``SQLiteSession``, its reads: one connection to the file and the
history cache (``SQLiteReads``, which ``_sqlite_store.SQLiteStore`` extends by the writes).

Everything here runs in a worker thread, one operation at a time under the store's
lock; ``sqlite.py`` puts it behind the async session API. The tables are the OpenAI
Agents SDK's, made by the same statements (``_sqlite_schema``), so a database written
by either library opens and continues in the other.

Rules: the first operation connects (never the constructor), a database SQLite cannot
write is opened read-only, and a file replaced at the path is opened anew; reads keep
the decoded history (``HistoryCache``) and fetch only ``id > last_id`` unless
``data_version`` changed and the freshness rule (``_sqlite_freshness``) says the kept
rows are not intact; every read hands out copies (``deep_copy_items``, collector
paused). How and why: docs/design.md, "Sessions" ("The SQLite store").
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import quote

from histcore.engine.collector import collector_paused
from histcore.exceptions import SessionClosedError, SessionError
from histcore.sessions import _sqlite_archive as archive
from histcore.sessions import _sqlite_freshness as freshness
from histcore.sessions import _sqlite_schema as schema
from histcore.sessions._sqlite_connect import check_busy_timeout, connect, transaction
from histcore.sessions._transactions import DEFAULT_OP_ID_WINDOW
from histcore.sessions.base import describe_session_id
from histcore.sessions.sql_store import (
    BEFORE_ALL,
    FETCH_CHUNK,
    DecodedRows,
    HistoryCache,
    SkipsCorruptRows,
    check_table_name,
)
from histcore.sessions.transcript import TranscriptEntry, merge

__all__ = ["SQLiteReads", "read_only_error"]


class SQLiteReads(SkipsCorruptRows):
    """One session's connection to a SQLite file, its reads and its history cache
    (whose ``stamp`` is the PRAGMA data_version it was last known to match, and
    ``freshness`` what ``_sqlite_freshness`` checks when that changed)."""

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str],
        sessions_table: str,
        messages_table: str,
        busy_timeout: float,
        cache_history: bool,
        op_id_window: int = DEFAULT_OP_ID_WINDOW,
        keep_replaced: bool = False,
    ) -> None:
        self.session_id = session_id
        self.sessions_table = check_table_name(sessions_table, "sessions_table")
        self.messages_table = check_table_name(messages_table, "messages_table")
        self._lock = threading.Lock()
        self._cache: HistoryCache | None = None
        self._skipped: dict[int, str] = {}
        self._closed = False
        self._path = os.fspath(db_path)
        self._busy_timeout = check_busy_timeout(busy_timeout)
        self._cache_history = cache_history
        self._op_id_window = op_id_window
        self._keep_replaced = keep_replaced
        # Nothing is opened here: the first operation opens the file (``_connected``),
        # in the worker thread it runs in, so that waiting for a locked file never
        # stalls the caller's event loop.
        self._ready = False
        self._read_only = False
        # The connection's file: its name and (device, inode) when opened.
        self._file_name = ""
        self._file: tuple[int, int] | None = None

    # --- opening --------------------------------------------------------------------

    def _connected(self) -> sqlite3.Connection:
        """The connection, opened on first use (under the lock); SessionError when the
        file cannot be opened, and the next operation tries again."""
        self._open()
        if self._ready and self._file_name and self._file_moved():
            # Another file at the path (replaced, or removed and made again): the
            # connection would go on reading and writing the old one.
            self._ready = False
            self._cache = None
            self._skipped.clear()
            self._conn.close()
        if not self._ready:
            try:
                self._connect()
            except sqlite3.Error as exc:
                raise SessionError(
                    f"cannot open SQLite session store {self._path!r}: {exc}"
                ) from exc
            self._ready = True
        return self._conn

    def _file_moved(self) -> bool:
        return freshness.file_identity(self._file_name) != self._file

    def _connect(self) -> None:
        """Open the file for reading and writing, or read-only when it cannot be
        written (a read-only file or directory, a ``file:`` URI with ``mode=ro``)."""
        uri = self._path.startswith("file:")
        try:
            self._set_up(self._path, uri, writable=True)
            return
        except sqlite3.OperationalError as exc:
            if not read_only_error(exc):
                raise
            failure = exc
        for target in self._read_only_targets(uri):
            try:
                self._set_up(target, True, writable=False)
            except sqlite3.OperationalError as exc:
                if not read_only_error(exc):
                    raise
                failure = exc
                continue
            self._read_only = True
            return
        raise failure

    def _read_only_targets(self, uri: bool) -> list[str]:
        """The URIs that open the file read-only, in the order to try them."""
        if uri:
            return [self._path]  # the caller's own URI: SQLite opened it read-only
        location = "file:" + quote(os.path.abspath(self._path))
        targets = [location + "?mode=ro"]
        # A WAL database in a read-only directory cannot be read without the -shm file
        # it cannot create, except as immutable, which is safe when no -wal file holds
        # changes (no writer can then exist either: it would need that directory).
        try:
            wal = os.path.getsize(self._path + "-wal")
        except OSError:
            wal = 0
        if not wal:
            targets.append(location + "?immutable=1")
        return targets

    def _set_up(self, target: str, uri: bool, writable: bool) -> None:
        """Connect to ``target`` and prepare it (the tables; WAL mode when writable)."""
        self._conn = conn = connect(target, self._busy_timeout, uri=uri)
        try:
            # Raw bytes: orjson reads them directly, without building a str per row.
            conn.text_factory = bytes
            self._wal = (
                writable
                and self._path != ":memory:"
                and schema.enable_wal(conn, self._busy_timeout)
            )
            self._autocheckpoint = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            sessions, messages = self.sessions_table, self.messages_table
            if not writable:
                schema.check_read_only_tables(conn, self._path, sessions, messages)
            elif schema.tables_present(conn, sessions, messages):
                schema.check_columns(conn, messages)
            else:
                with self._write():
                    schema.create_tables(conn, sessions, messages)
            self._incremental = self._cache_history and schema.ids_never_reused(conn, messages)
            self._file_name = freshness.database_file(conn)
            self._file = freshness.file_identity(self._file_name)
            self._rows_per_insert = schema.insert_batch_size(conn)
            encoding = conn.execute("PRAGMA encoding").fetchone()[0]
            # Bytes may be cast to TEXT only where TEXT is stored as UTF-8.
            self._bind_bytes = schema.text(encoding).upper() == "UTF-8"
        except BaseException:
            conn.close()
            raise

    # --- transactions and helpers -------------------------------------------------

    def _write(self) -> AbstractContextManager[None]:
        """A write transaction, taken at once so concurrent writers queue, not deadlock."""
        return transaction(self._conn, "BEGIN IMMEDIATE")

    def _snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees one state of the database."""
        return transaction(self._conn, "BEGIN")

    def _data_version(self) -> int:
        version: int = self._conn.execute("PRAGMA data_version").fetchone()[0]
        return version

    def who(self) -> str:
        """The session as messages name it (a long id cut short)."""
        return f"SQLiteSession {describe_session_id(self.session_id)}"

    def _open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"{self.who()} is closed")

    def check_open(self) -> None:
        """Raise SessionClosedError when the store was closed.

        Lock-free, so the event loop never waits here for a running operation; the
        operation itself checks again under the lock.
        """
        self._open()

    def _decode_query(
        self, sql: str, params: tuple[Any, ...], newest_first: bool = False
    ) -> DecodedRows:
        """Run a ``SELECT id, message_data`` query and decode it, oldest row first.

        Corrupt rows are logged, remembered and left out of the items (not of ``rows``
        and the id span).
        """
        result = DecodedRows()
        cursor = self._conn.execute(sql, params)
        # Paused across the fetches too: their row tuples would trigger collections.
        with collector_paused():
            while chunk := cursor.fetchmany(FETCH_CHUNK):
                self._decode_into(result, chunk)
        if newest_first:
            result.reverse()
        return result

    @property
    def skipped_row_ids(self) -> tuple[int, ...]:
        with self._lock:
            return self._skipped_ids()

    # --- reads --------------------------------------------------------------------

    def read(self, limit: int | None) -> list[Any]:
        """The latest ``limit`` items (all when None), oldest first, as new objects."""
        with self._lock:
            self._open()
            if limit == 0:
                return []
            self._connected()
            try:
                cache = self._synced(limit)
            except BaseException:
                self._cache = None
                raise
            return cache.hand_out(limit, kept=self._incremental)

    def _synced(self, need: int | None) -> HistoryCache:
        """The cache brought up to date, holding at least ``need`` items if it can."""
        with self._snapshot():
            version = self._data_version()
            cache = self._cache if self._incremental else None
            if cache is not None:
                self._decode_pending(cache)
                if cache.stamp != version:
                    if self._intact(cache):
                        self._fetch_newer(cache)
                    else:
                        cache = None  # rows we hold were removed or rewritten: start over
            if cache is None:
                cache = self._empty_cache(version)
            cache.stamp = version
            if self._incremental:
                self._cache = cache
            self._extend_back(cache, need)
        return cache

    def _stamp(self) -> freshness.Stamp:
        return freshness.stamp(self._conn, self.messages_table, self.session_id, self._file)

    def _newest(self, last_id: int) -> freshness.Row | None:
        return freshness.newest_row(self._conn, self.messages_table, self.session_id, last_id)

    def _intact(self, cache: HistoryCache) -> bool:
        """Whether the cache's rows are still the table's (``_sqlite_freshness``)."""
        if cache.freshness is None:
            return False
        intact, _ = freshness.unchanged(
            self._conn,
            self.messages_table,
            self.session_id,
            cache.freshness,
            self._stamp(),
            cache.rows,
            cache.last_id,
            cache.floor,
        )
        return intact

    def _fetch_newer(self, cache: HistoryCache) -> None:
        fetched = self._decode_query(
            f"SELECT id, message_data FROM {self.messages_table} "
            "WHERE session_id = ? AND id > ? ORDER BY id",
            (self.session_id, cache.last_id),
        )
        cache.add_newer(fetched)
        if fetched.rows and cache.freshness is not None:
            cache.freshness.newest = self._newest(cache.last_id)

    def _empty_cache(self, version: int) -> HistoryCache:
        """A cache holding nothing yet, positioned at the newest row of the session."""
        if self._cache_history:
            # The table may have been made again since: with or without AUTOINCREMENT.
            self._incremental = schema.ids_never_reused(self._conn, self.messages_table)
            if not self._incremental:
                self._cache = None
        newest = self._newest(freshness.AFTER_ALL)
        now = None
        if self._incremental:
            now = self._stamp()
            now.newest = newest
        if newest is None:
            return HistoryCache(last_id=BEFORE_ALL, floor=None, stamp=version, freshness=now)
        return HistoryCache(last_id=newest[0], floor=newest[0], stamp=version, freshness=now)

    def _decode_pending(self, cache: HistoryCache) -> None:
        """Decode the rows appended through this store (already counted in ``rows``):
        from the texts the cache kept, or read back from the table when it dropped them
        (a large write, or many writes without a read: ``HistoryCache.add_appended``)."""
        if cache.appended_after is None:
            return
        if cache.texts_dropped:
            fetched = self._decode_query(
                f"SELECT id, message_data FROM {self.messages_table} "
                "WHERE session_id = ? AND id > ? AND id <= ? ORDER BY id",
                (self.session_id, cache.appended_after, cache.last_id),
            )
        else:
            pending = list(zip(cache.pending_ids, cache.pending_texts, strict=True))
            fetched = self._decoded(pending)
        cache.appended_decoded(fetched)

    def _extend_back(self, cache: HistoryCache, need: int | None) -> None:
        """Prepend older rows until the cache holds ``need`` items or the session start."""
        table = self.messages_table
        for upto, window in cache.older_windows(need):
            if window is None:
                fetched = self._decode_query(
                    f"SELECT id, message_data FROM {table} "
                    "WHERE session_id = ? AND id <= ? ORDER BY id",
                    (self.session_id, upto),
                )
            else:
                fetched = self._decode_query(
                    f"SELECT id, message_data FROM {table} "
                    "WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT ?",
                    (self.session_id, upto, window),
                    newest_first=True,
                )
            cache.add_older(fetched, window)

    def transcript(self) -> list[TranscriptEntry]:
        """Every item stored, live and archived, in id order (``transcript``)."""
        with self._lock:
            self._open()
            conn, table = self._connected(), self.messages_table
            with self._snapshot():
                live = conn.execute(
                    f"SELECT id, message_data FROM {table} WHERE session_id = ? ORDER BY id",
                    (self.session_id,),
                ).fetchall()
                archived, writes = archive.read(conn, table, self.session_id)
        return merge(live, archived, writes)

    def close(self) -> None:
        """Close the connection (waits for a running operation). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cache = None
            if self._ready:
                self._conn.close()


def read_only_error(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused ``exc``'s statement because the database is read-only."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return (int(code) & 0xFF) == 8  # SQLITE_READONLY, and its extended codes
    return "readonly" in str(exc).lower()
