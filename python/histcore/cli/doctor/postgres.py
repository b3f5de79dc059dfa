"""A PostgreSQL session store (``--dsn``) as the doctor reads and repairs it: the
store's reader (``histcore.sessions._store_readers.postgres``: histcore's
``PostgresSession`` layout, or the OpenAI Agents SDK's ``SQLAlchemySession`` one), with
the doctor's backup and repairs. Needs psycopg (the ``postgres`` extra).

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
    RowChanges,
    RowFacts,
    Source,
    Synthesized,
    Tables,
    backup_stamp,
    stored_pairs,
    text_facts,
)
from histcore.cli.doctor.side import SideFacts
from histcore.sessions._store_readers.postgres import PostgresReader

__all__ = ["PostgresStore"]


class PostgresStore(PostgresReader):
    """A PostgreSQL session store; read-only transactions unless ``writable``
    (``PostgresReader``), and then no table may refer to the messages."""

    def __init__(
        self, dsn: str, *, writable: bool, busy_timeout: float, tables: Tables | None = None
    ) -> None:
        super().__init__(dsn, writable=writable, busy_timeout=busy_timeout, tables=tables)
        if not writable:
            return
        with self._closed_on_error():
            referring = self._referring_tables()
            if referring:
                raise DoctorError(
                    f"{self.name}: table {referring[0]} refers to the messages table, and "
                    "the doctor cannot keep its rows consistent with a repair; nothing was "
                    "changed"
                )

    def _referring_tables(self) -> list[str]:
        """Tables (other than the store's) whose foreign keys refer to the messages."""
        found = self._execute(
            "SELECT DISTINCT conrelid::regclass::text FROM pg_constraint "
            "WHERE contype = 'f' AND confrelid = to_regclass(%s) ORDER BY 1",
            (self._tables.messages,),
        )
        return [str(name) for (name,) in found if str(name) != self._tables.messages]

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
