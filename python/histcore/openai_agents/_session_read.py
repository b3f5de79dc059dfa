"""The SDK's ``SQLiteSession.get_items``, reading only the rows added since its last read.

Each session object keeps what its last unlimited read decoded (``_History``): the items
of its rows with ``id <= last_id``, their count, and the ``Stamp`` of the SQLite
freshness rule (``sessions/_sqlite_freshness``, histcore's ``SQLiteSession``'s too). No
query while the connection's ``data_version``, ``total_changes`` and schema version are
the ones last read on it; else, in one read transaction, only ``id > last_id`` is
fetched when the rule says the kept rows are intact, and the whole history otherwise.
Reads hand out fresh copies (``_handouts``). Rows decode by ``decode_rows``: orjson
where it gives exactly what ``json.loads`` gives, the SDK's ``json.loads`` otherwise.

Rules: limited reads, an overridden connection, an open transaction, a custom
``row_factory``/``text_factory``, any ``sqlite3.Error`` or a rebound name the SDK looks
up (its watch) leave the read to the SDK. docs/design.md, "The session read".
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Coroutine
from operator import itemgetter
from types import ModuleType
from typing import Any, cast

from histcore.engine.input_rules import StoredHistory
from histcore.openai_agents._handouts import (
    KeptHandout,
    ReadNote,
    can_keep,
    copied,
    current_handout,
    current_note,
    fresh_copy,
    kept_handout,
    noting_reads,
)
from histcore.openai_agents._replacements import JsonModule, intact, named_after
from histcore.openai_agents._row_decode import decode_rows, decode_with
from histcore.openai_agents._watch import Watch
from histcore.sessions import _sqlite_freshness as freshness

# Names other modules import from here (``_handouts`` holds them now).
__all__ = [
    "GetItems",
    "Histories",
    "KeptHandout",
    "ReadNote",
    "Reader",
    "check_rows_wanted",
    "current_handout",
    "current_note",
    "decode_rows",
    "decode_with",
    "fresh_copy",
    "kept_handout",
    "make_get_items",
    "noting_reads",
    "usable",
]

GetItems = Callable[..., Coroutine[Any, Any, list[Any]]]

# Connections whose state a history remembers (the SDK opens one per worker thread).
_STAMPS_KEPT = 8
#: "1" when ``install()`` runs: each read that finds the database changed checks every
#: kept row, not only how many there are and the newest (``freshness.unchanged``).
CHECK_ROWS_VARIABLE = "HISTCORE_CHECK_SESSION_ROWS"
#: Serialises bringing a history's ``stored`` up to date (threads may share a session).
_stored_lock = threading.Lock()


def _texts(rows: list[tuple[Any, ...]]) -> list[tuple[Any]]:
    """The ``(message_data,)`` rows the SDK's query would give for ``freshness.ROW`` rows."""
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

    __slots__ = ("freshness", "items", "key", "last_id", "rows", "stamps", "stored")

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
        #: the decoded items of the session's rows with id <= last_id
        self.items = items
        #: how many rows that is, corrupt ones included
        self.rows = rows
        self.last_id = last_id
        #: what the freshness rule checks those rows against
        self.freshness = freshness.Stamp(schema, generation, file)
        #: id(conn) -> (conn, data_version, total_changes) when it was last brought up
        #: to date on conn; held strongly, so an id is not another connection's
        self.stamps: dict[int, tuple[sqlite3.Connection, int, int]] = {}
        #: rule (e) of ``items[:len(stored)]``, for install(guard=True); made on demand
        self.stored: StoredHistory | None = None

    def add_rows(
        self, rows: list[tuple[Any, ...]], reader: Reader, digest: freshness.Digest | None
    ) -> None:
        """Take ``freshness.ROW`` rows read above ``last_id``, in id order; ``digest``:
        that of the rows kept so far, when they are checked."""
        if digest is not None:
            digest.add(rows)
            self.freshness.digest = digest.value
        if not rows:
            return
        self.items += reader.decode(_texts(rows))
        self.rows += len(rows)
        self.last_id = rows[-1][0]
        self.freshness.newest = rows[-1]

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


def _same_database(
    history: _History, key: tuple[Any, ...], now: freshness.Stamp, conn: Any
) -> bool:
    """Whether ``conn`` reads the database ``history`` was read in, as far as names and
    files tell (the rule checks the file's identity, then the rows)."""
    if history.key != key:
        return False
    if key[2] == "":
        # Two in-memory databases have the same (empty) file name: only a connection
        # the history was read on is known to be its database.
        return id(conn) in history.stamps
    return now.file is not None


def _synced(
    history: _History | None,
    session: Any,
    conn: sqlite3.Connection,
    reader: Reader,
    check: bool,
) -> tuple[_History | None, list[Any] | None]:
    """Inside a read transaction: the history brought up to date, or (None, items)
    when this table cannot have one (its ids may be reused). ``check``: every kept row
    is checked (``freshness.unchanged``)."""
    table, session_id = session.messages_table, session.session_id
    key = (session_id, table, freshness.database_file(conn))
    now = freshness.stamp(conn, table, session_id, freshness.file_identity(key[2]))
    if history is not None and _same_database(history, key, now, conn):
        unchanged, digest = freshness.unchanged(
            conn,
            table,
            session_id,
            history.freshness,
            now,
            history.rows,
            history.last_id,
            check=check,
        )
        if unchanged:
            newer = conn.execute(freshness.newer(table), (session_id, history.last_id))
            history.add_rows(newer.fetchall(), reader, digest)
            return history, None
    if not freshness.ids_never_reused(conn, table):
        return None, reader.read_all(session, conn)
    cursor = conn.execute(
        f"SELECT {freshness.ROW} FROM {table} WHERE session_id = ? ORDER BY id ASC", (session_id,)
    )
    # A chunk at a time: only the (message_data,) rows are held whole, as by the SDK.
    texts: list[tuple[Any]] = []
    digest = freshness.Digest() if check else None
    newest: tuple[Any, ...] | None = None
    while chunk := cursor.fetchmany(freshness.CHUNK):
        texts += _texts(chunk)
        newest = chunk[-1]
        if digest is not None:
            digest.add(chunk)
    last_id = 0 if newest is None else newest[0]
    history = _History(key, reader.decode(texts), len(texts), last_id, 0, 0)
    now.newest = newest
    now.digest = None if digest is None else digest.value
    history.freshness = now
    return history, None


class Histories:
    """The history of each session object read since install (dropped with it)."""

    def __init__(self, check: bool) -> None:
        self._by_session: weakref.WeakKeyDictionary[Any, _History] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()
        #: whether a read checks every kept row (``freshness.unchanged``)
        self.check = check

    can_keep = staticmethod(can_keep)

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
            or conn.execute("PRAGMA schema_version").fetchone()[0] != history.freshness.schema
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
            if note is not None:
                note.note(history.items, history)
            return history.items
        items = copied(history.items)
        if items is None:
            # Not copyable: these very objects go out, and are no longer kept.
            self.forget(session)
            return history.items
        if note is not None:
            note.note(items, history)
        return items


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
