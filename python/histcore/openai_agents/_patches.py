"""How the groups of ``_table`` are recognised, planned, bound and put back.

A ``from .items import helper`` copies the function into the importing module, so
replacing it only where it is defined would miss the runner and the session code.
Each replaced function is therefore rebound in every loaded module of the SDK's package
whose attribute *is* the original object (modules imported later copy the replacement
from the defining module), and ``unbind`` finds every binding of a replacement again.

A group is recognised (source digests, constants, identities) and replaced as a whole,
all or nothing. Each replacement gets a ``Watch`` (``_watch``) over what its original
looks up; ``install()`` arms the watches once every group is bound. This module names
no SDK module and no release: those are the table's.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from histcore.openai_agents._guard_counts import GuardCounts
from histcore.openai_agents._guard_link import GuardLink
from histcore.openai_agents._versions import source_digest
from histcore.openai_agents._watch import Watch, names_used

__all__ = [
    "Binding",
    "Build",
    "Context",
    "Group",
    "Planned",
    "Rebind",
    "Site",
    "Target",
    "Wrap",
    "bind",
    "plan",
    "recognise",
    "sdk_modules",
    "unbind",
    "watch_for",
    "wrap_targets",
]

#: ``rebind(module, attr, binding, build)``: bind ``build(binding)`` in place of
#: ``binding`` (if ``module.attr`` still holds it and the guard is still installed),
#: recorded so that uninstall puts ``binding`` back.
Rebind = Callable[[ModuleType, str, Any, Callable[[Any], Any]], None]


@dataclass(frozen=True)
class Context:
    """What one ``install()`` hands every builder."""

    link: GuardLink = field(default_factory=GuardLink)
    #: the guard's counts and re-guarding, with ``install(guard=True)`` only
    guard: GuardCounts | None = None
    rebind: Rebind | None = None


@dataclass(frozen=True)
class Site:
    """Where a replacement is built: its group's module, the group's replacements built
    so far (by target name), its watch, and the installation's context."""

    module: ModuleType
    built: Mapping[str, Any]
    watch: Watch
    context: Context


#: (original, site) -> replacement
Build = Callable[[Any, Site], Any]


@dataclass(frozen=True)
class Target:
    """One name in the group's module and how to build its replacement."""

    attr: str
    build: Build
    # Also rebind it in the other SDK modules that imported it. False for a name that
    # is not the SDK's own (the ``copy`` module), or one replaced in this module only.
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
    #: the other SDK modules known to import it (documentation: ``bind`` finds them)
    imported_by: tuple[str, ...] = ()

    def holder(self, module: ModuleType) -> Any:
        """Where ``attr`` lives: the module, or its class ``owner``."""
        return module if self.owner is None else getattr(module, self.owner)

    @property
    def name(self) -> str:
        """``attr``, with its class for a method."""
        return self.attr if self.owner is None else f"{self.owner}.{self.attr}"


@dataclass(frozen=True)
class Group:
    name: str
    module: str
    targets: tuple[Target, ...]
    #: what it replaces, in a few words (docs/design.md's table)
    about: str = ""
    #: functions whose source must be a known one (a digest in ``digests``)
    sources: tuple[str, ...] = ()
    digests: frozenset[str] = frozenset()
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


#: ``wrap(group, target, original, build, site)``: the object bound for ``target``, made
#: by calling ``build(original_or_a_stand_in)`` (test instrumentation: ``wrap_targets``)
Wrap = Callable[[Group, Target, Any, Callable[[Any], Any], Site], Any]

_wrap: Wrap | None = None


def wrap_targets(wrap: Wrap | None) -> None:
    """Build every later planned target through ``wrap`` (None: directly). The SDK
    suite's path counts use it; nothing in histcore sets it."""
    global _wrap
    _wrap = wrap


def _package(module: ModuleType | type | str) -> str:
    name = module if isinstance(module, str) else getattr(module, "__module__", None)
    if isinstance(module, ModuleType):
        name = module.__name__
    return str(name).partition(".")[0]


def sdk_modules(package: str) -> Iterator[ModuleType]:
    """The loaded modules of ``package`` (a snapshot: imports may run)."""
    prefix = f"{package}."
    for name, module in list(sys.modules.items()):
        if (name == package or name.startswith(prefix)) and isinstance(module, ModuleType):
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
            return f"{group.module}.{target.name} does not exist"
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
        if digest not in group.digests:
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


def plan(group: Group, context: Context) -> list[Planned]:
    """The replacement (and its watch) of each target of a recognised group, in order."""
    if not group.available():
        return []
    module = importlib.import_module(group.module)
    built: dict[str, Any] = {}
    planned: list[Planned] = []
    wrap = _wrap
    for target in group.targets:
        original = getattr(target.holder(module), target.attr)
        watch = watch_for(group, target, original, module)
        site = Site(module, built, watch, context)

        def build(given: Any, target: Target = target, site: Site = site) -> Any:
            return target.build(given, site)

        replacement = (
            build(original) if wrap is None else wrap(group, target, original, build, site)
        )
        built[target.attr] = replacement
        planned.append(Planned(target, original, replacement, watch))
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
    for module in sdk_modules(_package(group.module)):
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
    for package in sorted({_package(b.module) for b in bindings}):
        for module in sdk_modules(package):
            for attr, value in list(vars(module).items()):
                match = originals.get(id(value))
                if match is not None and match[0] is value:
                    setattr(module, attr, match[1])
