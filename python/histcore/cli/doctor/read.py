"""Rows exactly as stored, decoded as the sessions decode them, and what a store gives.

A ``Store`` (SQLite in ``sqlite.py``, PostgreSQL in ``postgres.py``) gives the doctor
what it needs of a session store: the session ids, the rows no session reads, one
session's rows (each read a statement of its own, so no lock is held between them), a
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
from histcore.sessions.base import MESSAGES_TABLE, SESSIONS_TABLE
from histcore.sessions.rows import CorruptRow, decode_json
from histcore.sessions.sql_store import check_table_name

__all__ = [
    "BAD_CALL_ID",
    "DIGEST_SIZE",
    "INVALID",
    "ITEM",
    "MESSAGES_TABLE",
    "NOT_ITEM",
    "SESSIONS_TABLE",
    "DoctorError",
    "Row",
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
    "decode_text",
    "row_facts",
    "row_ids_text",
    "stored_pairs",
    "text_facts",
    "utf8_text_digest",
]


class DoctorError(Exception):
    """The store cannot be checked (missing, not SQLite, not a session store, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        #: sessions whose repair was committed before the error (each is whole)
        self.repaired: list[str] = []
        #: the backup written before the first repair, if one was
        self.backup: str | None = None


class StoreLocked(DoctorError):
    """Another process holds a lock the doctor waited for in vain."""


@dataclass(frozen=True)
class Tables:
    """The two tables of a session store (the SDK's names by default)."""

    sessions: str = SESSIONS_TABLE
    messages: str = MESSAGES_TABLE

    def __post_init__(self) -> None:
        for name in (self.sessions, self.messages):
            try:
                check_table_name(name, "table")
            except ValueError:
                raise DoctorError(f"{name!r} is not a plain SQL table name") from None


#: What a row is to the rules, in the order ``diagnose`` sets rows aside.
INVALID, NOT_ITEM, BAD_CALL_ID, ITEM = "invalid", "not_item", "bad_call_id", "item"
#: Bytes of a digest of a row's stored data.
DIGEST_SIZE = 16


@dataclass(frozen=True)
class Row:
    """One stored row, whole: its stored data and its decoded item (``histcore bench
    --store`` reads sessions so; the doctor keeps only ``RowFacts``)."""

    row_id: int
    data: Any  # message_data exactly as stored (written back unchanged)
    item: Any  # the decoded item, when ``valid``
    valid: bool
    #: why the row is not valid JSON (not UTF-8, not JSON, nested too deeply, NULL, ...)
    reason: str | None = None


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


def decode_text(row_id: int, data: Any, missing: str | None = None) -> Row:
    """The row stored as ``data`` (None: ``missing`` says why there is none), decoded by
    the sessions' own rule (``histcore.sessions.rows``): a row they read as an item is
    an item here, and a row they skip is not valid JSON here."""
    if data is None:
        return Row(row_id, None, None, False, missing or "NULL, not text")
    try:
        return Row(row_id, data, decode_json(data), True)
    except CorruptRow as exc:
        return Row(row_id, data, None, False, exc.reason)


def text_facts(row_id: int, data: Any, missing: str | None = None) -> RowFacts:
    """``row_facts`` of the row stored as ``data`` (str, bytes or None)."""
    return row_facts(row_id, data_digest(data), data, missing)


def row_facts(row_id: int, digest: bytes, data: Any, missing: str | None = None) -> RowFacts:
    """The facts of the row whose stored data has ``digest`` and reads as ``data``
    (None: ``missing`` says why there is none), decoded as ``decode_text`` decodes it;
    of the item only what the rules read is kept."""
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


def row_ids_text(row_ids: Sequence[int], limit: int = 8) -> str:
    """Row ids for a message: the first ``limit``, then how many there are in all."""
    shown = ", ".join(map(str, row_ids[:limit]))
    return shown + (f", ... ({len(row_ids)} in all)" if len(row_ids) > limit else "")


def backup_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class Store(Protocol):
    """What the doctor reads and writes; every failure is a DoctorError."""

    name: str

    def session_ids(self) -> list[str]:
        """Every session with rows, or registered without any."""
        ...

    def rows_without_session(self) -> dict[str, list[int]]:
        """Row ids no session reads, by why: ``{"null": [...], "blob": [...], ...}``
        (after ``session_ids``)."""
        ...

    def row_count(self) -> int:
        """How many rows the messages table holds (after ``session_ids``)."""
        ...

    def read_rows(self, session_id: str) -> list[Row]:
        """One session's rows in id order (the conversation's order), whole."""
        ...

    def read_facts(self, session_id: str) -> list[RowFacts]:
        """``read_rows``, but only the facts of each row: what the doctor checks."""
        ...

    def rows_without_structure(self, session_id: str) -> list[int]:
        """Row ids of the session's messages with no ``message_structure`` row, which the
        SDK's ``AdvancedSQLiteSession`` does not read ([] in a store without the table)."""
        ...

    def read_data(self, session_id: str) -> list[tuple[int, Any]]:
        """``read_rows``, undecoded: each row's id and ``Row.data`` (a quick look at
        whether a session changed)."""
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

    def close(self) -> None: ...
