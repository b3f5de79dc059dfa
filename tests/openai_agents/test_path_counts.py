"""``_path_counts``: with HISTCORE_DROPIN_COUNTS set at install, the calls that took
histcore's own path are told apart from the fallbacks to the SDK's original; the SDK
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
from histcore.openai_agents import _patches, _path_counts
from histcore.openai_agents._replacements import CopyModule, JsonModule


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    accelerator.uninstall()
    monkeypatch.setattr(_path_counts, "_tallies", {})
    monkeypatch.setattr(_path_counts, "_directory", None)
    yield
    accelerator.uninstall()


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    directory = tmp_path / "counts"
    monkeypatch.setenv(_path_counts.ENVIRONMENT, str(directory))
    return directory


def bound() -> dict[str, Any]:
    return {
        "_dedupe_key": sdk_items._dedupe_key,
        "deduplicate_input_items": sdk_items.deduplicate_input_items,
        "fingerprint_input_item": sdk_items.fingerprint_input_item,
        "prepare_input_with_session": sdk_session.prepare_input_with_session,
        "get_items": sdk_sqlite.SQLiteSession.get_items,
    }


def test_without_the_variable_nothing_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_path_counts.ENVIRONMENT, raising=False)
    assert _path_counts.counter(_patches.GROUPS[0], "_dedupe_key") is None
    accelerator.install()
    assert _path_counts.counts() == {}
    sdk_items.deduplicate_input_items([{"type": "message", "id": "a"}])
    assert _path_counts.counts() == {}


def test_groups_other_than_the_drop_ins_are_not_counted(counting: Path) -> None:
    other = _patches.Group(name="dedupe", module=_patches.ITEMS, targets=())
    assert _path_counts.counter(other, "x") is None


def test_the_sdk_sees_the_same_names_signatures_and_kinds(counting: Path) -> None:
    accelerator.install()
    counted = bound()
    accelerator.uninstall()
    originals = bound()
    os.environ.pop(_path_counts.ENVIRONMENT)
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
    os.environ.pop(_path_counts.ENVIRONMENT)
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
    assert set(_path_counts.counts()) == {group.name for group in _patches.GROUPS}
    _path_counts.flush()
    written = json.loads((counting / f"dropin-counts-{os.getpid()}.json").read_text())
    assert written["pid"] == os.getpid()
    assert written["groups"]["fingerprint"]["fingerprint_input_item"] == [1, 0]
