"""The SDK's ``AsyncSQLiteSession.get_items``, through ``_session_read``'s kept histories.

The unlimited read runs ``_session_read``'s check and fetch (the SQLite freshness rule
of ``sessions/_sqlite_freshness``, the same kept items and hand-out rules) as one
function queued on the aiosqlite connection's own worker thread
(``Connection._execute``), on its sqlite3 connection (``Connection._conn``): the worker
runs queued calls one at a time, and sqlite3's same-thread check (the SDK leaves it on)
sends the read to the SDK were it run anywhere else. Both private names are checked by
identity on each call. Rows decode as the SDK's loop does: only ``json.JSONDecodeError``
is skipped. Limited reads, an overridden connection method, an open transaction, a
custom ``row_factory`` and any error leave the read to the SDK.
"""

from __future__ import annotations

import sqlite3
from types import ModuleType
from typing import Any

from histcore.openai_agents._handouts import current_handout, current_note
from histcore.openai_agents._replacements import intact, named_after
from histcore.openai_agents._row_decode import decode_with
from histcore.openai_agents._session_read import (
    GetItems,
    Histories,
    Reader,
    check_rows_wanted,
    usable,
)
from histcore.openai_agents._watch import Watch

__all__ = ["make_get_items", "unfit"]


def unfit(module: ModuleType) -> str | None:
    """None when the SDK module's aiosqlite has what this read relies on, else why not."""
    connection = getattr(getattr(module, "aiosqlite", None), "Connection", None)
    if not isinstance(connection, type):
        return f"{module.__name__}.aiosqlite.Connection is not a class"
    if not callable(vars(connection).get("_execute")):
        return "aiosqlite.Connection._execute is missing"
    if not isinstance(vars(connection).get("_conn"), property):
        return "aiosqlite.Connection._conn is not a property"
    return None


def _query(session: Any) -> str:
    # The SDK's query text, whitespace included (a trace callback sees it).
    return f"""
                    SELECT message_data FROM {session.messages_table}
                    WHERE session_id = ?
                    ORDER BY id ASC
                """


def make_get_items(original: GetItems, module: ModuleType, watch: Watch | None = None) -> GetItems:
    unchanged = intact(watch)
    histories = Histories(check_rows_wanted())
    sdk_class = module.AsyncSQLiteSession
    plumbing = (sdk_class._get_connection, sdk_class._locked_connection)
    connection = module.aiosqlite.Connection
    private = (vars(connection)["_execute"], vars(connection)["_conn"])

    def worker_reachable(aio: Any) -> bool:
        kind = type(aio)
        return (
            kind is connection and (vars(kind).get("_execute"), vars(kind).get("_conn")) == private
        )

    def reader() -> Reader:
        json_module = module.json
        skipped = (json_module.JSONDecodeError,)

        def read_all(session: Any, conn: sqlite3.Connection) -> list[Any]:
            rows = conn.execute(_query(session), (session.session_id,)).fetchall()
            return decode_with(rows, json_module.loads, skipped)

        return Reader(lambda rows: decode_with(rows, json_module.loads, skipped), read_all)

    @named_after(original)
    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        kind = type(self)
        if (
            limit is not None
            or not unchanged()
            or module.resolve_session_limit(limit, self.session_settings) is not None
            or (kind._get_connection, kind._locked_connection) != plumbing
            or not histories.can_keep(self)
        ):
            if histories.can_keep(self):
                histories.forget(self)
            return await original(self, limit)
        handout = current_handout(self, kind is sdk_class)
        note = current_note(self)
        rows = reader()
        try:
            async with self._locked_connection() as aio:
                if worker_reachable(aio):

                    def read() -> list[Any] | None:
                        conn = aio._conn
                        if not usable(conn):
                            return None
                        return histories.read(self, conn, rows, handout, note)

                    try:
                        items: list[Any] | None = await aio._execute(read)
                    except (sqlite3.Error, ValueError):
                        # The SDK's read below raises what the SDK would, if anything.
                        items = None
                    if items is not None:
                        return items
        except BaseException:
            histories.forget(self)
            raise
        histories.forget(self)
        return await original(self, limit)

    return get_items
