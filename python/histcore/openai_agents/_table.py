"""The map of the drop-in: every SDK name ``install()`` replaces, where, and with what.

Each ``Group`` is replaced as a whole or not at all (``_patches`` recognises, plans,
binds and unbinds them); each ``Target`` names one SDK function (or module attribute)
and the named builder of its replacement. ``GROUPS`` are the drop-ins; ``GUARD_GROUPS``
are added by ``install(guard=True)``. Every SDK module path the drop-in knows is named
here; the releases are ``_versions``' (source digests). docs/design.md's table of
patches is generated from this module (``scripts/design_tables.py``).
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from typing import Any

from histcore.engine.vocabulary import (
    CALL_TO_OUTPUT_TYPE,
    PRECURSOR_TYPES,
    PROGRAM_OWNED_HOSTED_TYPES,
)
from histcore.openai_agents import _async_sqlite_read as async_sqlite_read
from histcore.openai_agents import _builders as builders
from histcore.openai_agents import _encrypted_read as encrypted_read
from histcore.openai_agents import _guard as guard
from histcore.openai_agents import _guard_history as guard_history
from histcore.openai_agents import _prepare as prepare
from histcore.openai_agents import _sqlalchemy_read as sqlalchemy_read
from histcore.openai_agents import _stand_ins as stand_ins
from histcore.openai_agents import _turn_input as turn_input
from histcore.openai_agents._patches import Build, Group, Site, Target
from histcore.openai_agents._versions import KNOWN_SOURCE_DIGESTS
from histcore.openai_agents._watch import Watch

__all__ = ["GROUPS", "GUARD_GROUPS", "PACKAGE"]

#: The SDK's import package: every module below is in it.
PACKAGE = "agents"

# The modules whose functions are replaced.
ITEMS = f"{PACKAGE}.run_internal.items"
SESSION = f"{PACKAGE}.run_internal.session_persistence"
RUN_LOOP = f"{PACKAGE}.run_internal.run_loop"
JSON_UTIL = f"{PACKAGE}.util._json"
RUN_STATE = f"{PACKAGE}.run_state"
SQLITE_SESSION = f"{PACKAGE}.memory.sqlite_session"
ASYNC_SQLITE_SESSION = f"{PACKAGE}.extensions.memory.async_sqlite_session"
SQLALCHEMY_SESSION = f"{PACKAGE}.extensions.memory.sqlalchemy_session"
ENCRYPTED_SESSION = f"{PACKAGE}.extensions.memory.encrypt_session"
# Modules that import a replaced function (``bind`` finds them itself; listed for the doc).
RUN = f"{PACKAGE}.run"
PUBLIC_ITEMS = f"{PACKAGE}.items"
OAI_CONVERSATION = f"{PACKAGE}.run_internal.oai_conversation"
TURN_RESOLUTION = f"{PACKAGE}.run_internal.turn_resolution"
COMPACTION_SESSION = f"{PACKAGE}.memory.openai_responses_compaction_session"
CHAT_COMPLETIONS = f"{PACKAGE}.models.openai_chatcompletions"
RESPONSES = f"{PACKAGE}.models.openai_responses"
ROLLOUTS = f"{PACKAGE}.sandbox.memory.rollouts"


def _sqlite_get_items() -> Any:
    """The SDK's ``SQLiteSession.get_items`` as bound now, or None."""
    module = sys.modules.get(SQLITE_SESSION)
    return getattr(getattr(module, "SQLiteSession", None), "get_items", None)


def _method(name: str, build: Build, watch: Callable[[Any], Watch] | None = None) -> Target:
    """The target of the method ``name`` (``Class.method``): bound on its class alone."""
    owner, _, attr = name.partition(".")
    return Target(attr, build, everywhere=False, owner=owner, watch=watch)


def _noting_history(original: Any, site: Site) -> Any:
    counts, _ = builders.guard_of(site)
    return guard_history.make_noting_session_get_items(
        original, prepare.prepare, counts, _sqlite_get_items
    )


# --- the table ------------------------------------------------------------------------

GROUPS: tuple[Group, ...] = (
    Group(
        name="dedupe",
        module=ITEMS,
        about="dedupe keys and the two dedupes",
        sources=(
            "_dedupe_key",
            "_coerce_to_dict",
            "_model_dump_without_warnings",
            "deduplicate_input_items",
            "deduplicate_input_items_preferring_latest",
        ),
        digests=KNOWN_SOURCE_DIGESTS["dedupe"],
        constants={
            "_TOOL_CALL_TO_OUTPUT_TYPE": CALL_TO_OUTPUT_TYPE,
            "_DEDUPE_EARLIEST_ANCHOR_ITEM_TYPES": PRECURSOR_TYPES,
            "FAKE_RESPONSES_ID": "__fake_id__",
        },
        targets=(
            Target("_dedupe_key", builders.dedupe_key),
            Target("deduplicate_input_items", builders.deduplicate),
            Target(
                "deduplicate_input_items_preferring_latest",
                builders.deduplicate_latest,
                imported_by=(RUN_LOOP, SESSION),
            ),
        ),
    ),
    Group(
        name="orphans",
        module=ITEMS,
        about="orphan function-call pruning",
        sources=(
            "drop_orphan_function_calls",
            "_drop_reasoning_items_preceding_dropped_calls",
            "_completed_call_ids_by_type",
            "_available_call_ids_by_output_type",
            "_get_program_caller_id",
            "_is_pending_hosted_shell_call",
            "_is_retained_program_owned_item",
            "_matched_anonymous_tool_search_call_indexes",
        ),
        digests=KNOWN_SOURCE_DIGESTS["orphans"],
        constants={
            "_TOOL_CALL_TO_OUTPUT_TYPE": CALL_TO_OUTPUT_TYPE,
            "_PROGRAM_OWNED_HOSTED_ITEM_TYPES": PROGRAM_OWNED_HOSTED_TYPES,
        },
        targets=(
            Target(
                "drop_orphan_function_calls",
                builders.drop_orphans,
                imported_by=(COMPACTION_SESSION, OAI_CONVERSATION, SESSION, TURN_RESOLUTION),
            ),
        ),
    ),
    Group(
        name="fingerprint",
        module=ITEMS,
        about="item fingerprints",
        sources=("fingerprint_input_item",),
        digests=KNOWN_SOURCE_DIGESTS["fingerprint"],
        targets=(
            Target(
                "fingerprint_input_item",
                builders.fingerprint,
                imported_by=(OAI_CONVERSATION, SESSION),
            ),
        ),
    ),
    Group(
        name="normalize",
        module=ITEMS,
        about="input normalisation and metadata stripping",
        sources=(
            "normalize_input_items_for_api",
            "ensure_input_item_format",
            "_coerce_to_dict",
            "strip_internal_input_item_metadata",
        ),
        digests=KNOWN_SOURCE_DIGESTS["normalize"],
        targets=(
            Target(
                "normalize_input_items_for_api",
                builders.normalize,
                imported_by=(COMPACTION_SESSION, OAI_CONVERSATION, SESSION),
            ),
            Target(
                "ensure_input_item_format", builders.ensure_format, imported_by=(RUN_LOOP, SESSION)
            ),
        ),
    ),
    Group(
        name="to_dump_compatible",
        module=JSON_UTIL,
        about="the dump-compatible copy",
        sources=("_to_dump_compatible", "_to_dump_compatible_internal"),
        digests=KNOWN_SOURCE_DIGESTS["to_dump_compatible"],
        targets=(
            Target(
                "_to_dump_compatible",
                builders.to_dump_compatible,
                imported_by=(PUBLIC_ITEMS, CHAT_COMPLETIONS, RESPONSES, RUN_STATE, ROLLOUTS),
            ),
        ),
    ),
    Group(
        name="clone_original_input",
        module=RUN_STATE,
        about="the copy of a run's original input",
        sources=("_clone_original_input",),
        digests=KNOWN_SOURCE_DIGESTS["clone_original_input"],
        targets=(Target("_clone_original_input", builders.clone_original_input),),
    ),
    Group(
        name="session_keys",
        module=SESSION,
        about=(
            "`prepare_input_with_session`, with histcore's session-item keys and maps "
            "pinned for each call (never bound in the module)"
        ),
        sources=(
            "_session_item_key",
            "_build_reference_map",
            "_build_frequency_map",
            "_consume_reference",
            "prepare_input_with_session",
            # Imported from items: its stripped keys decide what canonical keys may skip.
            "strip_internal_input_item_metadata",
        ),
        digests=KNOWN_SOURCE_DIGESTS["session_keys"],
        # The keys and the map shape change: only these functions may see them.
        private_to={
            "_session_item_key": (
                "prepare_input_with_session",
                "_build_reference_map",
                "_build_frequency_map",
            ),
            "_build_reference_map": ("prepare_input_with_session",),
            "_build_frequency_map": ("prepare_input_with_session",),
            "_consume_reference": ("prepare_input_with_session",),
        },
        coupled=True,
        # Order matters: the map builders use the key function built first.
        targets=(
            Target("_session_item_key", builders.session_item_key, bound=False),
            Target("_build_reference_map", builders.reference_map, bound=False),
            Target("_build_frequency_map", builders.frequency_map, bound=False),
            Target("_consume_reference", builders.consume_reference, bound=False),
            Target(
                "prepare_input_with_session", builders.prepare_input, imported_by=(RUN, RUN_LOOP)
            ),
        ),
    ),
    Group(
        name="session_json",
        module=SQLITE_SESSION,
        about="the `json` module the SQLite session reads with",
        identities={"json": json},
        targets=(
            Target(
                "json",
                builders.json_module,
                everywhere=False,
                watch=stand_ins.JsonModule.watch_for,
            ),
        ),
    ),
    Group(
        name="session_read",
        module=SQLITE_SESSION,
        about="`SQLiteSession.get_items` (the unlimited read)",
        sources=("SQLiteSession.get_items",),
        digests=KNOWN_SOURCE_DIGESTS["session_read"],
        targets=(_method("SQLiteSession.get_items", builders.sqlite_get_items),),
    ),
    Group(
        name="async_session_read",
        module=ASYNC_SQLITE_SESSION,
        about="`AsyncSQLiteSession.get_items` (the unlimited read)",
        needs=("aiosqlite",),
        sources=(
            "AsyncSQLiteSession.get_items",
            "AsyncSQLiteSession._get_connection",
            "AsyncSQLiteSession._locked_connection",
        ),
        digests=KNOWN_SOURCE_DIGESTS["async_session_read"],
        identities={"json": json},
        fits=async_sqlite_read.unfit,
        targets=(_method("AsyncSQLiteSession.get_items", builders.async_sqlite_get_items),),
    ),
    Group(
        name="sqlalchemy_read",
        module=SQLALCHEMY_SESSION,
        about="`SQLAlchemySession.get_items` (the unlimited read)",
        needs=("sqlalchemy",),
        sources=("SQLAlchemySession.get_items", "SQLAlchemySession._deserialize_item"),
        digests=KNOWN_SOURCE_DIGESTS["sqlalchemy_read"],
        identities={"json": json},
        targets=(
            _method(
                "SQLAlchemySession.get_items",
                builders.sqlalchemy_get_items,
                sqlalchemy_read.watch_for,
            ),
        ),
    ),
    Group(
        name="encrypted_read",
        module=ENCRYPTED_SESSION,
        about="`EncryptedSession`'s decryption of what the wrapped store read",
        needs=("cryptography",),
        sources=(
            "_is_encrypted_envelope",
            "EncryptedSession._unwrap",
            "EncryptedSession._unwrap_valid_items",
        ),
        digests=KNOWN_SOURCE_DIGESTS["encrypted_read"],
        targets=(
            _method(
                "EncryptedSession._unwrap_valid_items",
                builders.encrypted_unwrap_valid_items,
                encrypted_read.watch_for,
            ),
        ),
    ),
    Group(
        name="turn_input",
        module=RUN_LOOP,
        about="a turn's model input",
        sources=("_prepare_turn_input_items",),
        digests=KNOWN_SOURCE_DIGESTS["turn_input"],
        targets=(
            Target(
                "_prepare_turn_input_items", builders.turn_input_items, watch=turn_input.watch_for
            ),
        ),
    ),
    Group(
        name="callback_copies",
        module=SESSION,
        about="the `copy` module whose deep copies session callbacks get",
        identities={"copy": copy},
        targets=(
            Target(
                "copy",
                builders.copy_module,
                everywhere=False,
                watch=stand_ins.CopyModule.watch_for,
            ),
        ),
    ),
)

#: Bound after ``GROUPS`` by ``install(guard=True)``: the history the session
#: preparation reads, then the run loop's last step before each model call and the
#: filter step before it (``_guard``). Not drop-ins: no watch, they wrap what is bound.
GUARD_GROUPS: tuple[Group, ...] = (
    Group(
        name="guard_history",
        module=SESSION,
        about=(
            "the session preparation's history read (noted for the guard) and, under "
            '`dangling="synthesize"`, its orphan pruning (stored calls kept)'
        ),
        targets=(
            Target(
                "_session_get_items", _noting_history, everywhere=False, watch=builders.unwatched
            ),
            Target(
                "drop_orphan_function_calls",
                builders.keeping_orphans,
                everywhere=False,
                watch=builders.unwatched,
            ),
        ),
    ),
    Group(
        name="guard",
        module=RUN_LOOP,
        about=(
            "the model input's dedupe, then its check and repair; the input filter hands "
            "it a list and re-guards a dedupe rebound since install"
        ),
        fits=guard.unfit,
        # The guarded filter does not look at its caller: these are its only callers.
        private_to={guard.FILTER: guard.CALLERS},
        targets=(
            Target(
                guard.DEDUPE, builders.guarded_dedupe, everywhere=False, watch=builders.unwatched
            ),
            Target(
                guard.FILTER, builders.guarded_filter, everywhere=False, watch=builders.unwatched
            ),
        ),
    ),
)
