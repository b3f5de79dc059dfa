"""Items to stored JSON text and back, fast, and readable by the Agents SDK both ways.

Rules: an item is stored only if it reads back as written (tuples come back as lists).
Plain JSON data is encoded by orjson; what orjson refuses or would change but ``json``
writes exactly (big ints, lone surrogates, deep nesting, non-finite floats) is written
by ``json.dumps``, as the SDK writes every row; models as
``model_dump(exclude_unset=True)``; anything else is refused with a TypeError naming
the item and the place, before anything is written. A large batch is encoded a chunk
at a time (``encoded_chunks``), and kept texts are copied to right-sized ``bytes``
(``compact``). Decoding uses orjson, ``json.loads`` for what it rejects or would read
inexactly; a row that holds no item (not JSON, not an object, deeper than
``MAX_DEPTH``) is corrupt and skipped by the caller. Details: docs/design.md,
"Sessions" ("The SQLite store", *Stored text*).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import compress, repeat
from operator import contains, itemgetter
from typing import Any

import orjson

from histcore.engine.exact_json import NULL, has_non_finite, long_integer_candidates
from histcore.engine.items import MAX_DEPTH, plain_json_copy
from histcore.engine.vocabulary import all_exact_dicts
from histcore.engine.wording import a_type_name
from histcore.sessions.rows import CorruptRow, decode_stored, deep_positions

__all__ = [
    "ENCODE_CHUNK",
    "CorruptRow",
    "compact",
    "decode_id_rows",
    "decode_row",
    "encode_items",
    "encode_items_utf8",
    "encoded_chunks",
]


_ROW_ID = itemgetter(0)
_DATA = itemgetter(1)


def _too_deep_error(index: int) -> TypeError:
    return TypeError(
        f"items[{index}] cannot be encoded as JSON: it is nested deeper than {MAX_DEPTH} "
        "levels, which no session stores"
    )


# --- writing ---------------------------------------------------------------------------


def _where(index: int, path: list[str | int]) -> str:
    """``items[3]['content'][0]``: a place in an item, long paths cut short."""
    if len(path) > 8:
        shown = [*map(_step, path[:5]), "...", *map(_step, path[-2:])]
    else:
        shown = list(map(_step, path))
    return f"items[{index}]" + "".join(shown)


def _step(key: str | int) -> str:
    return f"[{key}]" if isinstance(key, int) else f"[{key[:40]!r}]"


def _model_dump(value: Any, dump: Any, index: int, path: list[str | int]) -> Any:
    try:
        return dump(exclude_unset=True)
    except Exception as exc:
        raise TypeError(
            f"items[{index}] cannot be encoded as JSON: model_dump() of the "
            f"{type(value).__name__} at {_where(index, path)} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc


# Two str characters that are a high and a low surrogate: JSON text can only hold them
# as the escapes of the one character they encode together.
_SURROGATE_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")


def _json_tree(item: Any, index: int) -> Any:
    """``item`` as the JSON data it is stored as: models replaced by their dump, tuples
    by lists, dict and list subclasses by dicts and lists.

    Raises TypeError naming the item and the place in it of anything that would not
    read back as written: a value of a type ``json`` refuses (or that orjson would
    quietly write as something else: datetime, UUID, Enum, dataclass), a dict key that
    is not a str (it would read back as one, and ``{1: "a", "1": "b"}`` as one key), a
    str holding a high and a low surrogate as two characters (they read back as one),
    a circular reference, or nesting deeper than MAX_DEPTH.
    """
    path: list[str | int] = []
    open_containers: set[int] = set()

    def refuse(reason: str) -> TypeError:
        return TypeError(
            f"items[{index}] cannot be encoded as JSON: {_where(index, path)} {reason}"
        )

    def text(value: str) -> str:
        pair = _SURROGATE_PAIR.search(value)
        if pair is not None:
            raise refuse(
                f"holds a surrogate pair as two characters ({pair.group()!r}): JSON writes "
                "them as the escapes of one character, which it would read back as"
            )
        return value

    def tree(value: Any, depth: int) -> Any:
        # Subclasses of str, int and float (IntEnum, str-valued Enum mixins) are written
        # as their plain value, which compares equal to them.
        if isinstance(value, str):
            return text(value)
        if value is None or isinstance(value, (int, float)):
            return value
        if isinstance(value, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise refuse(f"is nested deeper than {MAX_DEPTH} levels")
            if id(value) in open_containers:
                raise refuse("is a circular reference to a container holding it")
            open_containers.add(id(value))
            result: Any
            if isinstance(value, dict):
                result = {}
                for key, member in value.items():
                    if not isinstance(key, str):
                        raise refuse(
                            f"has a non-str key {key!r:.40} ({type(key).__name__}): JSON "
                            "object keys are strings, so it would read back as another key"
                        )
                    path.append(key)
                    result[text(key)] = tree(member, depth + 1)
                    path.pop()
            else:
                result = []
                for position, member in enumerate(value):
                    path.append(position)
                    result.append(tree(member, depth + 1))
                    path.pop()
            open_containers.discard(id(value))
            return result
        dump = getattr(value, "model_dump", None)
        if dump is not None and callable(dump):
            return tree(_model_dump(value, dump, index, path), depth)
        raise refuse(
            f"is {a_type_name(value)}, not JSON data (dict, list, str, int, float, bool or None)"
        )

    return tree(item, 0)


def _plain_or_tree(item: dict[str, Any], index: int) -> Any:
    """``item`` itself when it is plain JSON data, else its ``_json_tree``."""
    if plain_json_copy([item], allow_shared=True) is not None:
        return item
    return _json_tree(item, index)


def _stdlib_text(tree: Any, index: int) -> bytes:
    """``json.dumps`` of a ``_json_tree`` (exact for long integers, lone surrogates and
    non-finite floats, which orjson refuses or writes as null)."""
    try:
        return json.dumps(tree).encode()
    except (TypeError, ValueError, RecursionError) as exc:  # not expected of a tree
        raise TypeError(f"items[{index}] cannot be encoded as JSON: {exc}") from exc


def _encoded(item: Any, index: int) -> bytes:
    """The text of one item that orjson may refuse."""
    try:
        return orjson.dumps(item)
    except TypeError:
        # Long integers, lone surrogates, deep nesting, or a key that is no str (which
        # _json_tree refuses).
        return _stdlib_text(_json_tree(item, index), index)


def _as_dict(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None and callable(dump):
        dumped = _model_dump(item, dump, index, [])
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(
        f"items[{index}] is {a_type_name(item)}, not an input item "
        "(a dict or a model with model_dump())"
    )


#: Items encoded at a time by ``encoded_chunks``: a write of any size holds the text of
#: one chunk at a time (and the encoder's working copy of it), not of the whole batch.
ENCODE_CHUNK = 2048


def encode_items(items: list[Any]) -> list[str]:
    """The stored JSON text of every item, in order (see ``encode_items_utf8``)."""
    return [data.decode() for chunk in encoded_chunks(items) for data in chunk]


def encode_items_utf8(items: list[Any]) -> list[bytes]:
    """The stored JSON text of every item as UTF-8 bytes, in order: text that decodes
    to an item equal to the one written (tuples come back as lists).

    Every text is its own right-sized ``bytes`` (``compact``), so a caller may keep them.
    Raises TypeError naming the first item that is not an input item or would not read
    back as written, and the place in it (see ``_json_tree``); then nothing is
    returned, so a caller that encodes before writing writes nothing.
    """
    return [text for chunk in encoded_chunks(items) for text in compact(chunk)]


def encoded_chunks(items: list[Any], size: int = ENCODE_CHUNK) -> Iterator[list[bytes]]:
    """The stored JSON text of ``items``, ``size`` items at a time, in order.

    A TypeError for an item that cannot be stored (see ``encode_items_utf8``) comes
    when its chunk is encoded, after the earlier chunks were handed out: a caller that
    must write all or nothing writes the chunks inside one transaction, and rolls it
    back. The texts are orjson's own results, which may each hold a buffer far larger
    than their text (some KiB): ``compact`` them before keeping them.
    """
    for start in range(0, len(items), size):
        yield _encode_chunk(items[start : start + size], start)


def compact(texts: list[bytes]) -> list[bytes]:
    """Right-sized copies of ``texts``: orjson's results keep the buffer they were
    written into (several KiB even for a short text), which would multiply the memory
    of every text kept."""
    return [bytes(memoryview(text)) for text in texts]


def _encode_chunk(items: list[Any], offset: int) -> list[bytes]:
    """``encode_items_utf8`` of ``items``, which are ``items[offset:]`` of the batch
    (errors name their position in the batch); the texts are not compacted."""
    if not all_exact_dicts(items):
        items = [_as_dict(item, offset + index) for index, item in enumerate(items)]
    # Plain JSON data (the usual case, one check in the engine) is written by orjson as
    # it is; anything else (models, tuples, datetimes, ...) is made a tree first.
    if items and plain_json_copy(items, allow_shared=True) is None:
        items = [_plain_or_tree(item, offset + index) for index, item in enumerate(items)]
    try:
        encoded = list(map(orjson.dumps, items))
    except TypeError:
        encoded = [_encoded(item, offset + index) for index, item in enumerate(items)]
    # Only an item whose text holds "null" can hold a non-finite float (C-level scan).
    for index in compress(range(len(encoded)), map(contains, encoded, repeat(NULL))):
        if has_non_finite(items[index]):
            position = offset + index
            encoded[index] = _stdlib_text(_json_tree(items[index], position), position)
    for index in deep_positions(encoded):  # not expected: trees and plain data are not
        raise _too_deep_error(offset + index)
    return encoded


# --- reading ----------------------------------------------------------------------------


#: The rule for one stored row (``rows.decode_stored``), under its older name.
decode_row = decode_stored


def _fast_decoded(texts: list[Any]) -> list[Any] | None:
    """Every text decoded, when every one holds an item; None when one may not (it is
    then found, and reported, by the row-by-row decode)."""
    try:
        if deep_positions(texts):
            return None
        exact = long_integer_candidates(texts)
        items = list(map(orjson.loads, texts))
    except (orjson.JSONDecodeError, TypeError):  # TypeError: a text that is no text
        return None
    if not all_exact_dicts(items):
        return None
    try:
        for position in exact:
            items[position] = decode_row(texts[position])
    except CorruptRow:
        return None
    return items


def decode_id_rows(
    rows: list[tuple[int, Any]],
) -> tuple[list[int], list[Any], list[tuple[int, str]]]:
    """Decode ``(row_id, message_data)`` rows: ``(ids, items, corrupt)``.

    ``corrupt`` lists ``(row_id, reason)`` of the rows that hold no item (see
    ``decode_row``); they are left out of ``ids`` and ``items``.
    """
    items = _fast_decoded(list(map(_DATA, rows)))
    if items is not None:
        return list(map(_ROW_ID, rows)), items, []
    ids: list[int] = []
    items = []
    corrupt: list[tuple[int, str]] = []
    for row_id, data in rows:
        try:
            item = decode_row(data)
        except CorruptRow as exc:
            corrupt.append((row_id, str(exc)))
            continue
        ids.append(row_id)
        items.append(item)
    return ids, items, corrupt
