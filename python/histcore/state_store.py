"""``RunState`` checkpoint stores: the public face of ``histcore.runner.state_store``."""

from __future__ import annotations

from histcore.runner.state_store import (
    MemoryRunStateStore,
    PostgresRunStateStore,
    RunStateConflictError,
    RunStateStore,
    RunStateStoreError,
    SQLiteRunStateStore,
    StoredRunState,
)

__all__ = [
    "MemoryRunStateStore",
    "PostgresRunStateStore",
    "RunStateConflictError",
    "RunStateStore",
    "RunStateStoreError",
    "SQLiteRunStateStore",
    "StoredRunState",
]
