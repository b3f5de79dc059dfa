"""``histcore.openai_agents.install()``: where it patches, how it undoes, what it refuses."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
import types
import warnings
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.memory.sqlite_session as sdk_sqlite
import agents.run_internal.items as sdk_items
import agents.run_internal.run_loop as sdk_run_loop
import agents.run_internal.session_persistence as sdk_session
import agents.util._json as sdk_json

import histcore.openai_agents as accelerator
from histcore.openai_agents import _patches, _table, _versions

# Every helper the accelerator knows, by defining module and name.
# (A method is named with its class: ``SQLiteSession.get_items``.)
HELPERS = [
    (group.module, target.attr if target.owner is None else f"{target.owner}.{target.attr}")
    for group in _table.GROUPS
    for target in group.targets
]
# Standard library modules swapped only in the SDK module that uses them.
MODULE_STAND_INS = ("copy", "json")
# Helpers built only for the call that pins them, never bound in a module.
PINNED = {target.attr for group in _table.GROUPS for target in group.targets if not target.bound}


def _originals() -> dict[tuple[str, str], Any]:
    return {
        (module, attr): functools.reduce(getattr, attr.split("."), importlib.import_module(module))
        for module, attr in HELPERS
    }


def _bindings_of(objects: dict[tuple[str, str], Any]) -> set[tuple[str, str]]:
    """Every ``agents`` module attribute that is one of ``objects``."""
    wanted = {id(value) for value in objects.values()}
    found = set()
    for module in _patches.sdk_modules(_table.PACKAGE):
        for attr, value in list(vars(module).items()):
            if id(value) in wanted and any(value is v for v in objects.values()):
                found.add((module.__name__, attr))
    return found


@pytest.fixture(autouse=True)
def clean_state() -> Any:
    accelerator.uninstall()
    originals = _originals()
    yield originals
    accelerator.uninstall()
    assert _originals() == originals, "a test left a helper replaced"


def test_install_replaces_every_binding_and_uninstall_restores_them(
    clean_state: dict[tuple[str, str], Any],
) -> None:
    originals = clean_state
    bound_before = _bindings_of(originals)
    # The runner and the session code hold their own copies of the names.
    assert (
        "agents.run_internal.run_loop",
        "deduplicate_input_items_preferring_latest",
    ) in bound_before
    assert ("agents.run_internal.session_persistence", "drop_orphan_function_calls") in bound_before
    assert ("agents.items", "_to_dump_compatible") in bound_before

    installation = accelerator.install()
    assert accelerator.is_installed()
    assert accelerator.installation() is installation
    assert installation.supported
    assert installation.skipped == {}
    # No module still sees an original (``copy`` and ``json`` are only swapped where used;
    # the pinned helpers never are).
    assert PINNED == {
        "_session_item_key",
        "_build_reference_map",
        "_build_frequency_map",
        "_consume_reference",
    }
    helpers = {k: v for k, v in originals.items() if k[1] not in {*MODULE_STAND_INS, *PINNED}}
    assert _bindings_of(helpers) == set()
    pinned = {k: v for k, v in originals.items() if k[1] in PINNED}
    assert _bindings_of(pinned) == {b for b in bound_before if b[1] in PINNED}
    assert set(installation.replaced) >= {
        f"{m}.{a}" for m, a in bound_before if a not in {*MODULE_STAND_INS, *PINNED}
    }
    assert (
        sdk_run_loop.deduplicate_input_items_preferring_latest
        is not originals[("agents.run_internal.items", "deduplicate_input_items_preferring_latest")]
    )
    assert type(sdk_session.copy).__name__ == "CopyModule"
    assert type(sdk_sqlite.json).__name__ == "JsonModule"
    get_items = originals[("agents.memory.sqlite_session", "SQLiteSession.get_items")]
    assert sdk_sqlite.SQLiteSession.get_items is not get_items
    assert "agents.memory.sqlite_session.SQLiteSession.get_items" in installation.replaced

    accelerator.uninstall()
    assert not accelerator.is_installed()
    assert accelerator.installation() is None
    assert _originals() == originals
    assert _bindings_of(originals) == bound_before
    assert sdk_session.copy is __import__("copy")
    assert sdk_sqlite.json is __import__("json")
    assert sdk_sqlite.SQLiteSession.get_items is get_items


def test_install_is_idempotent() -> None:
    first = accelerator.install()
    patched = sdk_items.drop_orphan_function_calls
    assert accelerator.install() is first
    assert sdk_items.drop_orphan_function_calls is patched
    accelerator.uninstall()
    accelerator.uninstall()  # a second uninstall is a no-op
    assert sdk_items.drop_orphan_function_calls.__module__ == "agents.run_internal.items"


def test_installed_context_manager_restores_the_previous_state(
    clean_state: dict[tuple[str, str], Any],
) -> None:
    with accelerator.installed() as installation:
        assert accelerator.is_installed()
        assert installation.replaced
    assert not accelerator.is_installed()
    assert _originals() == clean_state

    accelerator.install()
    with accelerator.installed():
        pass
    assert accelerator.is_installed(), "an outer install() must survive the block"


def test_installed_context_manager_restores_on_error() -> None:
    with pytest.raises(RuntimeError, match="inside"):
        with accelerator.installed():
            raise RuntimeError("inside")
    assert not accelerator.is_installed()


def test_module_imported_after_install_gets_the_replacement_and_loses_it_again() -> None:
    accelerator.install()
    late = types.ModuleType("agents._histcore_late_import_probe")
    sys.modules[late.__name__] = late
    try:
        exec("from agents.run_internal.items import drop_orphan_function_calls", late.__dict__)
        assert late.drop_orphan_function_calls is sdk_items.drop_orphan_function_calls
        assert late.drop_orphan_function_calls.__module__.startswith("histcore")
        accelerator.uninstall()
        assert late.drop_orphan_function_calls.__module__ == "agents.run_internal.items"
    finally:
        del sys.modules[late.__name__]


def test_missing_sdk_raises_import_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # what an uninstalled package looks like
    with pytest.raises(ImportError, match=r"pip install 'histcore\[openai-agents\]'"):
        accelerator.install()
    assert not accelerator.is_installed()


def test_unknown_sdk_version_warns_and_patches_what_it_recognises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(accelerator, "sdk_version", lambda: "0.31.2")
    with pytest.warns(RuntimeWarning, match=r"0\.31\.2 is not a supported release"):
        installation = accelerator.install()
    assert not installation.supported
    assert installation.skipped == {}  # same helper sources as a supported release
    assert sdk_items.drop_orphan_function_calls.__module__.startswith("histcore")


def test_changed_helper_source_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = tuple(
        dataclasses.replace(g, digests=frozenset({"0000000000000000"}))
        if g.name == "orphans"
        else g
        for g in _table.GROUPS
    )
    monkeypatch.setattr(_table, "GROUPS", groups)
    with pytest.warns(RuntimeWarning, match="orphans"):
        installation = accelerator.install()
    assert "orphans" in installation.skipped
    assert "changed" in installation.skipped["orphans"]
    assert sdk_items.drop_orphan_function_calls.__module__ == "agents.run_internal.items"
    assert sdk_items.deduplicate_input_items.__module__.startswith("histcore")


def test_group_is_skipped_when_another_function_uses_its_private_map(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace: dict[str, Any] = {}
    exec(
        "def other_user(ref_map, key, item):\n    return _consume_reference(ref_map, key, item)\n",
        namespace,
    )
    function = namespace["other_user"]
    function.__module__ = sdk_session.__name__
    monkeypatch.setattr(sdk_session, "other_user", function, raising=False)
    with pytest.warns(RuntimeWarning, match="session_keys"):
        installation = accelerator.install()
    assert "other_user" in installation.skipped["session_keys"]
    assert sdk_session._consume_reference.__module__ == sdk_session.__name__


def test_failure_while_installing_leaves_nothing_replaced(
    monkeypatch: pytest.MonkeyPatch, clean_state: dict[tuple[str, str], Any]
) -> None:
    # The last target of a group in the middle fails to build, after others were built.
    index = next(i for i, g in enumerate(_table.GROUPS) if g.name == "session_keys")
    group = _table.GROUPS[index]
    broken = dataclasses.replace(group.targets[-1], build=lambda *_: 1 / 0)
    groups = (
        *_table.GROUPS[:index],
        dataclasses.replace(group, targets=(*group.targets[:-1], broken)),
        *_table.GROUPS[index + 1 :],
    )
    monkeypatch.setattr(_table, "GROUPS", groups)
    with pytest.raises(ZeroDivisionError):
        accelerator.install()
    assert not accelerator.is_installed()
    assert _originals() == clean_state
    assert _bindings_of({k: v for k, v in clean_state.items()}) == _bindings_of(clean_state)


def test_to_dump_compatible_defining_module_is_patched_too() -> None:
    original = sdk_json._to_dump_compatible
    with accelerator.installed():
        assert sdk_json._to_dump_compatible is not original
        assert sdk_json._to_dump_compatible([{"a": (1,)}]) == [{"a": [1]}]
    assert sdk_json._to_dump_compatible is original


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        ("0.22.0", True),
        ("0.23.1", True),
        ("0.24.0", True),
        ("0.24.9rc1", True),
        ("0.21.9", False),
        ("0.25.0", False),
        ("1.0", False),
        ("garbage", False),
        (None, False),
    ],
)
def test_supported_versions(version: str | None, supported: bool) -> None:
    assert _versions.is_supported(version) is supported


def test_parse_version() -> None:
    assert _versions.parse_version("0.24.0rc1") == (0, 24, 0)
    assert _versions.parse_version("v1.2") == (1, 2)
    with pytest.raises(ValueError, match="not a version"):
        _versions.parse_version("latest")


def test_supported_range_matches_the_extra() -> None:
    """pyproject's openai-agents extra and the declared range must agree."""
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not running from a source checkout")
    text = pyproject.read_text(encoding="utf-8")
    (low_major, low_minor), (high_major, high_minor) = _versions.SUPPORTED
    assert f"openai-agents>={low_major}.{low_minor},<{high_major}.{high_minor}" in text


def test_install_emits_no_warning_on_the_supported_sdk() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accelerator.install()
