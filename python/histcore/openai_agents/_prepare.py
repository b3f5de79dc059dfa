"""The common case of the SDK's ``prepare_input_with_session``, done in batches.

The case: a session that is not an OpenAI conversation, history included in the
prepared input, and a callable ``session_input_callback`` or none. There the SDK walks
the history item by item in Python several times (copies, metadata stripping, a deep
copy for the callback, keys for what it returned). This module takes the same steps, in
the same order, with the SDK's helpers for anything not a plain dict, over whole lists:
C-level copies, the engine's deep copy, one key per object (``_session_keys``).

Rule: the prepared input and the items to persist are the SDK's, the same values in the
same order (differential tests over generated sessions and callbacks). Other cases, and
releases whose function this does not follow (``_versions.BATCH_PREPARE_DIGESTS``), run
the SDK's own (``_prepare_input``). Details: docs/design.md, "Drop-in accelerator"
("Fewer copies in the callback path").
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import compress
from operator import not_
from types import ModuleType
from typing import Any

from histcore.engine.vocabulary import all_exact_dicts
from histcore.openai_agents import _session_keys as session_keys
from histcore.openai_agents._copies import deep_copy
from histcore.openai_agents._replacements import plain_copies
from histcore.openai_agents._session_keys import Call
from histcore.openai_agents._session_read import fresh_copy, kept_handout

__all__ = ["applies", "prepare"]


def applies(module: ModuleType, arguments: dict[str, Any]) -> bool:
    """Whether a call with these (bound) arguments is the case this module handles."""
    session = arguments.get("session")
    callback = arguments.get("session_input_callback")
    return (
        session is not None
        and (callback is None or callable(callback))
        and arguments.get("include_history_in_prepared_input", True) is True
        and not isinstance(session, module.OpenAIConversationsSession)
    )


def _ensured(module: ModuleType, items: list[Any]) -> list[Any]:
    """``[ensure_input_item_format(item) for item in items]``: a copy of each dict."""
    copies = plain_copies(items)
    if copies is not None:
        return copies
    ensure = module.ensure_input_item_format
    return [ensure(item) for item in items]


def _for_pruning(module: ModuleType, combined: list[Any]) -> list[Any]:
    """What the orphan pruning may read in place of ``_ensured(module, combined)``.

    When every item is an exact dict, the SDK's copies would only be read by the
    pruning, which keeps items as they are, and then copied again by normalising, which
    copies every dict: the items themselves give the same result, one copy fewer.
    """
    if type(combined) is list and all_exact_dicts(combined):
        return list(combined)
    return _ensured(module, combined)


def _converted(module: ModuleType, items: list[Any], stripped: frozenset[str] | None) -> list[Any]:
    """``[strip(ensure(item)) for item in items]``: stripping copies, so one copy each,
    and a plain copy (in C) when no item holds a key the SDK strips."""
    if stripped is not None:
        copies = plain_copies(items, stripped)
        if copies is not None:
            return copies
    strip = module.strip_internal_input_item_metadata
    if all_exact_dicts(items):
        return list(map(strip, items))
    ensure = module.ensure_input_item_format
    return [strip(ensure(item)) for item in items]


def _deep_copied(module: ModuleType, items: list[Any]) -> list[Any]:
    copied = deep_copy(items)
    if copied is not None:
        return copied
    result: list[Any] = module.copy.deepcopy(items)
    return result


def _one_copy(
    module: ModuleType, new_input: Any, stripped: frozenset[str] | None, policy: Any
) -> bool:
    """Whether the history copies handed to the callback may be one deep copy of the
    history read (``_history_copies``).

    The SDK makes them in two steps: a stripping copy of each item (and its reasoning-id
    policy), then a deep copy of those. When no item holds a key it strips and the
    policy keeps the list as it is, the first copy only feeds the second: one deep copy
    of the history gives the same values, all in new containers. Only for a str input,
    whose conversion runs no code in between.
    """
    if stripped is None or type(new_input) is not str:
        return False
    probe: list[Any] = []
    return module.apply_reasoning_item_id_policy(probe, policy) is probe


def _history_copies(history: list[Any], stripped: frozenset[str] | None) -> list[Any] | None:
    """One deep copy of the history read, or None (an item holds a key the SDK strips)."""
    return deep_copy(history, stripped or frozenset()) if type(history) is list else None


def _keys(
    module: ModuleType, call: Call
) -> tuple[Callable[[Any], Any], Callable[[list[Any]], Iterator[Any]]]:
    """(key of one object, keys of a list) for the objects the classification meets,
    decided once for the call: canonical keys when all are plain, else the call's
    ``_session_item_key`` (the SDK's text, remembered in ``call``)."""
    call.decided = True
    table = session_keys.canonical_key_table(call) if call.extra_stripped is not None else None
    if table is None:
        key: Callable[[Any], Any] = call.key

        def text_keys(items: list[Any]) -> Iterator[Any]:
            return map(key, items)

        return key, text_keys
    call.keys, call.canonical = table, True
    lookup = table.__getitem__

    def canonical_key(item: Any) -> Any:
        return lookup(id(item))

    def canonical_keys(items: list[Any]) -> Iterator[Any]:
        return map(lookup, map(id, items))

    return canonical_key, canonical_keys


def _by_identity(
    new_items: list[Any], combined: list[Any], original_history_ids: set[int]
) -> tuple[set[int], list[Any]] | None:
    """The classification when identity alone decides every item, else None.

    An item is decided by identity when it is any original history copy (history,
    whether or not it is also taken as a new-item copy) or a new-item copy whose
    occurrence is not taken yet (persisted). Only the others (reconstructions, made-up
    items, repeats of a new copy, objects the callback put into its history list) are
    compared by content, and only then are keys needed: the common callbacks (keep,
    trim, reorder, append) never need one.
    """
    ids = list(map(id, combined))
    in_history = list(map(original_history_ids.__contains__, ids))
    positions = range(len(combined))
    # Taking a history copy as a history or a new-item occurrence only lowers counts
    # that no other item here reads (other objects, or content never compared).
    prune = set(compress(positions, in_history))
    new_refs: dict[int, int] = Counter(map(id, new_items))
    appended: list[Any] = []
    # The rest (the few new items, usually) one by one, in order.
    for position in compress(positions, map(not_, in_history)):
        ident = ids[position]
        if not new_refs.get(ident):
            return None
        new_refs[ident] -= 1
        appended.append(combined[position])
    return prune, appended


def _classify(
    module: ModuleType,
    call: Call,
    history: list[Any],
    new_items: list[Any],
    combined: list[Any],
    original_history_ids: set[int],
) -> tuple[set[int], list[Any]]:
    """(positions of ``combined`` that are history, objects to persist), as the SDK decides.

    First the very copies (each occurrence in the lists taken once, new items first),
    then any object that is a history copy, then content equal to a history occurrence
    not yet taken; everything else is persisted. (The SDK also counts new-item
    content, but both of its outcomes for that count persist the item.)
    """
    decided = _by_identity(new_items, combined, original_history_ids)
    if decided is not None:
        call.decided = True
        return decided
    key_of, keys_of = _keys(module, call)
    history_refs: dict[int, int] = Counter(map(id, history))
    new_refs: dict[int, int] = Counter(map(id, new_items))
    history_counts: dict[Any, int] = Counter(keys_of(history))
    prune: set[int] = set()
    appended: list[Any] = []
    for position, item in enumerate(combined):
        ident = id(item)
        left = new_refs.get(ident)
        if left:
            new_refs[ident] = left - 1
            if ident in original_history_ids:
                prune.add(position)
            else:
                appended.append(item)
            continue
        left = history_refs.get(ident)
        if left:
            history_refs[ident] = left - 1
            key = key_of(item)
            count = history_counts[key]
            history_counts[key] = count - 1 if count > 0 else 0
            prune.add(position)
        elif ident in original_history_ids:
            prune.add(position)
        else:
            key = key_of(item)
            count = history_counts.get(key, 0)
            if count > 0:
                history_counts[key] = count - 1
                prune.add(position)
            else:
                appended.append(item)
    return prune, appended


async def prepare(
    module: ModuleType,
    call: Call,
    arguments: dict[str, Any],
    stripped: frozenset[str] | None,
    capture: bool = True,
) -> Any:
    """The SDK's result for a call ``applies`` accepted (``arguments`` bound by name);
    ``capture``: the release's history read asks for the compaction generation."""
    session = arguments["session"]
    callback = arguments["session_input_callback"]
    session_settings = arguments.get("session_settings")
    wrapper = arguments.get("wrapper")

    settings = getattr(session, "session_settings", None) or module.SessionSettings()
    if session_settings is not None:
        settings = settings.resolve(session_settings)
    read: dict[str, Any] = {"wrapper": wrapper}
    if capture:
        read["capture_compaction_generation"] = True
    if settings.limit is not None:
        read["limit"] = settings.limit
    policy = arguments.get("reasoning_item_id_policy")
    if callback is None:
        history = await module._session_get_items(session, **read)
        return _without_callback(module, history, arguments, stripped, settings.limit is not None)
    one_copy = _one_copy(module, arguments["input"], stripped, policy)
    # With one copy to make, the read may hand out the session's kept history itself
    # (_session_read): then the copy below is the only one.
    with kept_handout(session if one_copy else None) as handout:
        history = await module._session_get_items(session, **read)
    history_copies = _history_copies(history, stripped) if one_copy else None
    if history_copies is None and handout.items is not None and handout.items is history:
        history = fresh_copy(history)  # the read's own copy, made now
    if history_copies is None:
        converted = module.apply_reasoning_item_id_policy(
            _converted(module, list(history), stripped), policy
        )
    new_input = _ensured(module, module.ItemHelpers.input_to_new_input_list(arguments["input"]))

    if history_copies is None:
        history_copies = _deep_copied(module, converted)
    new_copies = _deep_copied(module, new_input)
    # Kept alive so the ids stay theirs even if the callback drops them from its list.
    original_history = list(history_copies)
    original_history_ids = set(map(id, original_history))
    combined = callback(history_copies, new_copies)
    if inspect.isawaitable(combined):
        combined = await combined
    if not isinstance(combined, list):
        raise module.UserError("Session input callback must return a list of input items.")
    call.captured = (history_copies, new_copies, combined)

    prune, appended = _classify(
        module, call, history_copies, new_copies, combined, original_history_ids
    )
    appended_items = _ensured(module, appended)
    filtered = module.drop_orphan_function_calls(
        _for_pruning(module, combined), pruning_indexes=prune, output_pruning_indexes=None
    )
    prepared = module.deduplicate_input_items_preferring_latest(
        module.normalize_input_items_for_api(filtered)
    )
    return prepared, module.normalize_input_items_for_api(_ensured(module, appended_items))


def _without_callback(
    module: ModuleType,
    history: list[Any],
    arguments: dict[str, Any],
    stripped: frozenset[str] | None,
    limited: bool,
) -> Any:
    """The SDK's branch without a callback: the history, then the new input, each history
    position pruned as history (its outputs too when the read was limited), the new input
    persisted. Whole-list copies where the SDK makes one per item (two per history item:
    converting, then ``ensure_input_item_format`` of the prepared list)."""
    policy = arguments.get("reasoning_item_id_policy")
    converted = module.apply_reasoning_item_id_policy(
        _converted(module, list(history), stripped), policy
    )
    new_input = _ensured(module, module.ItemHelpers.input_to_new_input_list(arguments["input"]))
    prune = set(range(len(converted)))
    filtered = module.drop_orphan_function_calls(
        _for_pruning(module, converted + new_input),
        pruning_indexes=prune,
        output_pruning_indexes=set(prune) if limited else None,
    )
    prepared = module.deduplicate_input_items_preferring_latest(
        module.normalize_input_items_for_api(filtered)
    )
    return prepared, module.normalize_input_items_for_api(_ensured(module, list(new_input)))
