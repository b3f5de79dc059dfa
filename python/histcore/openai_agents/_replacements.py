"""histcore-backed stand-ins for the SDK's item helpers.

Each ``make_*`` takes the SDK's original and returns a function with its signature.
Rule: a stand-in takes histcore's path only for input on which histcore's result is the
SDK's, decided by the engine in the pass that computes it (the ``screened_*``
functions, ``shallow_dict_copies`` and ``plain_json_copy`` answer NotImplemented or None
where they cannot promise it); anything else goes to the original, exceptions included.
What each screen rules out, and why, is said where it is; the two differences on plain
dicts (dedupe keys with a non-str ``type`` or str subclasses, orphan pruning with
``pruning_indexes``) are in docs/design.md, "Drop-in accelerator" ("Screening in the
engine"). The others produce the SDK's very values by cheaper means: a
reused C encoder for fingerprints, one shallow copy per dict when normalising, engine
copies of whole histories (``_copies``).
"""

from __future__ import annotations

import copy as stdlib_copy
import functools
import inspect
import json as stdlib_json
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast

from histcore.engine import _support as engine_support
from histcore.engine import items as engine_items
from histcore.engine.collector import paused_for
from histcore.engine.exact_json import loads_like_stdlib
from histcore.engine.vocabulary import all_exact_dicts
from histcore.openai_agents._copies import deep_copy, dump_compatible_copy
from histcore.openai_agents._sorted_json import ENGINE_TEXT, sorted_json
from histcore.openai_agents._watch import Watch

__all__ = [
    "CopyModule",
    "JsonModule",
    "checked_dedupe_of",
    "dressed_as",
    "make_clone_original_input",
    "make_dedupe_key",
    "make_deduplicate",
    "make_drop_orphan_function_calls",
    "make_ensure_input_item_format",
    "make_fingerprint_input_item",
    "make_normalize_input_items_for_api",
    "make_to_dump_compatible",
    "named_after",
    "plain_copies",
    "stripped_keys",
]

# The SDK's name and docstring (and ``__wrapped__``), but our own ``__module__``, so a
# replacement is never mistaken for the SDK's function.
named_after = functools.partial(functools.wraps, assigned=("__name__", "__qualname__", "__doc__"))


def dressed_as(original: Callable[..., Any], call: Any, signature_of: Callable[..., Any]) -> Any:
    """``call``, an engine callable object, with ``original``'s name and docstring and
    ``signature_of``'s signature: inspect cannot read a callable object's, and what it
    accepts is that function's (anything else goes on to a fallback that has it)."""
    dressed: Any = named_after(original)(call)
    dressed.__signature__ = inspect.signature(signature_of)
    return dressed


def _always() -> bool:
    return True


def intact(watch: Watch | None) -> Callable[[], bool]:
    """The check a replacement makes before taking its own path: that nothing its
    original looks up was rebound (``_watch``). Without a watch, always true."""
    return _always if watch is None else watch.check.intact


# --- dedupe ------------------------------------------------------------------------
# The engine screens the input itself (``screened_*``: NotImplemented for what it cannot
# answer exactly as the SDK does), so no Python pass runs over the items first.


def make_dedupe_key(
    original: Callable[[Any], str | None], watch: Watch | None = None
) -> Callable[[Any], str | None]:
    """The engine's ``ScreenedKey``: one call into the engine per item, which checks the
    watch and screens the item itself, and calls ``original`` where it cannot answer."""
    check = None if watch is None else watch.check
    key = dressed_as(original, engine_support.ScreenedKey(original, check), original)
    return cast("Callable[[Any], str | None]", key)


def make_deduplicate(
    original: Callable[[Sequence[Any]], list[Any]],
    preferring_latest: bool,
    watch: Watch | None = None,
) -> Callable[[Sequence[Any]], list[Any]]:
    """A dedupe (first-wins, or latest-value) running the engine's on lists it screens.

    Its ``checked_dedupe`` (see ``checked_dedupe_of``) also gives the model-input problems
    of what it keeps, read in the same pass."""
    screened = engine_support.screened_deduplicate
    screened_checked = engine_support.screened_deduplicate_checked
    check = None if watch is None else watch.check

    @named_after(original)
    def deduplicate(items: Sequence[Any]) -> list[Any]:
        result = screened(items, preferring_latest, check)
        if result is not NotImplemented:
            return cast("list[Any]", result)
        return original(items)

    def checked(items: Sequence[Any], history: Any) -> Any:
        return screened_checked(items, preferring_latest, check, history=history)

    deduplicate.checked_dedupe = checked  # type: ignore[attr-defined]
    return deduplicate


def checked_dedupe_of(dedupe: Callable[..., Any]) -> Callable[[Sequence[Any], Any], Any] | None:
    """For a dedupe of ``make_deduplicate``: a function of ``(items, history)`` giving
    ``(dedupe(items), input_problems(dedupe(items), history=history))`` in one engine pass
    (``history``: a ``StoredHistory`` or None), or NotImplemented where the engine's dedupe
    declines (then the dedupe is the SDK's). None for any other function."""
    return cast(
        "Callable[[Sequence[Any], Any], Any] | None", getattr(dedupe, "checked_dedupe", None)
    )


# --- orphan pruning ----------------------------------------------------------------


def make_drop_orphan_function_calls(
    original: Callable[..., list[Any]], watch: Watch | None = None
) -> Callable[..., list[Any]]:
    screened = engine_support.screened_drop_orphan_function_calls
    check = None if watch is None else watch.check

    @named_after(original)
    def drop_orphan_function_calls(
        items: list[Any],
        *,
        pruning_indexes: set[int] | None = None,
        output_pruning_indexes: set[int] | None = None,
    ) -> list[Any]:
        kept = screened(
            items, pruning_indexes, output_pruning_indexes=output_pruning_indexes, watch=check
        )
        if kept is not NotImplemented:
            return cast("list[Any]", kept)
        return original(
            items, pruning_indexes=pruning_indexes, output_pruning_indexes=output_pruning_indexes
        )

    return drop_orphan_function_calls


# --- fingerprint -------------------------------------------------------------------


def make_fingerprint_input_item(
    original: Callable[..., str | None], module: ModuleType, watch: Watch | None = None
) -> Callable[..., str | None]:
    """The SDK's fingerprint text for dict items: from the engine in one pass (the
    metadata keys the SDK strips, and ``id`` when ids are ignored, left out as it
    writes), else from a reused encoder. On the Rust engine the replacement is the
    engine's ``DictText``: a plain dict's text costs one call, no Python frame."""
    unchanged = intact(watch)
    names = skipped_names(module)
    write = ENGINE_TEXT if names is not None else None
    skip = names or ()
    skip_ids = tuple(sorted({*skip, "id"}))

    @named_after(original)
    def fingerprint_input_item(item: Any, *, ignore_ids_for_matching: bool = False) -> str | None:
        if type(item) is dict and unchanged():
            if write is not None:
                text = write(item, skip_ids if ignore_ids_for_matching else skip)
                if text is not None:
                    return text
            payload = module.strip_internal_input_item_metadata(item)
            if type(payload) is dict:
                if ignore_ids_for_matching:
                    payload.pop("id", None)
                try:
                    return sorted_json(payload)[0]
                except Exception:
                    pass  # the original turns the failure into None
        return original(item, ignore_ids_for_matching=ignore_ids_for_matching)

    if write is None or engine_items.BACKEND != "rust":
        return fingerprint_input_item
    check = None if watch is None else watch.check
    in_engine = engine_support.DictText(fingerprint_input_item, skip, skip_ids, check)
    return cast(
        "Callable[..., str | None]", dressed_as(original, in_engine, fingerprint_input_item)
    )


# --- normalising items ---------------------------------------------------------------

_STRIP_CANDIDATES = ("_agents_tool_description", "_agents_tool_title", "created_by")


def stripped_keys(strip: Callable[[Any], Any]) -> frozenset[str] | None:
    """The top-level keys the SDK's metadata stripping removes, or None if it does more.

    Probed on the recognised source, so the candidates are all it can remove.
    """
    probe = dict.fromkeys((*_STRIP_CANDIDATES, "kept"), 0)
    result = strip(probe)
    if type(result) is not dict or result.get("kept") != 0 or len(result) + 1 > len(probe):
        return None
    return frozenset(probe) - frozenset(result)


def skipped_names(module: ModuleType | None) -> tuple[str, ...] | None:
    """The keys ``module``'s metadata stripping removes, sorted as the engine's text
    writers take them; None without a module or when its stripping does more."""
    if module is None:
        return None
    keys = stripped_keys(module.strip_internal_input_item_metadata)
    return None if keys is None else tuple(sorted(keys))


def plain_copies(items: Any, without: frozenset[str] = frozenset()) -> list[Any] | None:
    """``dict(item)`` of every item, when ``items`` is an exact list of exact dicts none
    of which holds a key in ``without``; else None. One engine pass, collector paused
    unless the list is short (the copies are new containers, not cycles)."""
    with paused_for(items):
        copies = engine_support.shallow_dict_copies(items, tuple(without))
    return None if copies is NotImplemented else cast("list[Any]", copies)


def make_normalize_input_items_for_api(
    original: Callable[[list[Any]], list[Any]], module: ModuleType, watch: Watch | None = None
) -> Callable[[list[Any]], list[Any]]:
    """One shallow copy per dict item (the original makes two), in C when none holds
    a key the SDK strips (then stripping is exactly a copy)."""
    keys = stripped_keys(module.strip_internal_input_item_metadata)
    unchanged = intact(watch)

    @named_after(original)
    def normalize_input_items_for_api(items: list[Any]) -> list[Any]:
        if not unchanged():
            return original(items)
        if keys is not None:
            copies = plain_copies(items, keys)
            if copies is not None:
                return copies
        if type(items) is not list or not all_exact_dicts(items):
            return original(items)
        # strip copies: what it returns for the item equals what it returns for a copy.
        return list(map(module.strip_internal_input_item_metadata, items))

    return normalize_input_items_for_api


def make_ensure_input_item_format(
    original: Callable[[Any], Any], watch: Watch | None = None
) -> Callable[[Any], Any]:
    unchanged = intact(watch)

    @named_after(original)
    def ensure_input_item_format(item: Any) -> Any:
        if type(item) is dict and unchanged():
            return dict(item)  # what the original's coercion makes of a dict
        return original(item)

    return ensure_input_item_format


# --- whole-list copies -------------------------------------------------------------


def _copying_lists(
    original: Callable[[Any], Any],
    fast_copy: Callable[[list[Any]], list[Any] | None],
    watch: Watch | None,
) -> Callable[[Any], Any]:
    """``original``, except that a list ``fast_copy`` can copy is copied by it."""
    unchanged = intact(watch)

    @named_after(original)
    def replacement(value: Any) -> Any:
        if type(value) is list and unchanged():
            copied = fast_copy(value)
            if copied is not None:
                return copied
        return original(value)

    return replacement


def make_to_dump_compatible(
    original: Callable[[Any], Any], watch: Watch | None = None
) -> Callable[[Any], Any]:
    """``_to_dump_compatible``: a list of plain JSON trees is copied in C."""
    return _copying_lists(original, dump_compatible_copy, watch)


def make_clone_original_input(
    original: Callable[[Any], Any], watch: Watch | None = None
) -> Callable[[Any], Any]:
    """``_clone_original_input``: a deep copy of a run's list input, in C when provable."""
    return _copying_lists(original, deep_copy, watch)


_ABSENT = object()


class _ModuleStandIn:
    """Stands in for a standard library module inside one SDK module: the calls it
    speeds up are its own methods, every other attribute is the module's.

    Its methods take their own path only while the module's functions they stand for
    (``SPED_UP``) and what those look up are the ones seen when the watch was armed:
    a patched ``json.loads`` or ``copy.deepcopy`` is called, as the SDK would.
    """

    SPED_UP: tuple[str, ...] = ()
    _OWN = frozenset({"_real", "_unchanged", "_saved"})

    def __init__(self, real: ModuleType, watch: Watch | None = None) -> None:
        self._real = real
        self._unchanged = intact(watch)
        #: what the module held before a patch made through the stand-in (to undo it)
        self._saved: dict[str, Any] = {}

    # A patch made through the SDK module's name (``mock.patch("...session_persistence.
    # copy.deepcopy", f)``, ``sqlite_session.json.dumps = f``) patches the module itself,
    # as it does without the stand-in; the watch then sends every call to it.
    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN or name.startswith("__"):
            object.__setattr__(self, name, value)  # the stand-in's own state (its class)
            return
        real = self._real
        if getattr(value, "__self__", None) is self:
            # A patch undone by putting back what getattr gave: the stand-in's method.
            if name in self._saved:
                self._restore(name)
            return
        self._saved.setdefault(name, vars(real).get(name, _ABSENT))
        setattr(real, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._saved:
            self._restore(name)
        else:
            delattr(self._real, name)

    def _restore(self, name: str) -> None:
        before = self._saved.pop(name)
        if before is _ABSENT:
            delattr(self._real, name)
        else:
            setattr(self._real, name, before)

    @classmethod
    def watch_for(cls, real: ModuleType) -> Watch:
        """A watch over the functions of ``real`` this stand-in speeds up."""
        namespace = vars(real)
        return Watch.over(
            [namespace[name] for name in cls.SPED_UP], [(namespace, name) for name in cls.SPED_UP]
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return f"<histcore {type(self).__name__} over {self._real!r}>"


class CopyModule(_ModuleStandIn):
    """Stands in for ``copy``: ``deepcopy`` of a list of plain dict items is made in C
    (``_copies.deep_copy``); every other call is the standard library's."""

    SPED_UP = ("deepcopy",)

    def __init__(self, real: ModuleType = stdlib_copy, watch: Watch | None = None) -> None:
        super().__init__(real, watch)

    def deepcopy(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and type(x) is list and self._unchanged():
            copied = deep_copy(x)
            if copied is not None:
                return copied
        return self._real.deepcopy(x, *args, **kwargs)


class JsonModule(_ModuleStandIn):
    """Stands in for ``json`` inside the SDK's SQLite session module.

    ``loads(text)`` reads with orjson where that gives exactly what ``json.loads``
    gives: text that may hold an integer beyond 64 bits (19 or more digits in a row,
    which orjson would read as a float) and text orjson refuses (NaN and Infinity
    tokens, lone surrogates, a BOM, other encodings, non-text values) go to the
    standard library, so the SDK sees its results and exceptions. Every other call
    (``dumps`` included, so stored text stays byte for byte the SDK's) is the standard
    library's.
    """

    SPED_UP = ("loads",)

    def __init__(self, real: ModuleType = stdlib_json, watch: Watch | None = None) -> None:
        super().__init__(real, watch)

    def reads_exactly(self) -> bool:
        """Whether ``loads`` is this stand-in's, with what it stands for unchanged (so a
        row it would read with orjson may be read with orjson directly)."""
        return bool(self._unchanged())

    def loads(self, s: Any, *args: Any, **kwargs: Any) -> Any:
        kind = type(s)
        if args or kwargs or (kind is not str and kind is not bytes) or not self._unchanged():
            return self._real.loads(s, *args, **kwargs)
        return loads_like_stdlib(s)
