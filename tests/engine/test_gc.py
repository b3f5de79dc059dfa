"""The cyclic collector is paused while histories are decoded or copied, and switched
back on afterwards without a young-generation pass over everything built meanwhile."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from histcore.engine import collector as _gc
from histcore.engine.collector import (
    PAUSE_FROM_ITEMS,
    PROMOTE_AFTER,
    collector_paused,
    interpreter_frozen,
    paused_for,
)
from histcore.sessions import SQLiteSession


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    """Each test starts with the collector on and nothing frozen by the program (CPython
    3.12 keeps some of its own objects frozen), and leaves it so."""
    was_enabled = gc.isenabled()
    gc.enable()
    gc.collect()
    assert gc.get_freeze_count() <= _gc._interpreter_frozen
    yield
    gc.unfreeze()
    if not was_enabled:
        gc.disable()


def build(count: int) -> list[dict[str, Any]]:
    return [{"n": [index]} for index in range(count)]


def test_the_collector_is_off_inside_and_on_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize(
    ("items", "paused"),
    [
        ([{}] * (PAUSE_FROM_ITEMS - 1), False),  # a short list: not worth a pause
        ([], False),
        ([{}] * PAUSE_FROM_ITEMS, True),
        (tuple([{}] * 3), True),  # not an exact list: its size is not read
        (type("Items", (list,), {})([{}]), True),
    ],
)
def test_paused_for_pauses_all_but_short_lists(items: object, paused: bool) -> None:
    with paused_for(items):
        assert gc.isenabled() is not paused
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_program_stays_off() -> None:
    gc.disable()
    with collector_paused():
        built = build(PROMOTE_AFTER)
    assert not gc.isenabled()
    assert len(built) == PROMOTE_AFTER


def test_a_large_pause_promotes_what_it_built() -> None:
    collections = [generation["collections"] for generation in gc.get_stats()]
    with collector_paused():
        built = build(PROMOTE_AFTER)
        assert gc.get_count()[0] > PROMOTE_AFTER
    after = [generation["collections"] for generation in gc.get_stats()]
    # Straight to the oldest generation, without a collection traversing them.
    assert any(obj is built for obj in gc.get_objects(generation=2))
    assert after == collections
    assert gc.get_freeze_count() == 0


def test_a_small_pause_leaves_the_collector_as_it_works() -> None:
    with collector_paused():
        built = build(100)
    assert gc.get_count()[0] >= 100
    assert len(built) == 100


class Node:
    """A weakly referenceable object, to watch a cycle being collected."""

    partner: Node | None = None


def test_promoted_cycles_are_still_collected() -> None:
    with collector_paused():
        built = build(PROMOTE_AFTER)
        node = Node()
        node.partner = node
    watch = weakref.ref(node)
    del node
    assert watch() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert watch() is None
    assert len(built) == PROMOTE_AFTER


def test_objects_the_program_froze_stay_frozen() -> None:
    kept = build(10)
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen >= len(kept)
    with collector_paused():
        build(2 * PROMOTE_AFTER)
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()


def test_concurrent_pauses_switch_it_back_on_once(tmp_path: Path) -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"text": str(n)}]} for n in range(3000)
    ]
    with SQLiteSession("s", tmp_path / "h.db") as session:
        asyncio.run(session.add_items(items))
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(5):
                with SQLiteSession("s", tmp_path / "h.db") as reader:
                    assert asyncio.run(reader.get_items()) == items
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert gc.isenabled()
    assert gc.get_freeze_count() <= _gc._interpreter_frozen


def test_only_a_few_hundred_frozen_objects_at_import_are_the_interpreters() -> None:
    assert interpreter_frozen(0) == 0
    assert interpreter_frozen(375) == 375  # CPython 3.12.1, straight after start-up
    # A program's gc.freeze() freezes every tracked object: thousands at the least.
    assert interpreter_frozen(4_000) == 0


def test_what_the_interpreter_froze_does_not_stop_a_promotion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc.freeze()
    monkeypatch.setattr(_gc, "_interpreter_frozen", gc.get_freeze_count())
    collections = [generation["collections"] for generation in gc.get_stats()]
    with collector_paused():
        built = build(PROMOTE_AFTER)
    assert [generation["collections"] for generation in gc.get_stats()] == collections
    assert any(obj is built for obj in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == 0


def test_a_fresh_interpreter_promotes() -> None:
    """On the interpreter running the tests, whatever it freezes at start-up itself."""
    script = textwrap.dedent(
        """
        import gc
        from histcore.engine.collector import PROMOTE_AFTER, collector_paused

        collections = [generation["collections"] for generation in gc.get_stats()]
        with collector_paused():
            built = [{"n": [index]} for index in range(PROMOTE_AFTER)]
        after = [generation["collections"] for generation in gc.get_stats()]
        assert after == collections, (collections, after)
        assert any(obj is built for obj in gc.get_objects(generation=2))
        print("promoted")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "promoted"
