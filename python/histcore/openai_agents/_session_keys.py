"""The session-callback bookkeeping of ``prepare_input_with_session``, made cheap.

After a ``session_input_callback`` returns, the SDK keys every history copy, new item
copy and returned item by ``_session_item_key`` (``json.dumps(..., sort_keys=True,
default=str)`` without metadata keys) and matches returned objects through lists scanned
by identity. The keys never leave that call, so each object is keyed once: by the
engine's ``canonical_json`` when every item is a plain tree (``plain_tree``), else by
the SDK's own text, decided once per call; the reference map counts identities in a
dict (``_build_reference_map`` and ``_consume_reference`` are replaced together).

Rules: keys are remembered only after the callback returned, text keys only for exact
dicts whose encoding ran no user code, and the group is replaced only where these names
have no other users (``_table``: ``private_to``). Details: docs/design.md, "Drop-in
accelerator" ("Session-callback keys").
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from itertools import repeat
from types import ModuleType
from typing import Any

from histcore.engine import _support as engine_support
from histcore.engine import items as engine_items
from histcore.engine.vocabulary import METADATA_KEYS, all_exact_dicts
from histcore.openai_agents._replacements import intact, named_after, skipped_names
from histcore.openai_agents._sorted_json import ENGINE_TEXT, sorted_json
from histcore.openai_agents._watch import Watch

__all__ = [
    "CALL",
    "Call",
    "ReferenceMap",
    "canonical_key_setup",
    "canonical_key_table",
    "consume_reference",
    "make_build_frequency_map",
    "make_build_reference_map",
    "make_consume_reference",
    "make_session_item_key",
]

Key = str | bytes
KeyFunction = Callable[..., Key]


class ReferenceMap:
    """For each object of a list: its key, and how many times the list holds it.

    Stands for the SDK's ``{key: [objects]}``: taking an object out is O(1) here and
    needs no container per item. The list is kept, so the ids stay its objects'.
    """

    __slots__ = ("counts", "keys", "objects")

    def __init__(self, objects: list[Any]) -> None:
        self.objects = objects
        self.keys: dict[int, Key] = {}
        self.counts: dict[int, int] = {}


#: Deeper trees get SDK text keys (well within its recursion limit and histcore's MAX_DEPTH).
MAX_LEVELS = 200

_CONTAINERS: frozenset[type] = frozenset({dict, list, tuple})
_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_KEYABLE: frozenset[type] = _SCALARS | _CONTAINERS
#: What canonical_json drops from an item (docs/design.md), and keys the SDK may strip.
_CANONICAL_DROPS = frozenset(METADATA_KEYS)


def canonical_key_setup(stripped: frozenset[str] | None) -> frozenset[str] | None:
    """The keys the SDK strips beyond canonical_json's, or None to use no canonical keys.

    ``stripped`` is what the SDK's strip function removes (``_replacements.stripped_keys``,
    probed on its recognised source). Canonical keys need the Rust engine: the pure twin
    encodes slower than the SDK's C encoder.
    """
    if engine_items.BACKEND != "rust" or stripped is None or not _CANONICAL_DROPS <= stripped:
        return None
    return stripped - _CANONICAL_DROPS


class Call:
    """What one ``prepare_input_with_session`` call knows about its keys."""

    __slots__ = (
        "canonical",
        "captured",
        "decided",
        "extra_stripped",
        "key",
        "keys",
        "module",
        "pinned",
    )

    def __init__(
        self,
        module: ModuleType,
        extra_stripped: frozenset[str] | None,
        key: Callable[..., Any] | None = None,
    ) -> None:
        self.module = module
        #: the call's ``_session_item_key`` (pinned for the call), else the module's
        self.key = key if key is not None else module._session_item_key
        #: metadata keys the SDK strips beyond canonical_json's; None: no canonical keys
        self.extra_stripped = extra_stripped
        #: the callback's (history copies, new copies, returned list), once it returned
        self.captured: tuple[list[Any], list[Any], Any] | None = None
        self.decided = False
        #: True: keys are canonical_json bytes; False: the SDK's text
        self.canonical = False
        #: id -> key of the objects in ``pinned`` (holding them keeps their ids theirs)
        self.keys: dict[int, Key] = {}
        self.pinned: list[Any] = []


CALL: ContextVar[Call | None] = ContextVar("histcore_session_keys_call", default=None)


def plain_tree(roots: Iterable[Any], allowed: frozenset[type]) -> bool:
    """Whether the trees under ``roots`` hold only ``allowed`` types and end within
    ``MAX_LEVELS`` levels.

    A level at a time, with C-level calls (``gc.get_referents`` on a whole level at
    once). A dict whose keys are all exact str does not report its keys; any other dict
    does, so their types are checked too. A container may appear more than once; a
    cycle fails (its level never empties), and a walk that meets more objects than a
    budget proportional to the roots stops, so shared structures cannot make it blow up.
    """
    level = list(roots)
    budget = 1024 * len(level) + (1 << 20)
    visited = 0
    for _ in range(MAX_LEVELS):
        kinds = set(map(type, level))
        if not kinds <= allowed:
            return False
        if kinds.isdisjoint(_CONTAINERS):
            return True
        # Scalars have no referents: the next level is the containers' contents.
        visited += len(level)
        if visited > budget:
            return False
        level = gc.get_referents(*level)
    return False


def canonical_key_table(call: Call) -> dict[int, Key] | None:
    """Canonical keys for every object the classification will meet, if all are plain."""
    assert call.captured is not None
    history, new_items, combined = call.captured
    if type(history) is not list or type(new_items) is not list or type(combined) is not list:
        return None
    everything = [*history, *new_items, *combined]
    unique = list(dict(zip(map(id, everything), everything, strict=True)).values())
    if unique and not all_exact_dicts(unique):
        return None
    if not plain_tree(unique, _KEYABLE):
        return None
    keys = list(map(engine_items.canonical_json, unique))
    extra = call.extra_stripped
    if extra and any(any(map(dict.__contains__, unique, repeat(key))) for key in extra):
        strip = call.module.strip_internal_input_item_metadata
        for index, item in enumerate(unique):
            if not extra.isdisjoint(item):
                keys[index] = engine_items.canonical_json(strip(item))
    call.pinned += unique
    return dict(zip(map(id, unique), keys, strict=True))


def _decide(ignore_ids: bool) -> None:
    call = CALL.get()
    if call is None or call.decided:
        return
    call.decided = True
    if call.captured is None or ignore_ids:
        return  # no callback seen, or the OpenAI conversation variant: the SDK's text
    if call.extra_stripped is None:
        return  # canonical keys are off (see ``canonical_key_setup``)
    table = canonical_key_table(call)
    if table is not None:
        call.keys = table
        call.canonical = True


def make_session_item_key(
    original: Callable[..., str], module: ModuleType, watch: Watch | None = None
) -> KeyFunction:
    """``_session_item_key``: the call's key when one is decided, else the SDK's text."""
    unchanged = intact(watch)
    names = skipped_names(module)
    write = ENGINE_TEXT if names is not None else None
    skip = names or ()

    @named_after(original)
    def _session_item_key(item: Any, *, ignore_openai_conversation_item_ids: bool = False) -> Key:
        if type(item) is not dict or ignore_openai_conversation_item_ids or not unchanged():
            return original(
                item, ignore_openai_conversation_item_ids=ignore_openai_conversation_item_ids
            )
        call = CALL.get()
        remember = call is not None and call.decided
        if remember:
            assert call is not None
            known = call.keys.get(id(item))
            if known is not None:
                return known
            if call.canonical:
                # Not met by the decision (no recognised release asks for one): key it
                # the same way if it can be, so the two kinds of key do not meet.
                key = _canonical_key(item, call)
                if key is not None:
                    call.pinned.append(item)
                    call.keys[id(item)] = key
                    return key
        written = write(item, skip) if write is not None else None
        if written is not None:
            # The engine's text leaves out what the module's stripping drops; no user code ran.
            if remember:
                assert call is not None
                call.pinned.append(item)
                call.keys[id(item)] = written
            return written
        try:
            # The module's own metadata stripping: which keys it drops depends on the release.
            text, used_default = sorted_json(module.strip_internal_input_item_metadata(item))
        except Exception:
            return original(item)  # it answers repr(item) for what cannot be encoded
        if remember and not used_default:
            assert call is not None
            call.pinned.append(item)
            call.keys[id(item)] = text
        return text

    return _session_item_key


def _canonical_key(item: Any, call: Call) -> bytes | None:
    if not plain_tree([item], _KEYABLE):
        return None
    extra = call.extra_stripped
    if extra and not extra.isdisjoint(item):
        item = call.module.strip_internal_input_item_metadata(item)
    key: bytes = engine_items.canonical_json(item)
    return key


def make_build_reference_map(
    key: KeyFunction,
    original: Callable[..., Any] | None = None,
    watch: Watch | None = None,
) -> Callable[..., Any]:
    """``_build_reference_map`` producing the map ``consume_reference`` reads.

    With ``original`` and ``watch``: the SDK's own map (which ``consume_reference``
    also reads) once anything the group relies on was rebound."""
    unchanged = intact(watch)

    def _build_reference_map(
        items: Iterable[Any], *, ignore_openai_conversation_item_ids: bool = False
    ) -> Any:
        if original is not None and not unchanged():
            return original(
                items, ignore_openai_conversation_item_ids=ignore_openai_conversation_item_ids
            )
        _decide(ignore_openai_conversation_item_ids)
        refs = ReferenceMap(list(items))
        keys, counts = refs.keys, refs.counts
        for item in refs.objects:
            ident = id(item)
            keys[ident] = key(
                item, ignore_openai_conversation_item_ids=ignore_openai_conversation_item_ids
            )
            counts[ident] = counts.get(ident, 0) + 1
        return refs

    return _build_reference_map


def consume_reference(ref_map: ReferenceMap, key: Key, candidate: Any) -> bool:
    """Take one occurrence of the very object ``candidate`` under ``key``, if there is one."""
    ident = id(candidate)
    left = ref_map.counts.get(ident)
    if not left or ref_map.keys[ident] != key:
        return False
    ref_map.counts[ident] = left - 1
    return True


def make_consume_reference(original: Callable[..., bool]) -> Callable[..., bool]:
    """``_consume_reference`` reading either map: ours, or the SDK's own, which the
    original builder makes once the group saw a rebinding."""

    @named_after(original)
    def _consume_reference(ref_map: Any, key: Any, candidate: Any) -> bool:
        if type(ref_map) is ReferenceMap:
            return consume_reference(ref_map, key, candidate)
        return original(ref_map, key, candidate)

    return _consume_reference


def make_build_frequency_map(
    key: KeyFunction,
    original: Callable[..., dict[Any, int]] | None = None,
    watch: Watch | None = None,
    module: ModuleType | None = None,
) -> Callable[..., dict[Any, int]]:
    """``_build_frequency_map`` counting by the same keys as the reference map (the
    SDK's own, with ``original`` and ``watch``, once anything was rebound).

    Outside a preparation (no keys decided), a list of dicts whose every key the engine
    writes (``module``'s stripping known) is keyed in one engine call and counted in C.
    """
    unchanged = intact(watch)
    names = skipped_names(module)
    batch = ENGINE_TEXT is not None and names is not None
    skip = names or ()

    def _build_frequency_map(
        items: Iterable[Any], *, ignore_openai_conversation_item_ids: bool = False
    ) -> dict[Any, int]:
        if original is not None and not unchanged():
            return original(
                items, ignore_openai_conversation_item_ids=ignore_openai_conversation_item_ids
            )
        _decide(ignore_openai_conversation_item_ids)
        if (
            batch
            and type(items) is list
            and not ignore_openai_conversation_item_ids
            and CALL.get() is None
        ):
            texts = engine_support.dict_sorted_json_texts(items, skip)
            if None not in texts:
                # Counter counts in C, keys in first-seen order, as the loop below.
                return dict(Counter(texts))
        counts: dict[Key, int] = {}
        for item in items:
            text = key(
                item, ignore_openai_conversation_item_ids=ignore_openai_conversation_item_ids
            )
            counts[text] = counts.get(text, 0) + 1
        return counts

    return _build_frequency_map
