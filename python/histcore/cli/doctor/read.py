"""What the doctor keeps of a session's rows, and what it needs of a store.

A ``Store`` (SQLite in ``sqlite.py``, PostgreSQL in ``postgres.py``) gives the doctor
what the store's reader gives (``histcore.sessions._store_readers``: the session ids,
the rows no session reads, one session's rows, each read a statement of its own), a
backup, and the repair of one session in one short write transaction.

The doctor reads a session as ``RowFacts``: per row its id, what it is, the fields of
its item the rules read (``facts.py``) and a digest of its stored data, so a session of
10^6 items takes well under a gigabyte. A repair compares digests (``StoredForm``)
under the write lock and reads there the data of the rows it rewrites.
"""

from __future__ import annotations

import datetime
import hashlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import islice, zip_longest
from typing import Any, Protocol

from histcore.cli.doctor.facts import stand_in
from histcore.sessions._store_readers.model import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    StoreError,
    StoreLocked,
    StoreReader,
    Tables,
)
from histcore.sessions.rows import CorruptRow, decode_json

__all__ = [
    "BAD_CALL_ID",
    "DIGEST_SIZE",
    "INVALID",
    "ITEM",
    "MESSAGES_TABLE",
    "NOT_ITEM",
    "SESSIONS_TABLE",
    "DoctorError",
    "RepairStopped",
    "RowChanges",
    "RowFacts",
    "Source",
    "Store",
    "StoreLocked",
    "StoredForm",
    "Synthesized",
    "Tables",
    "backup_stamp",
    "data_digest",
    "row_facts",
    "stored_pairs",
    "text_facts",
    "utf8_text_digest",
]


#: The doctor's name for what its store's reader raises (with StoreLocked, a lock
#: waited for in vain): the store cannot be checked (missing, not SQLite, ...).
DoctorError = StoreError


class RepairStopped(DoctorError):
    """A ``--fix`` or ``--restore`` that ``error`` stopped after it began writing: the
    sessions in ``repaired`` were committed before it (each whole), and ``backup`` holds
    them as they were. A ``StoreLocked`` too when ``error`` is one (``after``)."""

    def __init__(self, error: DoctorError, repaired: Sequence[str], backup: str | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.repaired = list(repaired)
        self.backup = backup

    @staticmethod
    def after(error: DoctorError, repaired: Sequence[str], backup: str | None) -> RepairStopped:
        kind = _LockedRepairStopped if isinstance(error, StoreLocked) else RepairStopped
        return kind(error, repaired, backup)


class _LockedRepairStopped(RepairStopped, StoreLocked):
    pass


#: What a row is to the rules, in the order ``diagnose`` sets rows aside.
INVALID, NOT_ITEM, BAD_CALL_ID, ITEM = "invalid", "not_item", "bad_call_id", "item"
#: Bytes of a digest of a row's stored data.
DIGEST_SIZE = 16


@dataclass(frozen=True, slots=True)
class RowFacts:
    """One stored row as the doctor keeps it: not its decoded item nor its stored data
    (a session of 10^6 rows would not fit in memory), but what the rules read of the
    item and a digest of the data, which a repair compares."""

    row_id: int
    #: ``data_digest`` of message_data exactly as stored
    digest: bytes
    #: INVALID, NOT_ITEM, BAD_CALL_ID or ITEM (only ITEM rows are the session's items)
    kind: str
    #: what the rules read of the item (``facts.stand_in``), when ``kind`` is ITEM
    item: dict[str, Any] | None = None
    #: why the row is not valid JSON (not UTF-8, not JSON, nested too deeply, NULL, ...)
    reason: str | None = None


class StoredForm:
    """A session's rows as a repair compares them: the ids in order, each with the
    digest of its stored data (24 bytes a row)."""

    __slots__ = ("_digests", "_ids")

    def __init__(self, rows: Iterable[RowFacts]) -> None:
        self._ids = array("q")
        digests = bytearray()
        for row in rows:
            self._ids.append(row.row_id)
            digests += row.digest
        self._digests = bytes(digests)

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for position, row_id in enumerate(self._ids):
            start = position * DIGEST_SIZE
            yield row_id, self._digests[start : start + DIGEST_SIZE]

    def matches(self, stored: Iterable[tuple[int, bytes]]) -> bool:
        """Whether ``stored`` (ids and digests in order, as a store reads them now) is
        this session: the same rows, each holding the same data. ``stored`` is read to
        its end, so a store's statement behind it always finishes."""
        same = True
        for found, wanted in zip_longest(stored, self, fillvalue=None):
            same = same and found == wanted
        return same


@dataclass(frozen=True)
class Synthesized:
    """An output a repair stores for a call whose output is missing (``--dangling
    synthesize``)."""

    call_id: str
    #: the JSON text stored (the engine's output item, as the SDK's sessions write one)
    text: str


#: Where a repaired row's data comes from: another row of the session (its id), or a
#: synthesized output.
Source = int | Synthesized


@dataclass(frozen=True)
class RowChanges:
    """One session's repair as a store applies it: while the session still holds
    ``expected``, give each ``(row id, source)`` of ``updates`` its source's stored data
    (sources are read before anything changes), append ``appended`` (new ids, in order,
    sorting after every row) and delete ``deletions``; the session then reads as
    ``predicted`` followed by the appended rows."""

    expected: StoredForm
    updates: Sequence[tuple[int, Source]]
    deletions: Sequence[int]
    predicted: StoredForm
    appended: Sequence[Source] = ()
    #: digests of the appended rows' data, in order
    appended_digests: Sequence[bytes] = ()

    def check_read_back(
        self, store: str, session_id: str, stored: Iterable[tuple[int, bytes]]
    ) -> None:
        """After the writes, inside their transaction: a DoctorError (which rolls it
        back) unless the session, read as ``stored``, is what this repair predicted: the
        rows it keeps, then the appended ones under new ids above every id it held."""
        found = iter(stored)
        same = self.predicted.matches(islice(found, len(self.predicted)))
        tail = list(found)
        floor = max((row_id for row_id, _ in self.expected), default=0)
        ids = [row_id for row_id, _ in tail]
        same = (
            same
            and [digest for _, digest in tail] == list(self.appended_digests)
            and all(row_id > floor for row_id in ids)
            and ids == sorted(set(ids))
        )
        if not same:
            raise DoctorError(
                f"{store}: session {session_id!r} did not read back as its repair "
                "planned; nothing of this transaction was changed"
            )


def data_digest(data: Any) -> bytes:
    """A digest of stored data (str, bytes or None): equal for two values when they are
    equal, and (but with a chance of 2^-128) only then. A repair compares these
    instead of keeping every row's data; a str and bytes of one text differ."""
    if data is None:
        return _digest(_NULL, b"")
    if isinstance(data, str):
        return _digest(_STR, data.encode("utf-8", "surrogatepass"))
    return _digest(_BYTES, bytes(data))


# What a digest says the stored data was (blake2b's personalisation: the same bytes
# stored as TEXT and as BLOB digest apart).
_NULL, _STR, _BYTES = b"null", b"str", b"bytes"


def _digest(kind: bytes, raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=DIGEST_SIZE, person=kind).digest()


def utf8_text_digest(raw: bytes) -> bytes:
    """``data_digest`` of the str that ``raw`` (valid UTF-8) decodes to, from its bytes."""
    return _digest(_STR, raw)


def stored_pairs(found: Iterable[tuple[Any, Any]]) -> Iterator[tuple[int, bytes]]:
    """``(id, stored data)`` pairs as a repair compares them: ids and data digests."""
    for row_id, data in found:
        yield int(row_id), data_digest(data)


def text_facts(row_id: int, data: Any, missing: str | None = None) -> RowFacts:
    """``row_facts`` of the row stored as ``data`` (str, bytes or None)."""
    return row_facts(row_id, data_digest(data), data, missing)


def row_facts(row_id: int, digest: bytes, data: Any, missing: str | None = None) -> RowFacts:
    """The facts of the row whose stored data has ``digest`` and reads as ``data``
    (None: ``missing`` says why there is none), decoded as the reader's ``decode_text``
    decodes it; of the item only what the rules read is kept."""
    if data is None:
        return RowFacts(row_id, digest, INVALID, reason=missing or "NULL, not text")
    try:
        value = decode_json(data)
    except CorruptRow as exc:
        return RowFacts(row_id, digest, INVALID, reason=exc.reason)
    if not isinstance(value, dict):
        return RowFacts(row_id, digest, NOT_ITEM)
    if "call_id" in value and not isinstance(value["call_id"], str):
        return RowFacts(row_id, digest, BAD_CALL_ID)
    return RowFacts(row_id, digest, ITEM, stand_in(value))


def backup_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class Store(StoreReader, Protocol):
    """What the doctor reads and writes; every failure is a DoctorError."""

    def read_facts(self, session_id: str) -> list[RowFacts]:
        """``read_rows``, but only the facts of each row: what the doctor checks."""
        ...

    def write_backup(self, session_ids: Sequence[str]) -> str:
        """Save (at least) these sessions' rows as they are; where they went."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction: committed when the block ends, rolled back on an error."""
        ...

    def repair(self, session_id: str, changes: RowChanges) -> bool:
        """Inside ``transaction()``: apply ``changes`` when the session still holds their
        ``expected`` rows and check it then reads as ``predicted`` (DoctorError if not).
        False, and nothing changed, when the session changed since it was read."""
        ...

    def side_facts(self, session_id: str) -> Any:
        """The session's revision, op ids and archive (``side.SideFacts``)."""
        ...
