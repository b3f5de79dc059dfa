"""Versioned text by key, with optimistic concurrency: the runner's ``RunState`` stores
keep their checkpoints here, as text; a store knows nothing of what its texts hold.

One text per key with a version: 0 means "nothing stored", each write adds one. Rules:
a write names the version it was based on (``expected_version``) and succeeds only if
that is still the stored one, else it raises ``TextConflictError`` and leaves the newer
text alone; a version is never issued twice for one key, not even after ``delete``::

    stored = await store.read("job-7")                      # StoredText(3, "...")
    await store.write("job-7", new_text, expected_version=stored.version)   # 4

Backends: ``MemoryTextStore``, ``versioned_sqlite.SQLiteTextStore`` and
``versioned_postgres.PostgresTextStore`` (the ``postgres`` extra); a ``TextStoreError``
changes nothing. Details: docs/design.md, "RunState and resume" ("Checkpoint stores").
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass

from histcore.exceptions import SessionError
from histcore.sessions.base import check_int

__all__ = [
    "MemoryTextStore",
    "StoredText",
    "TextConflictError",
    "TextStoreClosedError",
    "TextStoreError",
    "VersionedTextStore",
    "check_key",
    "check_version",
]


class TextStoreError(SessionError):
    """The store could not do what was asked; the stored texts are unchanged.

    ``operation``: what failed (``"open"``, ``"read"``, ``"write"`` or ``"delete"``);
    ``reason``: why, as the database said it (the database's error is the cause).
    """

    def __init__(self, message: str, *, operation: str, reason: str) -> None:
        super().__init__(message)
        self.operation = operation
        self.reason = reason


class TextStoreClosedError(TextStoreError):
    """The store was closed and cannot be used any more."""


class TextConflictError(TextStoreError):
    """A write or delete was based on a version that is no longer the stored one."""

    def __init__(
        self, key: str, expected_version: int, current_version: int, *, operation: str
    ) -> None:
        self.key = key
        self.expected_version = expected_version
        self.current_version = current_version
        now = "nothing" if current_version == 0 else f"version {current_version}"
        based = "a new key" if expected_version == 0 else f"version {expected_version}"
        reason = f"it was based on {based} but {key!r} holds {now}"
        super().__init__(f"{operation} of {key!r}: {reason}", operation=operation, reason=reason)


@dataclass(frozen=True)
class StoredText:
    """A stored text and its version (the ``expected_version`` of the next write)."""

    version: int
    text: str


def check_key(key: object) -> str:
    """``key`` if it is a non-empty str; TypeError or ValueError if not."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, not {type(key).__name__}")
    if not key:
        raise ValueError("key must be a non-empty str")
    return key


def check_version(value: object, name: str) -> int:
    """``value`` if it is an int >= 0 (a bool is not); TypeError or ValueError naming
    ``name``, the argument it was passed as, if not."""
    return check_int(value, name)


class VersionedTextStore(ABC):
    """Versioned texts by key (see the module docstring)."""

    async def read(self, key: str) -> StoredText | None:
        """The text stored under ``key`` and its version; None when there is none."""
        found = await self._read(check_key(key))
        return None if found is None else StoredText(*found)

    async def version(self, key: str) -> int:
        """The stored version of ``key``: 0 when nothing is stored under it."""
        found = await self._read(check_key(key))
        return 0 if found is None else found[0]

    async def write(self, key: str, text: str, *, expected_version: int = 0) -> int:
        """Store ``text`` under ``key`` if the stored version is ``expected_version``
        (0: nothing is stored under it now); return the new version, one more than any
        version the key ever had. ``TextConflictError`` when another write got there
        first; nothing is written then."""
        key = check_key(key)
        expected_version = check_version(expected_version, "expected_version")
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return await self._write(key, text, expected_version)

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Remove the text under ``key``; True if there was one. With
        ``expected_version``, only if that is still the stored version (else
        ``TextConflictError``). The key's versions go on from the deleted one."""
        key = check_key(key)
        if expected_version is not None:
            expected_version = check_version(expected_version, "expected_version")
        return await self._delete(key, expected_version)

    @abstractmethod
    async def _read(self, key: str) -> tuple[int, str] | None:
        """``(version, text)`` stored under ``key``, or None."""

    @abstractmethod
    async def _write(self, key: str, text: str, expected_version: int) -> int:
        """Atomically: if the stored version is ``expected_version``, store ``text``
        with the next version (after a delete: the one after the deleted version)
        and return it; else raise TextConflictError."""

    @abstractmethod
    async def _delete(self, key: str, expected_version: int | None) -> bool:
        """Atomically remove ``key`` (if at ``expected_version``, when given),
        remembering its version for the next ``_write``."""


class MemoryTextStore(VersionedTextStore):
    """Texts in this process's memory (thread-safe; lost when it ends)."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[int, str]] = {}
        #: The last version of each deleted key (a new text starts after it).
        self._deleted: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many keys hold a text."""
        return len(self._texts)

    async def _read(self, key: str) -> tuple[int, str] | None:
        with self._lock:
            return self._texts.get(key)

    async def _write(self, key: str, text: str, expected_version: int) -> int:
        with self._lock:
            stored = self._texts.get(key)
            current = 0 if stored is None else stored[0]
            if current != expected_version:
                raise TextConflictError(key, expected_version, current, operation="write")
            version = (current if stored is not None else self._deleted.get(key, 0)) + 1
            self._texts[key] = (version, text)
            return version

    async def _delete(self, key: str, expected_version: int | None) -> bool:
        with self._lock:
            stored = self._texts.get(key)
            current = 0 if stored is None else stored[0]
            if expected_version is not None and current != expected_version:
                raise TextConflictError(key, expected_version, current, operation="delete")
            if stored is None:
                return False
            del self._texts[key]
            self._deleted[key] = current
            return True

    def __repr__(self) -> str:
        return f"MemoryTextStore(keys={len(self._texts)})"
