"""``installed()`` per block, as a server might per request, leaves nothing behind: each
``install()``/``uninstall()`` once kept its replacements alive through their watches (the
Rust ``NameWatch`` held them and the collector could not see it): ~149 memory blocks,
~115 collectable objects and 10 watches a cycle."""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import histcore.openai_agents as accelerator
from histcore.engine import _support as engine_support

# A round is one plain and one guarded block.
ROUNDS = 5
# Blocks a cycle may leave (the fixed code leaves 0 or 1 in all): room for the standard
# library's bounded caches, e.g. importlib.metadata's lookups by directory mtime, which
# reading the SDK's version grows whenever site-packages changes.
BLOCKS_PER_CYCLE = 5


def _round() -> None:
    with accelerator.installed():
        pass
    with accelerator.installed(guard=True):
        pass


def _settled() -> int:
    """The allocated memory blocks once the collector ran and the type attribute cache,
    which keeps the last attribute name strings looked up (4096 at most), is emptied."""
    gc.collect()
    sys._clear_type_cache()
    return sys.getallocatedblocks()


def _watches() -> int:
    return sum(type(o) is engine_support.NameWatch for o in gc.get_objects())


@pytest.fixture(autouse=True)
def not_installed() -> Any:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


def test_install_uninstall_cycles_leave_no_watch_and_no_memory() -> None:
    _round()  # first-use caches (source digests, imports) fill here
    blocks = _settled()
    watches = _watches()
    objects = len(gc.get_objects())
    for _ in range(ROUNDS):
        _round()
    grown = _settled() - blocks
    assert _watches() == watches
    assert len(gc.get_objects()) - objects < ROUNDS
    assert grown < BLOCKS_PER_CYCLE * 2 * ROUNDS


def test_uninstall_frees_the_watches_without_a_collection() -> None:
    """``uninstall()`` disarms every watch, which lets go of the replacements it noted:
    reference counting alone frees them (a collection may come late, or be disabled)."""
    _round()
    gc.collect()
    watches = _watches()
    enabled = gc.isenabled()
    gc.disable()
    try:
        _round()
        assert _watches() == watches
    finally:
        if enabled:
            gc.enable()
