"""A PostgreSQL session store (``--dsn``): histcore's ``PostgresSession`` layout, or
the OpenAI Agents SDK's ``SQLAlchemySession`` one.

histcore's: ``agent_sessions(session_id, ..., generation)`` and ``agent_messages(id,
session_id, message_data JSONB, message_text TEXT, ...)``; ``message_text`` is the
stored item, as the session reads it. The SDK's: ``agent_sessions(session_id, ...)`` and
``agent_messages(id, session_id, message_data TEXT, created_at)``, read in
``created_at, id`` order as the SDK reads it. Needs psycopg (the ``postgres`` extra).

A repair runs in one transaction per session that first locks the session's
``agent_sessions`` row, as every writer of the session does, so writers of that
session wait for it and no other. It copies the stored text (in histcore's layout
``message_text`` and its ``jsonb`` copy) from the row whose content a row takes, and in
histcore's layout changes the session's ``generation`` so sessions that cache the
history read it again (the SDK's session caches nothing). The backup is a table
``<messages>_bak_<time>`` in the same schema holding every row of the sessions to
repair, written before the first repair.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from histcore.cli.doctor.postgres_side import bump_postgres, postgres_side_facts
from histcore.cli.doctor.read import (
    DoctorError,
    Row,
    RowChanges,
    RowFacts,
    Source,
    StoreLocked,
    Synthesized,
    Tables,
    backup_stamp,
    decode_text,
    stored_pairs,
    text_facts,
)
from histcore.cli.doctor.side import SideFacts

__all__ = ["CONNECT_TIMEOUT", "PostgresStore"]

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


class PostgresStore:
    """A PostgreSQL session store; read-only transactions unless ``writable``."""

    def __init__(
        self, dsn: str, *, writable: bool, busy_timeout: float, tables: Tables | None = None
    ) -> None:
        try:
            import psycopg

            from histcore.sessions.postgres import describe_dsn
        except ImportError as exc:
            raise DoctorError(f"--dsn needs the postgres extra ({exc})") from exc
        self._psycopg = psycopg
        self.name = describe_dsn(dsn)
        self._tables = tables if tables is not None else Tables()
        try:
            self._conn = psycopg.connect(dsn, autocommit=True, **_timeout_unless_given(dsn))
        except psycopg.Error as exc:
            raise DoctorError(f"{self.name}: cannot connect to PostgreSQL: {exc}") from exc
        try:
            with self._errors():
                milliseconds = max(1, round(busy_timeout * 1000))
                self._conn.execute(f"SET lock_timeout = {milliseconds}")
                if not writable:
                    self._conn.execute("SET default_transaction_read_only = on")
                problems = self._layout_problems()
                referring = self._referring_tables() if writable and not problems else []
        except BaseException:
            self._conn.close()
            raise
        if problems:
            self._conn.close()
            raise DoctorError(f"{self.name}: not a session store: {'; '.join(problems)}")
        if referring:
            self._conn.close()
            raise DoctorError(
                f"{self.name}: table {referring[0]} refers to the messages table, and the "
                "doctor cannot keep its rows consistent with a repair; nothing was changed"
            )

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
            raise DoctorError(f"{self.name}: {exc}") from exc

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

    def _referring_tables(self) -> list[str]:
        """Tables (other than the store's) whose foreign keys refer to the messages."""
        found = self._execute(
            "SELECT DISTINCT conrelid::regclass::text FROM pg_constraint "
            "WHERE contype = 'f' AND confrelid = to_regclass(%s) ORDER BY 1",
            (self._tables.messages,),
        )
        return [str(name) for (name,) in found if str(name) != self._tables.messages]

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
        session is never in memory at once. Read to its end (``StoredForm.matches``
        reads it all), so its transaction always ends with it."""
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

    def _stored(self, session_id: str) -> Iterator[tuple[int, bytes]]:
        return stored_pairs(self._stored_rows(session_id))

    def read_facts(self, session_id: str) -> list[RowFacts]:
        with self._errors():
            return [
                text_facts(int(row_id), text, f"{self._text} is NULL")
                for row_id, text in self._stored_rows(session_id)
            ]

    def write_backup(self, session_ids: Sequence[str]) -> str:
        """Every row of ``session_ids``, copied to a new table; its name."""
        messages = self._tables.messages
        base = f"{messages[:40]}_bak_{backup_stamp()}".lower()
        with self._errors():
            target, suffix = base, 1
            while self._execute("SELECT to_regclass(%s)", (target,))[0][0] is not None:
                suffix += 1
                target = f"{base}_{suffix}"
            with self._conn.transaction():
                self._execute(f"CREATE TABLE {target} AS SELECT * FROM {messages} WITH NO DATA")
                self._execute(
                    f"INSERT INTO {target} SELECT * FROM {messages} "
                    "WHERE session_id = ANY(%s) ORDER BY id",
                    (list(session_ids),),
                )
        return target

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._errors(), self._conn.transaction():
            yield

    def repair(self, session_id: str, changes: RowChanges) -> bool:
        messages, sessions = self._tables.messages, self._tables.sessions
        with self._errors():
            # The lock every writer of the session takes first: held to the commit.
            self._execute(
                f"SELECT 1 FROM {sessions} WHERE session_id = %s FOR UPDATE", (session_id,)
            )
            if not changes.expected.matches(self._stored(session_id)):
                return False
            # Appended rows first, while their sources still hold the data planned on.
            for source in changes.appended:
                self._append(session_id, source)
            copies = [(row, source) for row, source in changes.updates if isinstance(source, int)]
            if copies:
                # One statement: every source is read as it was before any row changed.
                copied = ", ".join(f"{column} = src.{column}" for column in self._stored_columns)
                self._execute(
                    f"UPDATE {messages} AS dst SET {copied} "
                    "FROM unnest(%s::bigint[], %s::bigint[]) AS map(dst_id, src_id) "
                    f"JOIN {messages} AS src ON src.id = map.src_id "
                    "WHERE dst.id = map.dst_id AND dst.session_id = %s",
                    ([row for row, _ in copies], [source for _, source in copies], session_id),
                )
            for row_id, source in changes.updates:
                if isinstance(source, Synthesized):
                    self._execute(
                        f"UPDATE {messages} SET {self._text_assignment} "
                        "WHERE id = %s AND session_id = %s",
                        (*self._text_values(source.text), row_id, session_id),
                    )
            self._execute(
                f"DELETE FROM {messages} WHERE session_id = %s AND id = ANY(%s)",
                (session_id, list(changes.deletions)),
            )
            if not self._sdk_layout:
                self._execute(
                    f"UPDATE {sessions} SET generation = txid_current() WHERE session_id = %s",
                    (session_id,),
                )
            bump_postgres(self._execute, sessions, messages, session_id, self._sdk_layout)
            changes.check_read_back(self.name, session_id, self._stored(session_id))
        return True

    @property
    def _stored_columns(self) -> tuple[str, ...]:
        """The columns holding a row's stored item."""
        return ("message_data",) if self._sdk_layout else ("message_text", "message_data")

    @property
    def _text_assignment(self) -> str:
        if self._sdk_layout:
            return "message_data = %s"
        return "message_text = %s, message_data = CASE WHEN %s THEN %s::jsonb END"

    def _text_values(self, text: str) -> tuple[Any, ...]:
        # histcore's layout keeps a jsonb copy where jsonb accepts the text, as its
        # session writes it (``fits_jsonb``; imported here, as psycopg is).
        from histcore.sessions._postgres_statements import fits_jsonb

        return (text,) if self._sdk_layout else (text, fits_jsonb(text), text)

    def _append(self, session_id: str, source: Source) -> None:
        """One row after every row of the session: a new id, and in the SDK's layout a
        ``created_at`` no earlier than the session's newest (as its appends give)."""
        messages = self._tables.messages
        columns = ["session_id", *self._stored_columns]
        params: list[Any]
        if isinstance(source, int):
            values, params = ["%s", *self._stored_columns], [session_id]
        elif self._sdk_layout:
            values, params = ["%s", "%s"], [session_id, *self._text_values(source.text)]
        else:
            values = ["%s", "%s", "CASE WHEN %s THEN %s::jsonb END"]
            params = [session_id, *self._text_values(source.text)]
        if self._ordered_by != "id":
            columns.append("created_at")
            values.append(
                f"greatest(LOCALTIMESTAMP, (SELECT max(created_at) FROM {messages} "
                "WHERE session_id = %s))"
            )
            params.append(session_id)
        insert = f"INSERT INTO {messages} ({', '.join(columns)}) SELECT {', '.join(values)}"
        if isinstance(source, int):
            insert += f" FROM {messages} WHERE id = %s AND session_id = %s"
            params += [source, session_id]
        self._execute(insert, params)

    def side_facts(self, session_id: str) -> SideFacts:
        with self._errors():
            return postgres_side_facts(
                self._execute, self._tables.sessions, self._tables.messages, session_id
            )

    def close(self) -> None:
        self._conn.close()
