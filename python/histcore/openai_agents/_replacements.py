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

import functools
import inspect
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast

from histcore.engine import _support as engine_support
from histcore.engine import items as engine_items
from histcore.engine.collector import paused_for
from histcore.engine.vocabulary import all_exact_dicts
from histcore.openai_agents._copies import deep_copy, dump_compatible_copy
from histcore.openai_agents._guard_link import GuardLink
from histcore.openai_agents._sorted_json import ENGINE_TEXT, sorted_json
from histcore.openai_agents._stand_ins import CopyModule, JsonModule
from histcore.openai_agents._watch import Watch, intact

__all__ = [
    "CopyModule",
    "JsonModule",
    "dressed_as",
    "intact",
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
    link: GuardLink | None = None,
) -> Callable[[Sequence[Any]], list[Any]]:
    """A dedupe (first-wins, or latest-value) running the engine's on lists it screens.

    Its checking pass, recorded in ``link``, also gives the model-input problems of what
    it keeps, read in the same engine pass (``GuardLink.checked_of``)."""
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

    if link is not None:
        link.record(deduplicate, checked)
    return deduplicate


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
