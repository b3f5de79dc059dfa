"""What ``install()`` replaces, where, and how it is put back.

A ``from .items import helper`` copies the function into the importing module, so
replacing it only where it is defined would miss the runner and the session code.
Each replaced function is therefore rebound in every loaded ``agents`` module whose
attribute *is* the original object (modules imported later copy the replacement from
the defining module), and ``uninstall`` finds every binding of a replacement again.

Helpers come in groups that are recognised (by source digest, ``_versions``) and
replaced together, all or nothing: a group's replacements rely on each other (the
session reference map and its consumer) or on the same proof (the dedupe functions
and their key).

Each replacement gets a ``Watch`` (``_watch``) over what its original looks up; the
watches are armed once every group is bound, and a replacement whose watch sees a
rebound name calls the original instead.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from histcore.engine.vocabulary import (
    CALL_TO_OUTPUT_TYPE,
    PRECURSOR_TYPES,
    PROGRAM_OWNED_HOSTED_TYPES,
)
from histcore.openai_agents import _async_sqlite_read as async_sqlite_read
from histcore.openai_agents import _guard as guard
from histcore.openai_agents import _prepare as prepare
from histcore.openai_agents import _replacements as replacements
from histcore.openai_agents import _session_keys as session_keys
from histcore.openai_agents import _session_read as session_read
from histcore.openai_agents import _sqlalchemy_read as sqlalchemy_read
from histcore.openai_agents import _turn_input as turn_input
from histcore.openai_agents._versions import KNOWN_SOURCE_DIGESTS, source_digest
from histcore.openai_agents._watch import Watch, names_used

__all__ = [
    "GROUPS",
    "Binding",
    "Group",
    "Planned",
    "Target",
    "bind",
    "guard_groups",
    "plan",
    "sdk_modules",
    "unbind",
    "watch_for",
]

ITEMS = "agents.run_internal.items"
SESSION = "agents.run_internal.session_persistence"


# (original, its module, the group's replacements built so far, its watch) -> replacement
Build = Callable[[Any, ModuleType, Mapping[str, Any], Watch], Any]


def _of_original(make: Callable[[Any, Watch], Any]) -> Build:
    """The ``Build`` of a replacement made from the original and the watch alone."""
    return lambda original, _module, _built, watch: make(original, watch)


def _of_original_and_module(make: Callable[[Any, ModuleType, Watch], Any]) -> Build:
    """The ``Build`` of a replacement that also reads the original's module."""
    return lambda original, module, _built, watch: make(original, module, watch)


@dataclass(frozen=True)
class Target:
    """One name in the group's module and how to build its replacement."""

    attr: str
    build: Build
    # Also rebind it in the other agents modules that imported it. False for a name
    # that is not the SDK's own (the ``copy`` module), replaced in this module only.
    everywhere: bool = True
    #: the watch of a replacement that is not a function's (a module stand-in);
    #: a function's is built from what it looks up (``watch_for``)
    watch: Callable[[Any], Watch] | None = None
    #: the class of the group's module that holds ``attr`` (a method), if not the module
    owner: str | None = None
    #: False: built for another target of the group, which pins it for each of its
    #: calls (``_prepare``), and never bound in the module, so that a call running
    #: while another thread installs or uninstalls sees one set of helpers throughout
    bound: bool = True

    def holder(self, module: ModuleType) -> Any:
        """Where ``attr`` lives: the module, or its class ``owner``."""
        return module if self.owner is None else getattr(module, self.owner)


@dataclass(frozen=True)
class Group:
    name: str
    module: str
    targets: tuple[Target, ...]
    #: functions whose source must be a known one (``KNOWN_SOURCE_DIGESTS[name]``)
    sources: tuple[str, ...] = ()
    #: module constants the replacements assume
    constants: Mapping[str, object] = field(default_factory=dict)
    #: names only the listed functions of the module may use (a changed map shape)
    private_to: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: module attributes that must be these very objects
    identities: Mapping[str, object] = field(default_factory=dict)
    #: each replacement also watches every other target name of the group (their
    #: replacements share a private key or map shape: all or none run)
    coupled: bool = False
    #: a further check of the module: None when it fits, else why not
    fits: Callable[[ModuleType], str | None] | None = None
    #: top-level packages the module imports that are an optional extra of the SDK's:
    #: without one of them there is nothing to replace (no warning, nothing bound)
    needs: tuple[str, ...] = ()

    def available(self) -> bool:
        """Whether every package of ``needs`` is installed."""
        return all(importlib.util.find_spec(name) is not None for name in self.needs)


GROUPS: tuple[Group, ...] = (
    Group(
        name="dedupe",
        module=ITEMS,
        sources=(
            "_dedupe_key",
            "_coerce_to_dict",
            "_model_dump_without_warnings",
            "deduplicate_input_items",
            "deduplicate_input_items_preferring_latest",
        ),
        constants={
            "_TOOL_CALL_TO_OUTPUT_TYPE": CALL_TO_OUTPUT_TYPE,
            "_DEDUPE_EARLIEST_ANCHOR_ITEM_TYPES": PRECURSOR_TYPES,
            "FAKE_RESPONSES_ID": "__fake_id__",
        },
        targets=(
            Target(
                "_dedupe_key",
                _of_original(replacements.make_dedupe_key),
            ),
            Target(
                "deduplicate_input_items",
                _of_original(
                    lambda original, watch: replacements.make_deduplicate(original, False, watch)
                ),
            ),
            Target(
                "deduplicate_input_items_preferring_latest",
                _of_original(
                    lambda original, watch: replacements.make_deduplicate(original, True, watch)
                ),
            ),
        ),
    ),
    Group(
        name="orphans",
        module=ITEMS,
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
        constants={
            "_TOOL_CALL_TO_OUTPUT_TYPE": CALL_TO_OUTPUT_TYPE,
            "_PROGRAM_OWNED_HOSTED_ITEM_TYPES": PROGRAM_OWNED_HOSTED_TYPES,
        },
        targets=(
            Target(
                "drop_orphan_function_calls",
                _of_original(replacements.make_drop_orphan_function_calls),
            ),
        ),
    ),
    Group(
        name="fingerprint",
        module=ITEMS,
        sources=("fingerprint_input_item",),
        targets=(
            Target(
                "fingerprint_input_item",
                _of_original_and_module(replacements.make_fingerprint_input_item),
            ),
        ),
    ),
    Group(
        name="normalize",
        module=ITEMS,
        sources=(
            "normalize_input_items_for_api",
            "ensure_input_item_format",
            "_coerce_to_dict",
            "strip_internal_input_item_metadata",
        ),
        targets=(
            Target(
                "normalize_input_items_for_api",
                _of_original_and_module(replacements.make_normalize_input_items_for_api),
            ),
            Target(
                "ensure_input_item_format",
                _of_original(replacements.make_ensure_input_item_format),
            ),
        ),
    ),
    Group(
        name="to_dump_compatible",
        module="agents.util._json",
        sources=("_to_dump_compatible", "_to_dump_compatible_internal"),
        targets=(
            Target(
                "_to_dump_compatible",
                _of_original(replacements.make_to_dump_compatible),
            ),
        ),
    ),
    Group(
        name="clone_original_input",
        module="agents.run_state",
        sources=("_clone_original_input",),
        targets=(
            Target(
                "_clone_original_input",
                _of_original(replacements.make_clone_original_input),
            ),
        ),
    ),
    Group(
        name="session_keys",
        module=SESSION,
        sources=(
            "_session_item_key",
            "_build_reference_map",
            "_build_frequency_map",
            "_consume_reference",
            "prepare_input_with_session",
            # Imported from items: its stripped keys decide what canonical keys may skip.
            "strip_internal_input_item_metadata",
        ),
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
            Target(
                "_session_item_key",
                _of_original_and_module(session_keys.make_session_item_key),
                bound=False,
            ),
            Target(
                "_build_reference_map",
                lambda original, _, built, watch: session_keys.make_build_reference_map(
                    built["_session_item_key"], original, watch
                ),
                bound=False,
            ),
            Target(
                "_build_frequency_map",
                lambda original, module, built, watch: session_keys.make_build_frequency_map(
                    built["_session_item_key"], original, watch, module
                ),
                bound=False,
            ),
            Target(
                "_consume_reference",
                lambda original, *_: session_keys.make_consume_reference(original),
                bound=False,
            ),
            Target(
                "prepare_input_with_session",
                lambda original, module, built, watch: prepare.make_prepare_input_with_session(
                    original, module, watch, pinned=dict(built)
                ),
            ),
        ),
    ),
    Group(
        name="session_json",
        module="agents.memory.sqlite_session",
        identities={"json": json},
        targets=(
            Target(
                "json",
                _of_original(replacements.JsonModule),
                everywhere=False,
                watch=replacements.JsonModule.watch_for,
            ),
        ),
    ),
    Group(
        name="session_read",
        module="agents.memory.sqlite_session",
        sources=("SQLiteSession.get_items",),
        targets=(
            Target(
                "get_items",
                _of_original_and_module(session_read.make_get_items),
                everywhere=False,
                owner="SQLiteSession",
            ),
        ),
    ),
    Group(
        name="async_session_read",
        module="agents.extensions.memory.async_sqlite_session",
        needs=("aiosqlite",),
        sources=(
            "AsyncSQLiteSession.get_items",
            "AsyncSQLiteSession._get_connection",
            "AsyncSQLiteSession._locked_connection",
        ),
        identities={"json": json},
        fits=async_sqlite_read.unfit,
        targets=(
            Target(
                "get_items",
                _of_original_and_module(async_sqlite_read.make_get_items),
                everywhere=False,
                owner="AsyncSQLiteSession",
            ),
        ),
    ),
    Group(
        name="sqlalchemy_read",
        module="agents.extensions.memory.sqlalchemy_session",
        needs=("sqlalchemy",),
        sources=("SQLAlchemySession.get_items", "SQLAlchemySession._deserialize_item"),
        identities={"json": json},
        targets=(
            Target(
                "get_items",
                _of_original_and_module(sqlalchemy_read.make_get_items),
                everywhere=False,
                owner="SQLAlchemySession",
                watch=sqlalchemy_read.watch_for,
            ),
        ),
    ),
    Group(
        name="turn_input",
        module="agents.run_internal.run_loop",
        sources=("_prepare_turn_input_items",),
        targets=(
            Target(
                "_prepare_turn_input_items",
                _of_original_and_module(turn_input.make_prepare_turn_input_items),
                watch=turn_input.watch_for,
            ),
        ),
    ),
    Group(
        name="callback_copies",
        module=SESSION,
        identities={"copy": copy},
        targets=(
            Target(
                "copy",
                _of_original(replacements.CopyModule),
                everywhere=False,
                watch=replacements.CopyModule.watch_for,
            ),
        ),
    ),
)


def _unwatched(_: Any) -> Watch:
    return Watch(())


#: ``rebind(module, attr, binding, build)``: bind ``build(binding)`` in place of
#: ``binding`` (if ``module.attr`` still holds it and the guard is still installed),
#: recorded so that uninstall puts ``binding`` back.
Rebind = Callable[[ModuleType, str, Any, Callable[[Any], Any]], None]


def guard_groups(counts: guard.GuardCounts, rebind: Rebind) -> tuple[Group, ...]:
    """The groups of ``install(guard=True)``, bound after ``GROUPS``: the history the
    session preparation reads, then the run loop's last step before each model call
    and the filter step before it (``_guard``). Not drop-ins: no watch, they wrap
    whatever is bound."""

    def guarded_filter(original: Any, module: ModuleType, *_: Any) -> Any:
        def build(binding: Any) -> Any:
            return guard.make_guarded_dedupe(binding, module, counts)

        return guard.make_guarded_filter(
            original, module, counts, lambda binding: rebind(module, guard.DEDUPE, binding, build)
        )

    return (
        Group(
            name="guard_history",
            module=SESSION,
            targets=(
                Target(
                    "_session_get_items",
                    lambda original, *_: guard.make_noting_session_get_items(
                        original, prepare.prepare, counts
                    ),
                    everywhere=False,
                    watch=_unwatched,
                ),
                # Under dangling="synthesize": the stored calls whose output is missing
                # reach the guard, which keeps them with a marked output.
                Target(
                    "drop_orphan_function_calls",
                    lambda original, *_: guard.make_keeping_orphans(original, counts),
                    everywhere=False,
                    watch=_unwatched,
                ),
            ),
        ),
        Group(
            name="guard",
            module=guard.RUN_LOOP,
            fits=guard.unfit,
            targets=(
                Target(
                    guard.DEDUPE,
                    lambda original, module, *_: guard.make_guarded_dedupe(
                        original, module, counts
                    ),
                    everywhere=False,
                    watch=_unwatched,
                ),
                Target(guard.FILTER, guarded_filter, everywhere=False, watch=_unwatched),
            ),
        ),
    )


def sdk_modules() -> Iterator[ModuleType]:
    """The loaded modules of the ``agents`` package (a snapshot: imports may run)."""
    for name, module in list(sys.modules.items()):
        if (name == "agents" or name.startswith("agents.")) and isinstance(module, ModuleType):
            yield module


def _users_of(module: ModuleType, names: set[str]) -> set[str]:
    """Functions (and methods) defined in ``module`` whose code mentions ``names``."""
    users: set[str] = set()
    for attr, value in list(vars(module).items()):
        candidates: list[tuple[str, Any]] = [(attr, value)]
        if isinstance(value, type) and value.__module__ == module.__name__:
            candidates += [(f"{attr}.{k}", v) for k, v in vars(value).items()]
        for label, candidate in candidates:
            function = getattr(candidate, "__func__", candidate)
            code = getattr(function, "__code__", None)
            if (
                isinstance(code, types.CodeType)
                and getattr(function, "__module__", None) == module.__name__
                and names_used(code) & names
            ):
                users.add(label)
    return users


def recognise(group: Group) -> str | None:
    """None when ``group`` can be replaced in the loaded SDK (or has nothing to replace:
    ``Group.needs``), else the reason it cannot."""
    if not group.available():
        return None
    try:
        module = importlib.import_module(group.module)
    except ImportError as exc:
        return f"{group.module} cannot be imported ({exc})"
    for target in group.targets:
        holder = module if target.owner is None else getattr(module, target.owner, None)
        if holder is None or not hasattr(holder, target.attr):
            where = target.attr if target.owner is None else f"{target.owner}.{target.attr}"
            return f"{group.module}.{where} does not exist"
    for attr, expected in group.identities.items():
        if getattr(module, attr, None) is not expected:
            return f"{group.module}.{attr} is not {expected!r}"
    for attr, value in group.constants.items():
        if getattr(module, attr, None) != value:
            return f"{group.module}.{attr} has a different value"
    if group.sources:
        digest = source_digest(module, group.sources)
        if digest is None:
            return f"the source of {group.module} cannot be read"
        if digest not in KNOWN_SOURCE_DIGESTS.get(group.name, frozenset()):
            return f"{', '.join(group.sources)} in {group.module} changed (digest {digest})"
    if group.fits is not None and (reason := group.fits(module)) is not None:
        return reason
    for name, allowed in group.private_to.items():
        extra = _users_of(module, {name}) - {name, *allowed}
        if extra:
            return f"{group.module}.{name} is also used by {', '.join(sorted(extra))}"
    return None


@dataclass(frozen=True)
class Binding:
    """``module.attr`` was ``original`` and now is ``replacement`` (``module`` is the
    class for a method)."""

    module: ModuleType | type
    attr: str
    original: Any
    replacement: Any

    @property
    def where(self) -> str:
        if isinstance(self.module, type):
            return f"{self.module.__module__}.{self.module.__qualname__}.{self.attr}"
        return f"{self.module.__name__}.{self.attr}"


@dataclass(frozen=True)
class Planned:
    """A target's original, its replacement, and the watch the replacement consults."""

    target: Target
    original: Any
    replacement: Any
    watch: Watch


def watch_for(group: Group, target: Target, original: Any, module: ModuleType) -> Watch:
    """What ``target``'s replacement must see unchanged to take its own path: all that
    its original looks up, the group's mutable constants (by value too), and for a
    coupled group every other target name."""
    if target.watch is not None:
        return target.watch(original)
    namespace = vars(module)
    coupled = [(namespace, other.attr) for other in group.targets] if group.coupled else []
    contents = [
        (namespace, name)
        for name in group.constants
        if isinstance(namespace.get(name), dict | list | set)
    ]
    return Watch.over([original], coupled, contents)


def plan(group: Group) -> list[Planned]:
    """The replacement (and its watch) of each target of a recognised group, in order."""
    from histcore.openai_agents import _path_counts

    if not group.available():
        return []

    module = importlib.import_module(group.module)
    built: dict[str, Any] = {}
    planned: list[Planned] = []
    for target in group.targets:
        original = getattr(target.holder(module), target.attr)
        watch = watch_for(group, target, original, module)
        # Path counts (HISTCORE_DROPIN_COUNTS, ``_path_counts``): None unless asked for.
        tally = _path_counts.counter(group, target.attr)
        if tally is None:
            built[target.attr] = target.build(original, module, built, watch)
        else:
            replacement = target.build(tally.original(original), module, built, watch)
            built[target.attr] = tally.replacement(replacement)
        planned.append(Planned(target, original, built[target.attr], watch))
    return planned


def bind(group: Group, built: list[Planned]) -> list[Binding]:
    """Install ``built`` in the group's module and wherever the originals were imported."""
    if not built:
        return []
    home = importlib.import_module(group.module)
    bindings: list[Binding] = []
    built = [p for p in built if p.target.bound]
    by_original = {id(p.original): (p.target, p.original, p.replacement) for p in built}
    for planned in built:
        holder = planned.target.holder(home)
        setattr(holder, planned.target.attr, planned.replacement)
        bindings.append(Binding(holder, planned.target.attr, planned.original, planned.replacement))
    for module in sdk_modules():
        if module is home:
            continue
        for attr, value in list(vars(module).items()):
            match = by_original.get(id(value))
            if match is None or match[1] is not value or not match[0].everywhere:
                continue
            setattr(module, attr, match[2])
            bindings.append(Binding(module, attr, value, match[2]))
    return bindings


def unbind(bindings: list[Binding]) -> None:
    """Restore every original in ``bindings``, and in modules imported since."""
    originals = {id(b.replacement): (b.replacement, b.original) for b in bindings}
    for binding in reversed(bindings):
        if getattr(binding.module, binding.attr, None) is binding.replacement:
            setattr(binding.module, binding.attr, binding.original)
    for module in sdk_modules():
        for attr, value in list(vars(module).items()):
            match = originals.get(id(value))
            if match is not None and match[0] is value:
                setattr(module, attr, match[1])
