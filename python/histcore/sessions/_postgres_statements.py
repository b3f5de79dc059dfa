"""The SQL of ``PostgresSession``: ``Statements`` for histcore's tables, ``SdkStatements``
for the OpenAI Agents SDK's ``SQLAlchemySession`` ones (``_postgres_schema``), and
``fits_jsonb``. Table names are checked identifiers (``sql_store.check_table_name``).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from histcore.sessions._postgres_freshness import ROW_HASH
from histcore.sessions._postgres_schema import histcore_schema, sdk_columns, sdk_schema

__all__ = ["SdkStatements", "Statements", "fits_jsonb"]


def fits_jsonb(text: str) -> bool:
    """Whether PostgreSQL's jsonb accepts this JSON text: the codec may write what JSON
    allows or Python writes but jsonb refuses (``\\u0000``, lone surrogate escapes,
    bare NaN/Infinity tokens)."""
    if "\\u" not in text and "NaN" not in text and "Infinity" not in text:
        return True  # the usual case, decided by three substring scans
    if "\\u0000" in text:
        return False
    # orjson refuses bare NaN/Infinity tokens and lone surrogates, just as jsonb does;
    # a string merely holding "NaN" or an escaped control character passes.
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


# The archive tables of ``keep_replaced``, alike in both layouts: each column's type as
# ``format_type`` names it (what ``ensure_tables`` checks), every column NOT NULL.
_ARCHIVE_COLUMNS = {
    "session_id": "text",
    "id": "bigint",
    "message_text": "text",
    "removed_revision": "bigint",
}
_WRITES_COLUMNS = {
    "session_id": "text",
    "first_id": "bigint",
    "last_id": "bigint",
    "revision": "bigint",
}


def _not_null_table(name: str, columns: Mapping[str, str], key: str | None = None) -> str:
    """The CREATE statement of table ``name`` with ``columns`` (name -> type), all NOT
    NULL; with ``key``, its primary key's columns."""
    parts = [f"{column} {kind.upper()} NOT NULL" for column, kind in columns.items()]
    if key is not None:
        parts.append(f"PRIMARY KEY ({key})")
    return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(parts)})"


class _BothLayouts:
    """The statements of both layouts alike: a session's removal, its op ids, and the
    archive of ``keep_replaced`` (``_add_archive``)."""

    # Set by the layout's own statements.
    schema: list[str]
    indexes: list[str]
    required_columns: dict[str, dict[str, str | tuple[str, ...]]]
    # Set by ``_add_archive``.
    archive_all: str
    archive_rows: str
    archived: str
    writes: str

    def _add_shared(self, sessions: str, messages: str) -> None:
        """The statements written alike for both layouts."""
        revisions, ops = f"{sessions}_revisions", f"{sessions}_op_ids"
        self.delete_session = f"DELETE FROM {sessions} WHERE session_id = %s"
        self.delete_messages = f"DELETE FROM {messages} WHERE session_id = %s"
        self.op_applied = f"SELECT 1 FROM {ops} WHERE session_id = %s AND op_id = %s"
        # All but the latest ``op_id_window`` op ids (one at most, in the steady state).
        self.forget_old_ops = (
            f"DELETE FROM {ops} WHERE session_id = %s "
            f"AND seq <= (SELECT ops FROM {revisions} WHERE session_id = %s) - %s"
        )

    def _add_archive(self, sessions: str, messages: str, keep: bool, text: str) -> tuple[str, str]:
        """The archive of ``keep_replaced`` (``postgres`` module docstring): its tables
        join the schema only with ``keep``, so other sessions never need them (nor
        CREATE rights); ``text`` is the messages' column of the stored text. Returns the
        SQL of the revision the current transaction commits, and the writes table."""
        archive, writes = f"{sessions}_archive", f"{sessions}_writes"
        if keep:
            self.schema = [
                *self.schema,
                _not_null_table(archive, _ARCHIVE_COLUMNS),
                f"CREATE INDEX IF NOT EXISTS {archive}_session ON {archive} (session_id, id)",
                _not_null_table(writes, _WRITES_COLUMNS, key="session_id, first_id"),
            ]
            self.indexes.append(f"{archive}_session")
            self.required_columns[archive] = dict(_ARCHIVE_COLUMNS)
            self.required_columns[writes] = dict(_WRITES_COLUMNS)
        # The revision the current transaction commits (one more than the stored one).
        following = (
            f"coalesce((SELECT revision FROM {sessions}_revisions WHERE session_id = %s), 0) + 1"
        )
        copy = (
            f"INSERT INTO {archive} (session_id, id, message_text, removed_revision) "
            f"SELECT session_id, id, {text}, {following} FROM {messages} "
            "WHERE session_id = %s"
        )
        self.archive_all = copy
        self.archive_rows = copy + " AND id = ANY(%s)"
        self.archived = (
            f"SELECT id, message_text, removed_revision FROM {archive} "
            "WHERE session_id = %s ORDER BY id"
        )
        self.writes = (
            f"SELECT first_id, last_id, revision FROM {writes} "
            "WHERE session_id = %s ORDER BY first_id"
        )
        return following, writes


class Statements(_BothLayouts):
    """The SQL of one pair of tables of histcore's layout."""

    def __init__(self, sessions: str, messages: str, keep_replaced: bool = False) -> None:
        self._add_shared(sessions, messages)
        self.schema = histcore_schema(sessions, messages)
        self.indexes = [f"idx_{messages}_session_id"]
        self.required_columns: dict[str, dict[str, str | tuple[str, ...]]] = {
            sessions: {"session_id": "text", "generation": "bigint"},
            messages: {
                "id": "bigint",
                "session_id": "text",
                "message_data": "jsonb",
                "message_text": "text",
            },
        }
        # Taking the session row's lock (creating the row if needed) is what makes
        # writers of one session take turns; see the module docstring.
        self.lock_or_create = (
            f"INSERT INTO {sessions} (session_id) VALUES (%s) "
            "ON CONFLICT (session_id) DO UPDATE SET updated_at = now()"
        )
        self.lock_existing = f"SELECT generation FROM {sessions} WHERE session_id = %s FOR UPDATE"
        # The arrays go in binary: as a text-format array literal every quote of every
        # JSON text would need escaping, which costs more than the insert itself.
        self.append = (
            f"INSERT INTO {messages} (session_id, message_data, message_text) "
            "SELECT %s, CASE WHEN item.fits THEN item.text::jsonb END, item.text "
            "FROM unnest(%b::text[], %b::boolean[]) WITH ORDINALITY "
            "AS item(text, fits, position) ORDER BY item.position"
        )
        self.newest_below = (
            f"SELECT id, message_text FROM {messages} WHERE session_id = %s AND id < %s "
            "ORDER BY id DESC LIMIT 1"
        )
        self.delete_row = f"DELETE FROM {messages} WHERE id = %s"
        self.bump = (
            f"UPDATE {sessions} SET generation = txid_current(), updated_at = now() "
            "WHERE session_id = %s RETURNING generation"
        )
        # One statement, so the generation and the rows come from one snapshot (the
        # generation is repeated on every row); when no row matches, ``generation``
        # alone is read afterwards (see ``_fetch``).
        self.fetch = (
            f"SELECT (SELECT generation FROM {sessions} WHERE session_id = %s), "
            f"id, message_text FROM {messages} "
            "WHERE session_id = %s AND id > %s AND id <= %s ORDER BY id DESC LIMIT %s"
        )
        self.generation = f"SELECT generation FROM {sessions} WHERE session_id = %s"
        # Revisions and op ids (see the module docstring).
        revisions, ops = f"{sessions}_revisions", f"{sessions}_op_ids"
        self.indexes.append(f"{ops}_seq")
        self.required_columns[revisions] = {
            "session_id": "text",
            "revision": "bigint",
            "last_id": "bigint",
            "ops": "bigint",
        }
        self.required_columns[ops] = {"session_id": "text", "op_id": "text", "seq": "bigint"}
        self.revision_state = (
            f"SELECT (SELECT revision FROM {revisions} WHERE session_id = %s), "
            f"(SELECT last_id FROM {revisions} WHERE session_id = %s), "
            f"(SELECT max(id) FROM {messages} WHERE session_id = %s)"
        )
        count = (
            f"INSERT INTO {revisions} AS r (session_id, revision, last_id) "
            f"VALUES (%s, 1, (SELECT max(id) FROM {messages} WHERE session_id = %s)) "
            "ON CONFLICT (session_id) DO UPDATE "
            "SET revision = r.revision + 1, last_id = EXCLUDED.last_id RETURNING revision"
        )
        self.count_revision = count
        self.count_revision_with_op = (
            f"WITH counted AS (INSERT INTO {revisions} AS r (session_id, revision, last_id, ops) "
            f"VALUES (%s, 1, (SELECT max(id) FROM {messages} WHERE session_id = %s), 1) "
            "ON CONFLICT (session_id) DO UPDATE SET revision = r.revision + 1, "
            "last_id = EXCLUDED.last_id, ops = r.ops + 1 RETURNING ops) "
            f"INSERT INTO {ops} (session_id, op_id, seq) SELECT %s, %s, ops FROM counted"
        )
        self.all_rows = f"SELECT id, message_text FROM {messages} WHERE session_id = %s ORDER BY id"
        self.delete_rows = f"DELETE FROM {messages} WHERE id = ANY(%s)"
        self._archive_statements(sessions, messages, keep_replaced)

    def _archive_statements(self, sessions: str, messages: str, keep_replaced: bool) -> None:
        """The archive of ``keep_replaced`` (``_add_archive``), and the append noting
        its ids."""
        following, writes = self._add_archive(sessions, messages, keep_replaced, "message_text")
        self.append_noted = (
            f"WITH added AS ({self.append} RETURNING id) "
            f"INSERT INTO {writes} (session_id, first_id, last_id, revision) "
            f"SELECT %s, min(id), max(id), {following} FROM added HAVING count(*) > 0"
        )


class SdkStatements(_BothLayouts):
    """The SQL of the OpenAI Agents SDK's ``SQLAlchemySession`` tables, written as the
    SDK writes them, with histcore's revision, op-id and archive tables beside them
    (``schema``: made by the first write, never needed to read). Rows are in the SDK's
    order, ``created_at, id``; a statement's parameters are listed by its comment where
    the session id repeats."""

    def __init__(self, sessions: str, messages: str, keep_replaced: bool = False) -> None:
        self._add_shared(sessions, messages)
        self.tables = sdk_schema(sessions, messages)
        self.tables_required = sdk_columns(sessions, messages)
        revisions, ops = f"{sessions}_revisions", f"{sessions}_op_ids"
        self._add_side_tables(revisions, ops)
        # The SDK's writers lock the session row first (creating it when missing), then
        # touch its updated_at; so do these.
        self.lock_or_create = (
            f"INSERT INTO {sessions} (session_id) VALUES (%s) "
            "ON CONFLICT (session_id) DO UPDATE SET updated_at = CURRENT_TIMESTAMP"
        )
        self.lock_existing = f"SELECT 1 FROM {sessions} WHERE session_id = %s FOR UPDATE"
        self.touch = f"UPDATE {sessions} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = %s"
        # An append sorts after every row of the session (the SDK's CURRENT_TIMESTAMP,
        # unless a row is newer), in the batch's order; it returns the freshness stamp
        # of its rows: count, sum of row hashes, newest id. (session, session, texts)
        added = (
            f"INSERT INTO {messages} (session_id, message_data, created_at) "
            f"SELECT %s, item.text, greatest(LOCALTIMESTAMP, (SELECT max(created_at) "
            f"FROM {messages} WHERE session_id = %s)) "
            "FROM unnest(%b::text[]) WITH ORDINALITY AS item(text, position) "
            f"ORDER BY item.position RETURNING id, {ROW_HASH} AS h"
        )
        stamp = "SELECT count(*), coalesce(sum(h), 0), max(id) FROM added"
        self.append = f"WITH added AS ({added}) {stamp}"
        newest = (
            f"SELECT id, message_data FROM {messages} WHERE session_id = %s {{}}"
            "ORDER BY created_at DESC, id DESC LIMIT 1"
        )
        self.newest = newest.format("")
        # (session, id of the row last looked at)
        self.newest_below = newest.format(
            f"AND (created_at, id) < (SELECT created_at, id FROM {messages} WHERE id = %s) "
        )
        self.delete_row = f"DELETE FROM {messages} WHERE id = %s RETURNING {ROW_HASH}"
        # The stamp of the rows deleted: count, sum of row hashes.
        self.delete_rows = (
            f"WITH gone AS (DELETE FROM {messages} WHERE id = ANY(%s) RETURNING {ROW_HASH} AS h) "
            "SELECT count(*), coalesce(sum(h), 0) FROM gone"
        )
        self.all_rows = (
            f"SELECT id, message_data FROM {messages} WHERE session_id = %s ORDER BY created_at, id"
        )
        self.latest = (
            f"SELECT id, message_data FROM {messages} WHERE session_id = %s "
            "ORDER BY created_at DESC, id DESC LIMIT %s"
        )
        self.by_id = f"SELECT id, message_data FROM {messages} WHERE session_id = %s ORDER BY id"
        # The stored revision and stamp, and the session's stamp now. (session, session)
        self.revision_state = (
            f"SELECT r.revision, r.rows, r.digest, cur.n, cur.digest FROM (SELECT count(*) AS n, "
            f"coalesce(sum({ROW_HASH}), 0) AS digest FROM {messages} WHERE session_id = %s) "
            f"AS cur LEFT JOIN {revisions} AS r ON r.session_id = %s"
        )
        upsert = (
            f"INSERT INTO {revisions} AS r (session_id, revision, rows, digest, ops) "
            "VALUES (%s, 1, %s, %s, {ops}) ON CONFLICT (session_id) DO UPDATE "
            "SET revision = r.revision + 1, {stamp}"
        )
        # One more revision, with the stamp now (session, rows, digest) ...
        self.count_to = (
            upsert.format(ops=0, stamp="rows = EXCLUDED.rows, digest = EXCLUDED.digest")
            + " RETURNING revision"
        )
        # ... or the stamp changed by what this transaction did (session, rows, digest).
        moved = "rows = r.rows + EXCLUDED.rows, digest = r.digest + EXCLUDED.digest"
        self.count_by = upsert.format(ops=0, stamp=moved) + " RETURNING revision"
        # (session, rows, digest, session, op_id)
        self.count_by_with_op = (
            "WITH counted AS ("
            + upsert.format(ops=1, stamp=moved + ", ops = r.ops + 1")
            + f" RETURNING ops) INSERT INTO {ops} (session_id, op_id, seq) "
            "SELECT %s, %s, ops FROM counted"
        )
        following, writes = self._add_archive(sessions, messages, keep_replaced, "message_data")
        # (session, session, texts, session, session)
        self.append_noted = (
            f"WITH added AS ({added}), noted AS (INSERT INTO {writes} "
            "(session_id, first_id, last_id, revision) "
            f"SELECT %s, min(id), max(id), {following} FROM added HAVING count(*) > 0) {stamp}"
        )

    def _add_side_tables(self, revisions: str, ops: str) -> None:
        """The revision and op-id side tables: their statements and required columns."""
        # The revision side table keeps the freshness stamp (rows, digest) of the
        # session's rows after the latest change it counted.
        self.schema = [
            f"""CREATE TABLE IF NOT EXISTS {revisions} (
                session_id TEXT PRIMARY KEY,
                revision BIGINT NOT NULL,
                ops BIGINT NOT NULL DEFAULT 0,
                rows BIGINT NOT NULL,
                digest NUMERIC NOT NULL
            )""",
            f"""CREATE TABLE IF NOT EXISTS {ops} (
                session_id TEXT NOT NULL,
                op_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                PRIMARY KEY (session_id, op_id)
            )""",
            f"CREATE INDEX IF NOT EXISTS {ops}_seq ON {ops} (session_id, seq)",
        ]
        self.indexes = [f"{ops}_seq"]
        self.required_columns: dict[str, dict[str, str | tuple[str, ...]]] = {
            revisions: {
                "session_id": "text",
                "revision": "bigint",
                "ops": "bigint",
                "rows": "bigint",
                "digest": "numeric",
            },
            ops: {"session_id": "text", "op_id": "text", "seq": "bigint"},
        }
