"""The SDK's ``SQLiteSession.get_items``, reading only the rows added since its last read.

Each session object keeps what its last unlimited read decoded (``_History``): the items
of its rows with ``id <= last_id``, their count, and the state of the database they were
read in. A later read hands out a fresh copy (``plain_json_copy``, collector paused) and
fetches only ``id > last_id``, after checking in one read transaction that nothing below
``last_id`` changed (``PRAGMA data_version``/``total_changes`` first, then the count, the
newest kept row, the rewrite generation, the schema version and the file's inode);
anything else reads the whole history again. Rows are decoded by ``decode_rows``: orjson
where it gives exactly what ``json.loads`` gives, the SDK's ``json.loads`` otherwise.

Rules: limited reads, an overridden connection, an open transaction, a custom
``row_factory``/``text_factory`` or any ``sqlite3.Error`` leave the read to the SDK, and
a rebound name the SDK looks up (its watch) does too. ``kept_handout`` and
``noting_reads`` serve the batch preparation and the guard. Details, and what is not
seen: docs/design.md, "Drop-in accelerator" ("The session read").
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from operator import itemgetter
from types import ModuleType
from typing import Any, TypeVar, cast

import orjson

from histcore.engine import _support as engine_support
from histcore.engine import items as engine_items
from histcore.engine.collector import paused_for
from histcore.engine.input_rules import StoredHistory
from histcore.openai_agents._replacements import JsonModule, intact, named_after
from histcore.openai_agents._watch import Watch
from histcore.sessions._sqlite_schema import ids_never_reused, rewrite_generation

__all__ = [
    "GetItems",
    "Histories",
    "KeptHandout",
    "Reader",
    "check_rows_wanted",
    "current_handout",
    "current_note",
    "decode_rows",
    "decode_with",
    "fresh_copy",
    "kept_handout",
    "make_get_items",
    "usable",
]

GetItems = Callable[..., Coroutine[Any, Any, list[Any]]]

# Connections whose state a history remembers (the SDK opens one per worker thread).
_STAMPS_KEPT = 8
# A row as a history checks it: its id, what the SDK's query fetches, and whether that
# is a BLOB (bytes and an ASCII str hash alike, and json.loads may read them apart).
_ROW = "id, message_data, typeof(message_data) = 'blob'"
# Rows fetched at a time by a whole read; a digest hashes rows in chunks of this many.
_CHUNK = 4096
#: "1" when ``install()`` runs: each read that finds the database changed checks every
#: kept row, not only how many there are and the newest (``_rows_unchanged``).
CHECK_ROWS_VARIABLE = "HISTCORE_CHECK_SESSION_ROWS"
#: Serialises bringing a history's ``stored`` up to date (threads may share a session).
_stored_lock = threading.Lock()


def _decode_each(
    rows: list[Any], loads: Callable[[Any], Any], skipped: tuple[type[BaseException], ...]
) -> list[Any]:
    """The SDK's ``_decode_rows``: each row unpacked and decoded, bad JSON skipped."""
    items: list[Any] = []
    for (message_data,) in rows:
        try:
            items.append(loads(message_data))
        except skipped:
            continue
    return items


def decode_with(
    rows: list[Any], loads: Callable[[Any], Any], skipped: tuple[type[BaseException], ...]
) -> list[Any]:
    """What a loop decoding each ``(text,)`` of ``rows`` with ``loads``, skipping the
    rows whose decoding raises one of ``skipped``, returns (orjson where it is exact)."""
    with paused_for(rows):
        decoded = engine_support.decode_rows(rows, orjson.loads, loads, skipped)
    if decoded is NotImplemented:
        return _decode_each(rows, loads, skipped)
    return cast("list[Any]", decoded)


def decode_rows(rows: list[Any], json_module: Any) -> list[Any]:
    """What the SDK's row loop returns for ``rows`` with ``json_module`` as ``json``."""
    return decode_with(rows, json_module.loads, (json_module.JSONDecodeError, TypeError))


class _Digest:
    """Hashes of a session's ``_ROW`` rows, ``_CHUNK`` at a time from its first row, in id
    order: ``hash`` in C per row and per chunk (tuple hashes chain each item through a
    multiply and a rotation, so a change or an exchange of rows gives another value;
    str and bytes hashes are keyed per process, and a history lives in one).
    ``value`` is the hash of the chunks' hashes; ``tail`` the last chunk's rows."""

    __slots__ = ("chunks", "tail")

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.tail: list[tuple[Any, ...]] = []

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        """Take the next rows (a cursor's ``fetchmany(_CHUNK)``: a whole chunk, or the
        session's last rows)."""
        if not rows:
            return
        if len(self.tail) < _CHUNK and self.chunks:
            # The last chunk was not whole: it takes these rows first.
            rows = self.tail + rows
            self.chunks.pop()
        for start in range(0, len(rows), _CHUNK):
            self.tail = rows[start : start + _CHUNK]
            self.chunks.append(hash(tuple(self.tail)))

    def read(self, cursor: sqlite3.Cursor) -> None:
        """Take every row of ``cursor``."""
        while chunk := cursor.fetchmany(_CHUNK):
            self.add(chunk)

    @property
    def value(self) -> int:
        return hash(tuple(self.chunks))


def _texts(rows: list[tuple[Any, ...]]) -> list[tuple[Any]]:
    """The ``(message_data,)`` rows the SDK's query would give for ``_ROW`` rows."""
    return list(zip(map(itemgetter(1), rows)))


def check_rows_wanted() -> bool:
    """Whether ``CHECK_ROWS_VARIABLE`` asks for every kept row to be checked."""
    value = os.environ.get(CHECK_ROWS_VARIABLE, "")
    if value not in ("", "0", "1"):
        raise ValueError(
            f"{CHECK_ROWS_VARIABLE} must be 1 (check every kept row of a session at each "
            f"read) or 0 (the default), got {value!r}"
        )
    return value == "1"


class Reader:
    """How one store's rows become its ``get_items`` answer: ``decode`` (1-tuples of
    ``message_data`` to the items the SDK's loop keeps) and ``read_all`` (the SDK's own
    unlimited query on a connection, decoded)."""

    __slots__ = ("decode", "read_all")

    def __init__(
        self,
        decode: Callable[[list[Any]], list[Any]],
        read_all: Callable[[Any, sqlite3.Connection], list[Any]],
    ) -> None:
        self.decode = decode
        self.read_all = read_all


def sqlite_reader(json_module: Any) -> Reader:
    """The ``Reader`` of the SDK's ``SQLiteSession`` reading with ``json_module``."""
    return Reader(
        lambda rows: decode_rows(rows, json_module),
        lambda session, conn: _read_all(session, conn, json_module),
    )


def _read_all(session: Any, conn: sqlite3.Connection, json_module: Any) -> list[Any]:
    # The SDK's query text, whitespace included (a trace callback sees it).
    cursor = conn.execute(
        f"""
                        SELECT message_data FROM {session.messages_table}
                        WHERE session_id = ?
                        ORDER BY id ASC
                    """,
        (session.session_id,),
    )
    return decode_rows(cursor.fetchall(), json_module)


def _copy(items: list[Any]) -> list[Any] | None:
    """A fresh copy of decoded items (plain JSON trees, nothing shared), or None."""
    if engine_items.BACKEND != "rust":
        # The pure twin runs Python code while it copies: it copies with the collector on.
        return cast("list[Any] | None", engine_items.plain_json_copy(items, allow_shared=True))
    with paused_for(items):
        return cast("list[Any] | None", engine_items.plain_json_copy(items, allow_shared=True))


def fresh_copy(items: list[Any]) -> list[Any]:
    """What a read would have handed out instead of the kept ``items``."""
    copied = _copy(items)
    return copied if copied is not None else copy.deepcopy(items)


class KeptHandout:
    """A read of ``session`` may hand out its kept items: ``items`` is then that list."""

    __slots__ = ("items", "session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.items: list[Any] | None = None


class ReadNote:
    """What an unlimited read of ``session`` through its history handed out: ``items``
    (the kept list or a fresh copy of it), made from the first ``length`` items of
    ``history``."""

    __slots__ = ("history", "items", "length", "session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.items: list[Any] | None = None
        self.history: _History | None = None
        self.length = 0

    def stored_history(self, items: list[Any]) -> StoredHistory | None:
        """Rule (e) of ``items`` kept with the session's history, when ``items`` is what
        the read handed out (else None)."""
        if self.history is None or self.items is not items:
            return None
        return self.history.stored_history(self.length)


_Noted = TypeVar("_Noted", "KeptHandout", "ReadNote")

_read_note: contextvars.ContextVar[ReadNote | None] = contextvars.ContextVar(
    "histcore_read_note", default=None
)


@contextmanager
def _set_within(var: contextvars.ContextVar[_Noted | None], value: _Noted) -> Iterator[_Noted]:
    """``value`` in ``var`` within the block."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def noting_reads(session: Any) -> AbstractContextManager[ReadNote]:
    """Within the block, what a read of ``session`` through its history hands out is
    noted in the ``ReadNote`` given."""
    return _set_within(_read_note, ReadNote(session))


_handout: contextvars.ContextVar[KeptHandout | None] = contextvars.ContextVar(
    "histcore_kept_handout", default=None
)


def kept_handout(session: Any) -> AbstractContextManager[KeptHandout]:
    """Within the block, an unlimited read of ``session`` may hand out the kept list
    itself (noted in the handout); the caller must copy it before anything mutates it."""
    return _set_within(_handout, KeptHandout(session))


def current_handout(session: Any, exact_class: bool) -> KeptHandout | None:
    """The ``kept_handout`` block a read of ``session`` is in, if it may hand out the
    kept items (``exact_class``: the session is the SDK class's own, not a subclass)."""
    handout = _handout.get()
    return handout if handout is not None and handout.session is session and exact_class else None


def current_note(session: Any) -> ReadNote | None:
    """The ``noting_reads`` block a read of ``session`` is in, if any."""
    note = _read_note.get()
    return note if note is not None and note.session is session else None


def usable(conn: Any) -> bool:
    """Whether reads on ``conn`` may use a history (see the module docstring)."""
    return (
        type(conn) is sqlite3.Connection
        and not conn.in_transaction
        and conn.row_factory is None
        and conn.text_factory is str
    )


class _History:
    """What one session object's last unlimited read decoded, and where."""

    __slots__ = (
        "digest",
        "file",
        "generation",
        "items",
        "key",
        "last_id",
        "newest",
        "rows",
        "schema",
        "stamps",
        "stored",
    )

    def __init__(
        self,
        key: tuple[Any, ...],
        items: list[Any],
        rows: int,
        last_id: int,
        generation: int,
        schema: int,
        file: tuple[int, int] | None = None,
    ) -> None:
        #: (session_id, messages_table, database file name) it was read for
        self.key = key
        #: (device, inode) of that file when it was read (None: in memory, or unknown)
        self.file = file
        #: the decoded items of the session's rows with id <= last_id
        self.items = items
        #: how many rows that is, corrupt ones included
        self.rows = rows
        self.last_id = last_id
        #: ``_Digest.value`` of those rows (None: not taken, the rows are not checked)
        self.digest: int | None = None
        #: the newest of them as a ``_ROW`` (None: there is none)
        self.newest: tuple[Any, ...] | None = None
        self.generation = generation
        self.schema = schema
        #: id(conn) -> (conn, data_version, total_changes) when it was last brought up
        #: to date on conn; held strongly, so an id is not another connection's
        self.stamps: dict[int, tuple[sqlite3.Connection, int, int]] = {}
        #: rule (e) of ``items[:len(stored)]``, for install(guard=True); made on demand
        self.stored: StoredHistory | None = None

    def add_rows(self, rows: list[tuple[Any, ...]], reader: Reader, digest: _Digest | None) -> None:
        """Take ``_ROW`` rows read above ``last_id``, in id order; ``digest``: that of
        the rows kept so far, when they are checked."""
        if digest is not None:
            digest.add(rows)
            self.digest = digest.value
        if not rows:
            return
        self.items += reader.decode(_texts(rows))
        self.rows += len(rows)
        self.last_id = rows[-1][0]
        self.newest = rows[-1]

    def stored_history(self, length: int) -> StoredHistory | None:
        """Rule (e) of ``items[:length]``, reading only the items appended since the last
        call (``items`` only grows while this history is kept); None when the kept facts
        already read past ``length`` (another thread's later read)."""
        with _stored_lock:
            if self.stored is None:
                self.stored = StoredHistory()
            read = len(self.stored)
            if read > length:
                return None
            if read < length:
                self.stored.extend(self.items[read:length])
            return self.stored

    def current_on(self, conn: sqlite3.Connection, version: int, changes: int) -> bool:
        stamp = self.stamps.get(id(conn))
        return (
            stamp is not None and stamp[0] is conn and stamp[1] == version and stamp[2] == changes
        )

    def stamp(self, conn: sqlite3.Connection, version: int, changes: int) -> None:
        self.stamps.pop(id(conn), None)
        self.stamps[id(conn)] = (conn, version, changes)
        while len(self.stamps) > _STAMPS_KEPT:
            del self.stamps[next(iter(self.stamps))]


def _database_file(conn: sqlite3.Connection) -> str:
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file)
    return ""


def _file_identity(name: str) -> tuple[int, int] | None:
    """(device, inode) of the file now at ``name``; None in memory ("") or when it cannot
    be looked at (no history then matches it)."""
    if not name:
        return None
    try:
        status = os.stat(name)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _same_database(
    history: _History, key: tuple[Any, ...], file: tuple[int, int] | None, conn: Any
) -> bool:
    """Whether ``conn`` reads the database ``history`` was read in, as far as names and
    files tell (the rows themselves are checked after)."""
    if history.key != key:
        return False
    if key[2] == "":
        # Two in-memory databases have the same (empty) file name: only a connection
        # the history was read on is known to be its database.
        return id(conn) in history.stamps
    return file is not None and history.file == file


def _rows_unchanged(
    history: _History, conn: sqlite3.Connection, table: str, session_id: str, check: bool
) -> tuple[bool, _Digest | None]:
    """Whether the session's rows with id <= last_id are still the ones kept: as many,
    and, with ``check``, the same (then with their ``_Digest``); else the newest of them
    the same."""
    where = f"FROM {table} WHERE session_id = ? AND id <= ?"
    params = (session_id, history.last_id)
    (count,) = conn.execute(f"SELECT COUNT(*) {where}", params).fetchone()
    if count != history.rows:
        return False, None
    if check:
        digest = _Digest()
        digest.read(conn.execute(f"SELECT {_ROW} {where} ORDER BY id ASC", params))
        return digest.value == history.digest, digest
    newest = conn.execute(f"SELECT {_ROW} {where} ORDER BY id DESC LIMIT 1", params).fetchone()
    return newest == history.newest, None


def _synced(
    history: _History | None,
    session: Any,
    conn: sqlite3.Connection,
    reader: Reader,
    check: bool,
) -> tuple[_History | None, list[Any] | None]:
    """Inside a read transaction: the history brought up to date, or (None, items)
    when this table cannot have one (its ids may be reused). ``check``: every kept row
    is checked (``_rows_unchanged``)."""
    table, session_id = session.messages_table, session.session_id
    key = (session_id, table, _database_file(conn))
    file = _file_identity(key[2])
    schema: int = conn.execute("PRAGMA schema_version").fetchone()[0]
    generation = rewrite_generation(conn, table, session_id)
    if (
        history is not None
        and _same_database(history, key, file, conn)
        and history.schema == schema
        and history.generation == generation
    ):
        unchanged, digest = _rows_unchanged(history, conn, table, session_id, check)
        if unchanged:
            newer = conn.execute(
                f"SELECT {_ROW} FROM {table} WHERE session_id = ? AND id > ? ORDER BY id ASC",
                (session_id, history.last_id),
            ).fetchall()
            history.add_rows(newer, reader, digest)
            return history, None
    if not ids_never_reused(conn, table):
        return None, reader.read_all(session, conn)
    cursor = conn.execute(
        f"SELECT {_ROW} FROM {table} WHERE session_id = ? ORDER BY id ASC", (session_id,)
    )
    # A chunk at a time: only the (message_data,) rows are held whole, as by the SDK.
    texts: list[tuple[Any]] = []
    digest = _Digest() if check else None
    newest: tuple[Any, ...] | None = None
    while chunk := cursor.fetchmany(_CHUNK):
        texts += _texts(chunk)
        newest = chunk[-1]
        if digest is not None:
            digest.add(chunk)
    last_id = 0 if newest is None else newest[0]
    items = reader.decode(texts)
    history = _History(key, items, len(texts), last_id, generation, schema, file)
    history.newest = newest
    history.digest = None if digest is None else digest.value
    return history, None


class Histories:
    """The history of each session object read since install (dropped with it)."""

    def __init__(self, check: bool) -> None:
        self._by_session: weakref.WeakKeyDictionary[Any, _History] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()
        #: whether a read checks every kept row (``_rows_unchanged``)
        self.check = check

    @staticmethod
    def can_keep(session: Any) -> bool:
        """Whether ``session`` can be a key here (hashable, weakly referenced)."""
        try:
            weakref.ref(session)
            hash(session)
        except TypeError:
            return False
        return True

    def get(self, session: Any) -> _History | None:
        with self._guard:
            return self._by_session.get(session)

    def put(self, session: Any, history: _History) -> None:
        with self._guard:
            self._by_session[session] = history

    def forget(self, session: Any) -> None:
        with self._guard:
            self._by_session.pop(session, None)

    def read(
        self,
        session: Any,
        conn: sqlite3.Connection,
        reader: Reader,
        handout: KeptHandout | None = None,
        note: ReadNote | None = None,
    ) -> list[Any]:
        """The unlimited read through the session's history. Under the SDK's lock.
        With ``handout``, the kept list itself goes out (noted there); what goes out is
        noted in ``note``."""
        history = self.get(session)
        version: int = conn.execute("PRAGMA data_version").fetchone()[0]
        changes = conn.total_changes
        if (
            history is None
            or history.key[:2] != (session.session_id, session.messages_table)
            or not history.current_on(conn, version, changes)
            # DDL is not in total_changes: a table dropped on this very connection.
            or conn.execute("PRAGMA schema_version").fetchone()[0] != history.schema
        ):
            conn.execute("BEGIN")
            try:
                # Read first in the transaction: the state every query below sees.
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                history, items = _synced(history, session, conn, reader, self.check)
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            conn.commit()
            if history is None:
                self.forget(session)
                return cast("list[Any]", items)
            history.stamp(conn, version, changes)
            self.put(session, history)
        if handout is not None:
            handout.items = history.items
            _noted(note, history.items, history)
            return history.items
        copied = _copy(history.items)
        if copied is None:
            # Not copyable: these very objects go out, and are no longer kept.
            self.forget(session)
            return history.items
        _noted(note, copied, history)
        return copied


def _noted(note: ReadNote | None, items: list[Any], history: _History) -> None:
    if note is not None:
        note.items, note.history, note.length = items, history, len(history.items)


def make_get_items(original: GetItems, module: ModuleType, watch: Watch | None = None) -> GetItems:
    unchanged = intact(watch)
    histories = Histories(check_rows_wanted())
    # How the SDK hands out connections: a history relies on it (one connection per
    # worker thread on db_path, or the in-memory one). A class that replaced either
    # (a subclass, a test tracing the statements) gets the plain read.
    sdk_class = module.SQLiteSession
    plumbing = (sdk_class._get_connection, sdk_class._locked_connection)

    def sdk_plumbing(session: Any) -> bool:
        kind = type(session)
        return (kind._get_connection, kind._locked_connection) == plumbing

    @named_after(original)
    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        json_module = module.json
        if (
            limit is not None
            or not unchanged()
            or not isinstance(json_module, JsonModule)
            or not json_module.reads_exactly()
            or module.resolve_session_limit(limit, self.session_settings) is not None
        ):
            return await original(self, limit)

        handout = current_handout(self, type(self) is sdk_class)
        note = current_note(self)

        def get_items_sync() -> list[Any]:
            try:
                with self._locked_connection() as conn:
                    if sdk_plumbing(self) and usable(conn) and histories.can_keep(self):
                        try:
                            reader = sqlite_reader(json_module)
                            return histories.read(self, conn, reader, handout, note)
                        except sqlite3.Error:
                            # The SDK's query below raises what the SDK would, if anything.
                            histories.forget(self)
                    elif histories.can_keep(self):
                        histories.forget(self)
                    return _read_all(self, conn, json_module)
            except BaseException:
                if histories.can_keep(self):
                    histories.forget(self)
                raise

        return await asyncio.to_thread(get_items_sync)

    return get_items
