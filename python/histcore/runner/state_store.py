"""Durable ``RunState`` checkpoints with optimistic concurrency.

One checkpoint per key with a version (0: none; each save adds one). Rules: a save names
the version it was based on (``expected_version``) and succeeds only if that is still
the stored one, else ``RunStateConflictError`` and the newer checkpoint stays; a version
is never issued twice for one key, not even after ``delete_state``::

    stored = await store.load_stored_state(agent, "job-7")    # version 3
    result = await Runner.run(agent, stored.state)
    await store.save_state("job-7", result.to_state(), expected_version=stored.version)

``MemoryRunStateStore``, ``SQLiteRunStateStore`` and ``PostgresRunStateStore`` keep the
``to_string()`` text over ``histcore.sessions.versioned``, so a load shares nothing with
what was saved. Details: docs/design.md, "RunState and resume" ("Checkpoint stores").
"""

from __future__ import annotations

import os
from abc import ABC
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histcore.exceptions import HistcoreError, RunStateError
from histcore.runner.run_state import RunState
from histcore.sessions.versioned import (
    MemoryTextStore,
    TextConflictError,
    TextStoreClosedError,
    TextStoreError,
    VersionedTextStore,
    check_key,
    check_version,
)
from histcore.sessions.versioned_sqlite import SQLiteTextStore

if TYPE_CHECKING:
    from histcore.runner.agent import Agent
    from histcore.sessions._postgres_pools import Pool

__all__ = [
    "MemoryRunStateStore",
    "PostgresRunStateStore",
    "RunStateConflictError",
    "RunStateStore",
    "RunStateStoreError",
    "SQLiteRunStateStore",
    "StoredRunState",
]

#: The table the RunState stores write, unless given another.
RUN_STATES_TABLE = "agent_run_states"

#: The text stores' operations as a run state store names them in its messages.
_OPERATIONS = {"read": "load", "write": "save", "delete": "delete"}


class RunStateStoreError(HistcoreError):
    """The store could not do what was asked; the stored checkpoints are unchanged."""


class RunStateConflictError(RunStateStoreError):
    """A save or delete was based on a version that is no longer the stored one."""

    def __init__(self, key: str, expected_version: int, current_version: int) -> None:
        self.key = key
        self.expected_version = expected_version
        self.current_version = current_version
        if current_version == 0:
            now = "it has no checkpoint (it was deleted, or never saved)"
        else:
            now = f"it is at version {current_version}"
        based = "a new key" if expected_version == 0 else f"version {expected_version}"
        super().__init__(
            f"run state {key!r}: the save was based on {based} but {now}; "
            "load the current checkpoint and continue from it instead"
        )


@dataclass(frozen=True)
class StoredRunState:
    """A loaded checkpoint and the version to pass as ``expected_version`` when
    saving its continuation."""

    state: RunState
    version: int


class RunStateStore(ABC):
    """Versioned ``RunState`` checkpoints by key (see the module docstring), kept as
    text in ``_texts``, the versioned text store a backend sets."""

    _texts: VersionedTextStore

    async def save_state(self, key: str, state: RunState, *, expected_version: int = 0) -> int:
        """Store ``state`` under ``key`` if the stored version is ``expected_version``
        (0: the key has no checkpoint now); return the new version, one more than
        any version the key ever had.

        Raises ``RunStateConflictError`` when another save got there first, and
        ``RunStateError`` when the state cannot be serialised; nothing is written then.
        """
        key = check_key(key)
        expected_version = check_version(expected_version, "expected_version")
        if not isinstance(state, RunState):
            raise TypeError(f"state must be a RunState, not {type(state).__name__}")
        text = state.to_string()
        with self._translated():
            return await self._texts.write(key, text, expected_version=expected_version)

    async def load_stored_state(self, agent: Agent, key: str) -> StoredRunState | None:
        """The checkpoint under ``key``, loaded for ``agent``, with its version; None
        when there is none. A stored state that does not load raises ``RunStateError``
        naming the key, its version and the offending field."""
        with self._translated():
            found = await self._texts.read(key)
        if found is None:
            return None
        try:
            state = RunState.from_string(agent, found.text)
        except RunStateError as exc:
            raise RunStateError(f"run state {key!r} (version {found.version}): {exc}") from exc
        return StoredRunState(state, found.version)

    async def load_state(self, agent: Agent, key: str) -> RunState | None:
        """The checkpoint under ``key`` loaded for ``agent``, or None (see
        ``load_stored_state``, which also gives the version to save against)."""
        stored = await self.load_stored_state(agent, key)
        return None if stored is None else stored.state

    async def version(self, key: str) -> int:
        """The stored version of ``key``: 0 when it has no checkpoint."""
        with self._translated():
            return await self._texts.version(key)

    async def delete_state(self, key: str, *, expected_version: int | None = None) -> bool:
        """Remove the checkpoint under ``key``; True if there was one. With
        ``expected_version``, only if that is still the stored version (else
        ``RunStateConflictError``). The key's versions go on from the deleted one."""
        with self._translated():  # the text store checks the arguments
            return await self._texts.delete(key, expected_version=expected_version)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """The text store's errors as this store's: a conflict as RunStateConflictError,
        any other failure as RunStateStoreError (caused by the database's error)."""
        try:
            yield
        except TextConflictError as exc:
            raise RunStateConflictError(
                exc.key, exc.expected_version, exc.current_version
            ) from None
        except TextStoreClosedError:
            raise RunStateStoreError(f"{self!r} is closed") from None
        except TextStoreError as exc:
            operation = _OPERATIONS.get(exc.operation, exc.operation)
            raise RunStateStoreError(
                f"{self!r}: {operation} failed: {exc.reason}"
            ) from exc.__cause__


# --- in memory ------------------------------------------------------------------------


class MemoryRunStateStore(RunStateStore):
    """Checkpoints in this process's memory (thread-safe; lost when it ends)."""

    def __init__(self) -> None:
        self._texts = self._memory = MemoryTextStore()

    def __repr__(self) -> str:
        return f"MemoryRunStateStore(keys={len(self._memory)})"


# --- SQLite ---------------------------------------------------------------------------


class SQLiteRunStateStore(RunStateStore):
    """Checkpoints in a SQLite file (or ``:memory:``), one row per key in ``table``.

    The file may be the one a ``SQLiteSession`` uses. Blocking work runs in a worker
    thread; ``close()`` when done.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = RUN_STATES_TABLE,
        busy_timeout: float = 30.0,
    ) -> None:
        try:
            self._texts = self._sqlite = SQLiteTextStore(
                db_path, table=table, busy_timeout=busy_timeout
            )
        except TextStoreError as exc:
            path = os.fspath(db_path)
            raise RunStateStoreError(
                f"cannot open run state store {path!r}: {exc.reason}"
            ) from exc.__cause__
        self.db_path = db_path
        self.table = self._sqlite.table

    def close(self) -> None:
        """Close the connection (waits for an operation in progress). Idempotent."""
        self._sqlite.close()

    def __repr__(self) -> str:
        return f"SQLiteRunStateStore({os.fspath(self.db_path)!r})"


# --- PostgreSQL -----------------------------------------------------------------------


class PostgresRunStateStore(RunStateStore):
    """Checkpoints in PostgreSQL, next to ``PostgresSession``'s tables.

    Give ``dsn`` (the pool is shared with the sessions of the same DSN in the running
    event loop) or an open autocommit ``pool``, as for ``PostgresSession``. The table
    is created on first use. A server that does not accept a connection within
    ``connect_timeout`` seconds (the sessions' default, 5, when not given) is a one-line
    RunStateStoreError.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Pool | None = None,
        table: str = RUN_STATES_TABLE,
        pool_max_size: int = 10,
        connect_timeout: float | None = None,
    ) -> None:
        from histcore.sessions.versioned_postgres import PostgresTextStore  # the postgres extra

        if (dsn is None) == (pool is None):
            raise TypeError("PostgresRunStateStore needs exactly one of dsn= and pool=")
        self._texts = self._postgres = PostgresTextStore(
            table,
            dsn=dsn,
            pool=pool,
            pool_max_size=pool_max_size,
            connect_timeout=connect_timeout,
        )
        self.table = self._postgres.table
        self._connect_timeout = self._postgres.connect_timeout

    def __repr__(self) -> str:
        return f"PostgresRunStateStore({self._postgres.location!r}, table={self.table!r})"
