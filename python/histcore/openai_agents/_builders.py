"""The named builders of ``_table``'s targets: ``(original, site) -> replacement``.

Each makes one replacement from the SDK's original and its ``Site`` (the group's
module, the group's replacements built so far, the watch, the installation's context:
the guard link, and with ``install(guard=True)`` the guard's counts and re-guarding).
"""

from __future__ import annotations

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
from histcore.openai_agents._patches import Rebind, Site
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


def dedupe_key(original: Any, site: Site) -> Any:
    return replacements.make_dedupe_key(original, site.watch)


def deduplicate(original: Any, site: Site) -> Any:
    return replacements.make_deduplicate(original, False, site.watch, site.context.link)


def deduplicate_latest(original: Any, site: Site) -> Any:
    return replacements.make_deduplicate(original, True, site.watch, site.context.link)


def drop_orphans(original: Any, site: Site) -> Any:
    return replacements.make_drop_orphan_function_calls(original, site.watch)


def fingerprint(original: Any, site: Site) -> Any:
    return replacements.make_fingerprint_input_item(original, site.module, site.watch)


def normalize(original: Any, site: Site) -> Any:
    return replacements.make_normalize_input_items_for_api(original, site.module, site.watch)


def ensure_format(original: Any, site: Site) -> Any:
    return replacements.make_ensure_input_item_format(original, site.watch)


def to_dump_compatible(original: Any, site: Site) -> Any:
    return replacements.make_to_dump_compatible(original, site.watch)


def clone_original_input(original: Any, site: Site) -> Any:
    return replacements.make_clone_original_input(original, site.watch)


def session_item_key(original: Any, site: Site) -> Any:
    return session_keys.make_session_item_key(original, site.module, site.watch)


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


def json_module(original: Any, site: Site) -> Any:
    return stand_ins.JsonModule(original, site.watch)


def copy_module(original: Any, site: Site) -> Any:
    return stand_ins.CopyModule(original, site.watch)


def sqlite_get_items(original: Any, site: Site) -> Any:
    return session_read.make_get_items(original, site.module, site.watch)


def async_sqlite_get_items(original: Any, site: Site) -> Any:
    return async_sqlite_read.make_get_items(original, site.module, site.watch)


def sqlalchemy_get_items(original: Any, site: Site) -> Any:
    return sqlalchemy_read.make_get_items(original, site.module, site.watch)


def encrypted_unwrap_valid_items(original: Any, site: Site) -> Any:
    return encrypted_read.make_unwrap_valid_items(original, site.module, site.watch)


def turn_input_items(original: Any, site: Site) -> Any:
    return turn_input.make_prepare_turn_input_items(original, site.module, site.watch)


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
