"""scripts/sdk_suite/path_counts.py: once started (the SDK-suite plugin does it with
HISTCORE_DROPIN_COUNTS set), the calls that took histcore's own path are told apart
from the fallbacks to the SDK's original, through the binding's ``wrap`` hook; the SDK
sees the same names, signatures and kinds of callables; without it nothing changes."""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.memory.sqlite_session as sdk_sqlite
import agents.run_internal.items as sdk_items
import agents.run_internal.session_persistence as sdk_session

import histcore.openai_agents as accelerator
from histcore.openai_agents import _patches, _table
from histcore.openai_agents._replacements import CopyModule, JsonModule
from histcore.openai_agents._watch import Watch
from tests.support.sdk_suite import sdk_suite_module

_path_counts = sdk_suite_module("path_counts")


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    accelerator.uninstall()
    monkeypatch.setattr(_path_counts, "_tallies", {})
    monkeypatch.setattr(_path_counts, "_directory", None)
    yield
    _path_counts.stop()
    accelerator.uninstall()


@pytest.fixture
def counting(tmp_path: Path) -> Path:
    directory = tmp_path / "counts"
    _path_counts.start(str(directory))
    return directory


def bound() -> dict[str, Any]:
    return {
        "_dedupe_key": sdk_items._dedupe_key,
        "deduplicate_input_items": sdk_items.deduplicate_input_items,
        "fingerprint_input_item": sdk_items.fingerprint_input_item,
        "prepare_input_with_session": sdk_session.prepare_input_with_session,
        "get_items": sdk_sqlite.SQLiteSession.get_items,
    }


def test_without_start_nothing_is_counted() -> None:
    accelerator.install()
    assert _path_counts.counts() == {}
    sdk_items.deduplicate_input_items([{"type": "message", "id": "a"}])
    assert _path_counts.counts() == {}


def test_groups_other_than_the_drop_ins_are_not_counted(counting: Path) -> None:
    other = _patches.Group(name="dedupe", module=_table.ITEMS, targets=())
    target = _patches.Target("x", lambda original, site: original)
    site = _patches.Site(sdk_items, {}, Watch(()), _patches.Context())
    assert _path_counts.wrap(other, target, len, lambda given: given, site) is len
    assert _path_counts.counts() == {}


def test_the_sdk_sees_the_same_names_signatures_and_kinds(counting: Path) -> None:
    accelerator.install()
    counted = bound()
    accelerator.uninstall()
    originals = bound()
    _path_counts.stop()
    accelerator.install()
    plain = bound()
    for name, value in counted.items():
        original = originals[name]
        assert value is not plain[name]
        assert value.__name__ == original.__name__ == plain[name].__name__
        assert value.__qualname__ == original.__qualname__
        assert inspect.signature(value) == inspect.signature(original)
        assert inspect.iscoroutinefunction(value) == inspect.iscoroutinefunction(original)
        assert inspect.unwrap(value) is original
    assert isinstance(sdk_sqlite.json, JsonModule)
    assert isinstance(sdk_session.copy, CopyModule)


def test_the_watches_are_the_same(counting: Path) -> None:
    def watched() -> list[list[str]]:
        return sorted(sorted(watch.names()) for watch in accelerator._watches)

    accelerator.install()
    with_counts = watched()
    accelerator.uninstall()
    _path_counts.stop()
    accelerator.install()
    assert with_counts == watched()


def test_own_paths_and_fallbacks_are_told_apart(
    counting: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accelerator.install()
    items = [{"type": "message", "role": "user", "content": "q", "id": "m1"}]
    expected = inspect.unwrap(sdk_items.deduplicate_input_items)(items)
    assert sdk_items.deduplicate_input_items(items) == expected
    assert _path_counts.counts()["dedupe"]["deduplicate_input_items"] == [1, 0]
    # A rebound name the original looks up: the replacement calls the SDK's original.
    with monkeypatch.context() as patched:
        patched.setattr(sdk_items, "_coerce_to_dict", lambda item: item)
        assert sdk_items.deduplicate_input_items(items) == expected
    assert _path_counts.counts()["dedupe"]["deduplicate_input_items"] == [2, 1]
    assert _path_counts.own_paths()["dedupe"] >= 1


def test_a_module_stand_in_counts_its_own_reads_and_its_fallbacks(counting: Path) -> None:
    accelerator.install()
    assert sdk_sqlite.json.loads('{"a": 1}') == {"a": 1}
    assert sdk_sqlite.json.loads('{"a": 1}', parse_int=str) == {"a": "1"}
    assert sdk_sqlite.json.dumps({"a": 1}) == '{"a": 1}'  # not sped up: not counted
    assert _path_counts.counts()["session_json"]["json"] == [2, 1]
    assert sdk_session.copy.deepcopy([{"a": [1]}]) == [{"a": [1]}]
    assert sdk_session.copy.copy([1]) == [1]
    assert _path_counts.counts()["callback_copies"]["copy"] == [1, 0]


def test_every_group_installed_has_a_tally_and_the_counts_are_written(counting: Path) -> None:
    accelerator.install()
    sdk_items.fingerprint_input_item({"a": 1})
    assert set(_path_counts.counts()) == {group.name for group in _table.GROUPS}
    _path_counts.flush()
    written = json.loads((counting / f"dropin-counts-{os.getpid()}.json").read_text())
    assert written["pid"] == os.getpid()
    assert written["groups"]["fingerprint"]["fingerprint_input_item"] == [1, 0]


def test_the_guard_s_checking_pass_of_the_counted_dedupe_counts_its_calls(
    counting: Path,
) -> None:
    accelerator.install(guard=True)
    bound = sdk_items.deduplicate_input_items_preferring_latest
    checked = accelerator._link.checked_of(bound)
    assert checked is not None  # the wrap hook linked the counting wrapper too
    items = [{"type": "message", "role": "user", "content": "q", "id": "m1"}]
    before = _path_counts.counts()["dedupe"]["deduplicate_input_items_preferring_latest"]
    kept, problems = checked(items, None)
    assert kept == items
    assert problems == []
    after = _path_counts.counts()["dedupe"]["deduplicate_input_items_preferring_latest"]
    assert after == [before[0] + 1, before[1]]
