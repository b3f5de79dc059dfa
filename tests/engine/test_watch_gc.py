"""The drop-in support objects and the collector, on both engines: what a ``NameWatch``,
``ScreenedKey`` or ``DictText`` holds is visible to ``gc``, so a cycle through one (a
replacement bound in a namespace its own watch reads) is freed, and ``disarm`` lets go
of what ``arm`` noted without waiting for the collector."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


def _collected(make: Callable[[], weakref.ref[Any]]) -> bool:
    """Whether what ``make`` builds (a cycle, then dropped) is freed by ``gc.collect()``."""
    ref = make()
    gc.collect()
    return ref() is None


def test_a_cycle_through_an_armed_watch_is_collected(engine: ModuleType) -> None:
    def make() -> weakref.ref[Any]:
        namespace: dict[str, Any] = {}
        watch = engine.NameWatch([(namespace, ("helper",))], [(namespace, "table")])

        def helper() -> bool:
            return bool(watch.intact())

        namespace["helper"] = helper
        # Noted twice when armed: by identity and as a member of a watched container.
        namespace["table"] = {"helper": helper}
        watch.arm()
        assert watch.intact()
        return weakref.ref(helper)

    assert _collected(make)


class Marker:
    """Weakly referenceable: lives exactly as long as the namespace holding it."""


def _engine_callable(engine: ModuleType, kind: str, fallback: Any, watch: Any) -> Any:
    if kind == "ScreenedKey":
        return engine.ScreenedKey(fallback, watch)
    return engine.DictText(fallback, (), ("id",), watch)


@pytest.mark.parametrize("via", ["fallback", "watch"])
@pytest.mark.parametrize("kind", ["ScreenedKey", "DictText"])
def test_a_cycle_through_an_engine_callable_is_collected(
    engine: ModuleType, kind: str, via: str
) -> None:
    """A namespace holding a replacement whose fallback, or whose watch, leads back to it."""

    def make() -> weakref.ref[Any]:
        namespace: dict[str, Any] = {"marker": Marker()}
        if via == "fallback":

            def fallback(*args: Any, **kwargs: Any) -> Any:
                return namespace

            namespace["replacement"] = _engine_callable(engine, kind, fallback, None)
        else:
            watch = engine.NameWatch([(namespace, ("replacement",))])
            namespace["replacement"] = _engine_callable(engine, kind, len, watch)
            watch.arm()
        return weakref.ref(namespace["marker"])

    assert _collected(make)


def test_disarm_lets_go_of_what_arm_noted(engine: ModuleType) -> None:
    def helper() -> None:
        pass

    namespace: dict[str, Any] = {"helper": helper, "table": [helper]}
    watch = engine.NameWatch([(namespace, ("helper",))], [(namespace, "table")])
    watch.arm()
    ref = weakref.ref(helper)
    del namespace["helper"], namespace["table"], helper
    assert ref() is not None  # the armed watch still holds it, to compare against
    watch.disarm()
    assert ref() is None  # freed by its reference count: no collection needed
    assert not watch.intact()
    # Armed again, it notes what the names hold now.
    namespace["helper"] = len
    namespace["table"] = [len]
    watch.arm()
    assert watch.intact()
    namespace["table"].append(str)
    assert not watch.intact()
