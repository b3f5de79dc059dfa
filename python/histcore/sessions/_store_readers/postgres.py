"""A PostgreSQL session store (``--dsn``) as its readers read it: histcore's
``PostgresSession`` layout, or the OpenAI Agents SDK's ``SQLAlchemySession`` one.

histcore's: ``agent_sessions(session_id, ..., generation)`` and ``agent_messages(id,
session_id, message_data JSONB, message_text TEXT, ...)``; ``message_text`` is the
stored item, as the session reads it. The SDK's: ``agent_sessions(session_id, ...)`` and
``agent_messages(id, session_id, message_data TEXT, created_at)``, read in
``created_at, id`` order as the SDK reads it. Needs psycopg (the ``postgres`` extra).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from histcore.sessions._store_readers.model import Row, StoreError, StoreLocked, Tables, decode_text

__all__ = ["CONNECT_TIMEOUT", "PostgresReader"]

#: Seconds to wait for the server to accept the connection (a DSN's own
#: connect_timeout wins).
CONNECT_TIMEOUT = 5

_LOCK_NOT_AVAILABLE = "55P03"
# Rows a read fetches from the server at once.
_CHUNK = 10_000
# Column types of the SDK's SQLAlchemySession tables (SQLAlchemy's Integer and String).
_INTEGERS = ("integer", "bigint")
_TEXTS = ("character varying", "text")


def _timeout_unless_given(dsn: str) -> dict[str, Any]:
    """``connect_timeout=CONNECT_TIMEOUT``, unless the DSN names one of its own."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = "connect_timeout" in conninfo_to_dict(dsn)
    except Exception:  # psycopg reports an unparsable DSN when connecting
        given = False
    return {} if given else {"connect_timeout": CONNECT_TIMEOUT}


class PostgresReader:
    """A PostgreSQL session store; read-only transactions unless ``writable``."""

    def __init__(
        self, dsn: str, *, writable: bool, busy_timeout: float, tables: Tables | None = None
    ) -> None:
        try:
            import psycopg

            from histcore.sessions.postgres import describe_dsn
        except ImportError as exc:
            raise StoreError(f"--dsn needs the postgres extra ({exc})") from exc
        self._psycopg = psycopg
        self.name = describe_dsn(dsn)
        self._tables = tables if tables is not None else Tables()
        try:
            self._conn = psycopg.connect(dsn, autocommit=True, **_timeout_unless_given(dsn))
        except psycopg.Error as exc:
            raise StoreError(f"{self.name}: cannot connect to PostgreSQL: {exc}") from exc
        with self._closed_on_error():
            milliseconds = max(1, round(busy_timeout * 1000))
            self._conn.execute(f"SET lock_timeout = {milliseconds}")
            if not writable:
                self._conn.execute("SET default_transaction_read_only = on")
            problems = self._layout_problems()
            if problems:
                raise StoreError(f"{self.name}: not a session store: {'; '.join(problems)}")

    @contextmanager
    def _closed_on_error(self) -> Iterator[None]:
        """``_errors``, and the connection closed when anything fails (while opening)."""
        try:
            with self._errors():
                yield
        except BaseException:
            self._conn.close()
            raise

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
                raise StoreLocked(
                    f"{self.name}: locked by another process ({exc}); try again when it "
                    "is done (--busy-timeout waits longer)"
                ) from exc
            raise StoreError(f"{self.name}: {exc}") from exc

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []

    def _columns(self, table: str) -> dict[str, str]:
        return {
            str(name): str(kind)
            for name, kind in self._execute(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
                (table,),
            )
        }

    @property
    def _text(self) -> str:
        """The column holding the stored JSON text."""
        return "message_data" if self._sdk_layout else "message_text"

    def _layout_problems(self) -> list[str]:
        """What keeps the tables from being a session store of either layout (and the
        layout found, in ``_sdk_layout``)."""
        messages = self._columns(self._tables.messages)
        self._sdk_layout = bool(messages) and "message_text" not in messages
        if self._sdk_layout:
            # The OpenAI Agents SDK's SQLAlchemySession: message_data is the JSON text.
            wanted = {"id": _INTEGERS, "session_id": _TEXTS, "message_data": ("text",)}
            sessions_wanted: dict[str, tuple[str, ...]] = {"session_id": _TEXTS}
        else:
            wanted = {
                "id": ("bigint",),
                "session_id": ("text",),
                "message_data": ("jsonb",),
                "message_text": ("text",),
            }
            sessions_wanted = {"session_id": ("text",), "generation": ("bigint",)}
        # The order the SDK's session reads in (histcore's is the ids').
        sdk_order = self._sdk_layout and messages.get("created_at", "").startswith("timestamp")
        self._ordered_by = "created_at, id" if sdk_order else "id"
        problems = []
        for table, have, need in (
            (self._tables.sessions, self._columns(self._tables.sessions), sessions_wanted),
            (self._tables.messages, messages, wanted),
        ):
            if not have:
                problems.append(f"it has no {table} table")
                continue
            wrong = [
                f"{name} {kinds[0]}" for name, kinds in need.items() if have.get(name) not in kinds
            ]
            if wrong:
                problems.append(f"table {table} lacks column(s) {', '.join(wrong)}")
        return problems

    def session_ids(self) -> list[str]:
        messages, sessions = self._tables.messages, self._tables.sessions
        with self._errors():
            found = self._execute(
                f"SELECT session_id FROM {messages} UNION SELECT session_id FROM {sessions}"
            )
        return sorted(str(session_id) for (session_id,) in found if session_id is not None)

    def rows_without_session(self) -> dict[str, list[int]]:
        with self._errors():
            found = self._execute(
                f"SELECT id FROM {self._tables.messages} WHERE session_id IS NULL ORDER BY id"
            )
        return {"null": [int(row_id) for (row_id,) in found]} if found else {}

    def rows_without_structure(self, session_id: str) -> list[int]:
        return []  # no PostgreSQL layout has a message_structure table

    def row_count(self) -> int:
        with self._errors():
            found = self._execute(f"SELECT count(*) FROM {self._tables.messages}")
        return int(found[0][0])

    def read_rows(self, session_id: str) -> list[Row]:
        with self._errors():
            return [
                decode_text(int(row_id), text, f"{self._text} is NULL")
                for row_id, text in self._stored_rows(session_id)
            ]

    def _stored_rows(self, session_id: str) -> Iterator[tuple[Any, Any]]:
        """The session's ``(id, stored text)`` rows in order: one statement (one
        snapshot) read _CHUNK rows at a time through a server-side cursor, so the whole
        session is never in memory at once. Read to its end (a repair's comparison reads
        it all), so its transaction always ends with it."""
        query = (
            f"SELECT id, {self._text} FROM {self._tables.messages} "
            f"WHERE session_id = %s ORDER BY {self._ordered_by}"
        )
        with self._conn.transaction(), self._conn.cursor(name="histcore_doctor_rows") as cursor:
            cursor.execute(query, (session_id,))
            while chunk := cursor.fetchmany(_CHUNK):
                yield from chunk

    def read_data(self, session_id: str) -> list[tuple[int, Any]]:
        with self._errors():
            return [(int(row_id), text) for row_id, text in self._stored_rows(session_id)]

    def close(self) -> None:
        self._conn.close()
