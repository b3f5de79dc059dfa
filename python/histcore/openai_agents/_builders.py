"""The named builders of ``_table``'s targets: ``(original, site) -> replacement``.

Each makes one replacement from the SDK's original and its ``Site`` (the group's
module, the group's replacements built so far, the watch, the installation's context:
the guard link, and with ``install(guard=True)`` the guard's counts and re-guarding).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from histcore.openai_agents import _async_sqlite_read as async_sqlite_read
from histcore.openai_agents import _encrypted_read as encrypted_read
from histcore.openai_agents import _guard as guard
from histcore.openai_agents import _guard_history as guard_history
from histcore.openai_agents import _prepare_input as preparing
from histcore.openai_agents import _replacements as replacements
from histcore.openai_agents import _session_keys as session_keys
from histcore.openai_agents import _session_read as session_read
from histcore.openai_agents import _sqlalchemy_read as sqlalchemy_read
from histcore.openai_agents import _stand_ins as stand_ins
from histcore.openai_agents import _turn_input as turn_input
from histcore.openai_agents._guard_counts import GuardCounts
from histcore.openai_agents._patches import Build, Rebind, Site
from histcore.openai_agents._watch import Watch

__all__ = [
    "async_sqlite_get_items",
    "clone_original_input",
    "consume_reference",
    "copy_module",
    "dedupe_key",
    "deduplicate",
    "deduplicate_latest",
    "drop_orphans",
    "encrypted_unwrap_valid_items",
    "ensure_format",
    "fingerprint",
    "frequency_map",
    "guard_of",
    "guarded_dedupe",
    "guarded_filter",
    "json_module",
    "keeping_orphans",
    "normalize",
    "prepare_input",
    "reference_map",
    "session_item_key",
    "sqlalchemy_get_items",
    "sqlite_get_items",
    "to_dump_compatible",
    "turn_input_items",
    "unwatched",
]


# --- builders: (the SDK's original, its Site) -> the replacement ----------------------


def _watched(make: Callable[[Any, Watch], Any]) -> Build:
    """The builder of ``make(original, watch)``."""
    return lambda original, site: make(original, site.watch)


def _module_watched(make: Callable[[Any, ModuleType, Watch], Any]) -> Build:
    """The builder of ``make(original, module, watch)``, the module being the group's."""
    return lambda original, site: make(original, site.module, site.watch)


dedupe_key = _watched(replacements.make_dedupe_key)
drop_orphans = _watched(replacements.make_drop_orphan_function_calls)
ensure_format = _watched(replacements.make_ensure_input_item_format)
to_dump_compatible = _watched(replacements.make_to_dump_compatible)
clone_original_input = _watched(replacements.make_clone_original_input)
json_module = _watched(stand_ins.JsonModule)
copy_module = _watched(stand_ins.CopyModule)
fingerprint = _module_watched(replacements.make_fingerprint_input_item)
normalize = _module_watched(replacements.make_normalize_input_items_for_api)
session_item_key = _module_watched(session_keys.make_session_item_key)
sqlite_get_items = _module_watched(session_read.make_get_items)
async_sqlite_get_items = _module_watched(async_sqlite_read.make_get_items)
sqlalchemy_get_items = _module_watched(sqlalchemy_read.make_get_items)
encrypted_unwrap_valid_items = _module_watched(encrypted_read.make_unwrap_valid_items)
turn_input_items = _module_watched(turn_input.make_prepare_turn_input_items)


def deduplicate(original: Any, site: Site) -> Any:
    return replacements.make_deduplicate(original, False, site.watch, site.context.link)


def deduplicate_latest(original: Any, site: Site) -> Any:
    return replacements.make_deduplicate(original, True, site.watch, site.context.link)


def reference_map(original: Any, site: Site) -> Any:
    key = site.built["_session_item_key"]
    return session_keys.make_build_reference_map(key, original, site.watch)


def frequency_map(original: Any, site: Site) -> Any:
    key = site.built["_session_item_key"]
    return session_keys.make_build_frequency_map(key, original, site.watch, site.module)


def consume_reference(original: Any, site: Site) -> Any:
    return session_keys.make_consume_reference(original)


def prepare_input(original: Any, site: Site) -> Any:
    return preparing.make_prepare_input_with_session(
        original, site.module, site.watch, pinned=dict(site.built)
    )


# --- the guard's builders (``install(guard=True)``) -----------------------------------


def guard_of(site: Site) -> tuple[GuardCounts, Rebind]:
    counts, rebind = site.context.guard, site.context.rebind
    if counts is None or rebind is None:
        raise ValueError("the guard's groups are built by install(guard=True) only")
    return counts, rebind


def keeping_orphans(original: Any, site: Site) -> Any:
    counts, _ = guard_of(site)
    return guard_history.make_keeping_orphans(original, counts)


def guarded_dedupe(original: Any, site: Site) -> Any:
    counts, _ = guard_of(site)
    return guard.make_guarded_dedupe(original, site.module, counts, site.context.link)


def guarded_filter(original: Any, site: Site) -> Any:
    counts, rebind = guard_of(site)
    module, link = site.module, site.context.link

    def guarded(binding: Any) -> Any:
        return guard.make_guarded_dedupe(binding, module, counts, link)

    def reguard(binding: Any) -> None:
        rebind(module, guard.DEDUPE, binding, guarded)

    return guard.make_guarded_filter(original, module, link, reguard)


def unwatched(_: Any) -> Watch:
    """The guard's wrappers are not drop-ins: they wrap whatever is bound, unwatched."""
    return Watch(())
