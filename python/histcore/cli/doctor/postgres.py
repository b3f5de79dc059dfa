"""A PostgreSQL session store (``--dsn``): histcore's ``PostgresSession`` layout.

``agent_sessions(session_id, ..., generation)`` and ``agent_messages(id, session_id,
message_data JSONB, message_text TEXT, ...)``; ``message_text`` is the stored item, as
the session reads it. Needs psycopg (the ``postgres`` extra).

A repair runs in one transaction per session that first locks the session's
``agent_sessions`` row, as every writer of the session does, so writers of that
session wait for it and no other. It copies both ``message_text`` and its ``jsonb``
copy from the row whose content a row takes, and changes the session's ``generation``
so sessions that cache the history read it again. The backup is a table
``<messages>_bak_<time>`` in the same schema holding every row of the sessions to
repair, written before the first repair.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from histcore.cli.doctor.read import (
    DoctorError,
    Row,
    StoreLocked,
    Tables,
    backup_stamp,
    decode_text,
    stored_form,
)

__all__ = ["PostgresStore"]

_LOCK_NOT_AVAILABLE = "55P03"


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
            self._conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise DoctorError(f"{self.name}: cannot connect to PostgreSQL: {exc}") from exc
        try:
            with self._errors():
                milliseconds = max(1, round(busy_timeout * 1000))
                self._conn.execute(f"SET lock_timeout = {milliseconds}")
                if not writable:
                    self._conn.execute("SET default_transaction_read_only = on")
                problems = self._layout_problems()
        except BaseException:
            self._conn.close()
            raise
        if problems:
            self._conn.close()
            raise DoctorError(f"{self.name}: not a histcore session store: {'; '.join(problems)}")

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

    def _layout_problems(self) -> list[str]:
        required = {
            self._tables.sessions: {"session_id": "text", "generation": "bigint"},
            self._tables.messages: {
                "id": "bigint",
                "session_id": "text",
                "message_data": "jsonb",
                "message_text": "text",
            },
        }
        problems = []
        for table, wanted in required.items():
            have = dict(
                self._execute(
                    "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
                    (table,),
                )
            )
            if not have:
                problems.append(f"it has no {table} table")
                continue
            wrong = [f"{name} {kind}" for name, kind in wanted.items() if have.get(name) != kind]
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

    def read_rows(self, session_id: str) -> list[Row]:
        with self._errors():
            return self._read(session_id)

    def _stored(self, session_id: str) -> list[tuple[int, Any]]:
        found = self._execute(
            f"SELECT id, message_text FROM {self._tables.messages} "
            "WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        return [(int(row_id), text) for row_id, text in found]

    def _read(self, session_id: str) -> list[Row]:
        return [
            decode_text(row_id, text, text, "message_text is NULL")
            for row_id, text in self._stored(session_id)
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

    def repair(
        self,
        session_id: str,
        expected: Sequence[Row],
        updates: Sequence[tuple[int, int, Any]],
        deletions: Sequence[int],
        predicted: Sequence[Row],
    ) -> bool:
        messages, sessions = self._tables.messages, self._tables.sessions
        with self._errors():
            # The lock every writer of the session takes first: held to the commit.
            self._execute(
                f"SELECT 1 FROM {sessions} WHERE session_id = %s FOR UPDATE", (session_id,)
            )
            if self._stored(session_id) != stored_form(expected):
                return False
            for row_id, source_id, _ in updates:
                self._execute(
                    f"UPDATE {messages} AS dst SET message_text = src.message_text, "
                    f"message_data = src.message_data FROM {messages} AS src "
                    "WHERE dst.id = %s AND dst.session_id = %s AND src.id = %s",
                    (row_id, session_id, source_id),
                )
            self._execute(
                f"DELETE FROM {messages} WHERE session_id = %s AND id = ANY(%s)",
                (session_id, list(deletions)),
            )
            self._execute(
                f"UPDATE {sessions} SET generation = txid_current() WHERE session_id = %s",
                (session_id,),
            )
            if self._stored(session_id) != stored_form(predicted):
                raise DoctorError(
                    f"{self.name}: session {session_id!r} did not read back as its repair "
                    "planned; nothing of this transaction was changed"
                )
        return True

    def close(self) -> None:
        self._conn.close()
