"""The PostgreSQL sessions' tables: which layout a database has, and making sure its
tables exist (``ensure_tables``), never altering a table of another layout.

Two layouts: histcore's (``generation`` on the sessions row, ``message_text`` next to a
``jsonb`` copy) and the OpenAI Agents SDK's ``SQLAlchemySession`` one (``message_data``
TEXT ordered by ``created_at, id``), made with the SDK's own statements. ``find_layout``
says which one a pair of tables has; a missing pair gets the layout asked for (histcore's
unless ``layout="sdk"``). Details: docs/design.md ("The PostgreSQL store").
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from histcore.exceptions import SessionError
from histcore.sessions._postgres_pools import Pool

__all__ = [
    "HISTCORE",
    "LAYOUTS",
    "SDK",
    "check_layout",
    "ensure_tables",
    "find_layout",
    "histcore_schema",
    "sdk_schema",
]

#: The layouts (``PostgresSession(layout=...)``): found on the database, or made so.
HISTCORE, SDK = "histcore", "sdk"
LAYOUTS = ("auto", HISTCORE, SDK)

# Key of the advisory lock that serialises schema creation across processes.
_SCHEMA_LOCK = 0x68697374636F7265  # "histcore"

_ensured: weakref.WeakKeyDictionary[Pool, set[tuple[str, ...]]] = weakref.WeakKeyDictionary()


def histcore_schema(sessions: str, messages: str) -> list[str]:
    """histcore's tables, index and revision side tables."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {sessions} (
            session_id TEXT PRIMARY KEY,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            generation BIGINT NOT NULL DEFAULT txid_current()
        )""",
        f"""CREATE TABLE IF NOT EXISTS {messages} (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL
                REFERENCES {sessions} (session_id) ON DELETE CASCADE,
            message_data JSONB,
            message_text TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        f"CREATE INDEX IF NOT EXISTS idx_{messages}_session_id ON {messages} (session_id, id)",
        # Not tied to the sessions row, which clear_session deletes: a revision and the
        # op ids outlive a clear.
        f"""CREATE TABLE IF NOT EXISTS {sessions}_revisions (
            session_id TEXT PRIMARY KEY,
            revision BIGINT NOT NULL,
            last_id BIGINT,
            ops BIGINT NOT NULL DEFAULT 0
        )""",
        f"""CREATE TABLE IF NOT EXISTS {sessions}_op_ids (
            session_id TEXT NOT NULL,
            op_id TEXT NOT NULL,
            seq BIGINT NOT NULL,
            PRIMARY KEY (session_id, op_id)
        )""",
        f"CREATE INDEX IF NOT EXISTS {sessions}_op_ids_seq ON {sessions}_op_ids (session_id, seq)",
    ]


async def _layout_problems(
    conn: psycopg.AsyncConnection[Any],
    required: Mapping[str, Mapping[str, str | tuple[str, ...]]],
    indexes: Sequence[str],
) -> list[str]:
    """What is missing: tables without the named columns of the named types, and
    indexes that do not exist."""
    problems = []
    for table, wanted in required.items():
        cursor = await conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
            (table,),
        )
        have = {str(name): str(kind) for name, kind in await cursor.fetchall()}
        if not have:
            problems.append(f"table {table} does not exist")
            continue
        wrong = [
            f"{name} {kinds if isinstance(kinds, str) else kinds[0]}"
            for name, kinds in wanted.items()
            if have.get(name) not in ((kinds,) if isinstance(kinds, str) else kinds)
        ]
        if wrong:
            problems.append(
                f"table {table} exists but lacks column(s) {', '.join(wrong)}: it is not "
                "a table of histcore's or the OpenAI Agents SDK's sessions; choose other "
                "table names"
            )
    for index in indexes:
        cursor = await conn.execute("SELECT to_regclass(%s)", (index,))
        found = await cursor.fetchone()
        if found is None or found[0] is None:
            problems.append(f"index {index} does not exist")
    return problems


async def ensure_tables(
    pool: Pool,
    statements: Sequence[str],
    required: Mapping[str, Mapping[str, str | tuple[str, ...]]],
    indexes: Sequence[str] = (),
) -> None:
    """Make sure the tables in ``required`` exist with the named columns of the named
    types (and ``indexes`` exist), once per pool: when something is missing, run the
    ``CREATE ... IF NOT EXISTS`` statements and check again. A table of another
    layout is a clear SessionError, never altered. Existing tables are used without
    any DDL, so a role without CREATE privilege works on tables made for it."""
    key = (*statements, *required)
    done = _ensured.setdefault(pool, set())
    if key in done:
        return
    async with pool.connection() as conn:
        if await _layout_problems(conn, required, indexes):
            async with conn.transaction():
                # Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalogs.
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in statements:
                    await conn.execute(statement)
            problems = await _layout_problems(conn, required, indexes)
            if problems:
                raise SessionError("; ".join(problems))
    done.add(key)


# --- the OpenAI Agents SDK's layout -------------------------------------------------------

_TEXTS = ("character varying", "text")
_TIMESTAMPS = ("timestamp without time zone", "timestamp with time zone")


def sdk_schema(sessions: str, messages: str) -> list[str]:
    """The tables and index of the SDK's ``SQLAlchemySession`` (openai-agents 0.24), as
    SQLAlchemy creates them on PostgreSQL."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {sessions} (
            session_id VARCHAR NOT NULL,
            created_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL,
            updated_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL,
            PRIMARY KEY (session_id)
        )""",
        f"""CREATE TABLE IF NOT EXISTS {messages} (
            id SERIAL NOT NULL,
            session_id VARCHAR NOT NULL,
            message_data TEXT NOT NULL,
            created_at TIMESTAMP WITHOUT TIME ZONE DEFAULT CURRENT_TIMESTAMP NOT NULL,
            PRIMARY KEY (id),
            FOREIGN KEY (session_id) REFERENCES {sessions} (session_id) ON DELETE CASCADE
        )""",
        f"CREATE INDEX IF NOT EXISTS idx_{messages}_session_time "
        f"ON {messages} (session_id, created_at)",
    ]


def sdk_columns(sessions: str, messages: str) -> dict[str, dict[str, str | tuple[str, ...]]]:
    """The columns histcore reads and writes in the SDK's tables (and their types)."""
    return {
        sessions: {"session_id": _TEXTS, "updated_at": _TIMESTAMPS},
        messages: {
            "id": ("integer", "bigint"),
            "session_id": _TEXTS,
            "message_data": ("text",),
            "created_at": _TIMESTAMPS,
        },
    }


def check_layout(layout: object) -> str:
    """``layout`` if it is one of ``LAYOUTS``; otherwise a ValueError naming them."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}")
    return str(layout)


_layouts: weakref.WeakKeyDictionary[Pool, dict[tuple[str, str], str]] = weakref.WeakKeyDictionary()


async def find_layout(pool: Pool, sessions: str, messages: str, wanted: str) -> tuple[str, bool]:
    """The layout of the tables ``sessions``/``messages`` (``HISTCORE`` or ``SDK``): the
    one found, or for tables not made yet ``wanted`` (``"auto"``: histcore's); and
    whether the messages table exists. A layout asked for (``wanted`` not ``"auto"``)
    that differs from the one found is a SessionError. Remembered per pool once the
    tables exist."""
    known = _layouts.setdefault(pool, {})
    found = known.get((sessions, messages))
    if found is None:
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                "AND attnum > 0 AND NOT attisdropped",
                (messages,),
            )
            columns = {str(name) for (name,) in await cursor.fetchall()}
        if not columns:
            return (SDK if wanted == SDK else HISTCORE), False  # made by ensure_tables
        # histcore's keeps the text in message_text; anything else is checked as the
        # SDK's (ensure_tables says what it lacks).
        found = HISTCORE if "message_text" in columns else SDK
        known[(sessions, messages)] = found
    if wanted not in ("auto", found):
        described = "histcore's" if found == HISTCORE else "the OpenAI Agents SDK's"
        raise SessionError(
            f"table {messages} has {described} layout, but layout={wanted!r} was asked for"
        )
    return found, True
