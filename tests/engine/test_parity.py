"""The two engines expose one API: same names, same signatures, a stub that matches."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import histcore
import histcore.items
from histcore.engine import _support, input_rules, items
from histcore.engine.names import CORE_ONLY_NAMES, FACE_NAMES, INTERNAL_NAMES, SUPPORT_NAMES
from tests.support.engine_names import ENGINE_NAMES, ITEM_NAMES

CORE_ONLY = set(CORE_ONLY_NAMES)
# The stub in the checkout: the pure-Python wheel does not ship it.
STUB = Path(__file__).resolve().parents[2] / "python" / "histcore" / "_core.pyi"


def _public(module: ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    signature = inspect.signature(function)
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def _stub_all() -> list[str]:
    """The stub's ``__all__``, which it must list literally."""
    for node in ast.parse(STUB.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return value
    raise AssertionError(f"{STUB} has no __all__")


def test_names_are_listed_once() -> None:
    assert len(set(ENGINE_NAMES)) == len(ENGINE_NAMES)
    assert set(INTERNAL_NAMES) <= set(ENGINE_NAMES)
    assert not set(CORE_ONLY_NAMES) & set(ENGINE_NAMES)


def test_stub_lists_the_engine_names() -> None:
    """The stub's ``__all__`` is histcore.engine.names' list (and the core-only names),
    and it declares every one of them."""
    listed = _stub_all()
    assert sorted(listed) == sorted([*ENGINE_NAMES, *CORE_ONLY_NAMES])
    declared: set[str] = set()
    for node in ast.parse(STUB.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
    assert set(listed) <= declared


def test_twin_exports_the_engine_names(pure: ModuleType) -> None:
    # The item passes are public at histcore.items alone (tests/test_public_paths.py).
    assert sorted(pure.__all__) == sorted(set(ENGINE_NAMES) - set(ITEM_NAMES))
    assert set(ENGINE_NAMES) <= _public(pure)


def test_no_name_is_both_an_item_pass_and_support() -> None:
    assert not set(ITEM_NAMES) & set(SUPPORT_NAMES)


@pytest.mark.parametrize(
    ("binder", "names"), [(items, ITEM_NAMES), (_support, SUPPORT_NAMES)], ids=["items", "_support"]
)
def test_binders_bind_their_engine_names(binder: ModuleType, names: tuple[str, ...]) -> None:
    """``histcore.engine.items`` binds the item passes and ``histcore.engine._support``
    the rest, but the internal names, each the loaded backend module's own object."""
    bound = set(names) - set(INTERNAL_NAMES)
    if binder is _support:
        assert set(binder.__all__) == bound
    module = importlib.import_module(
        "histcore._core" if items.BACKEND == "rust" else "histcore.engine.pure"
    )
    for name in bound:
        assert getattr(binder, name) is getattr(module, name), name


def test_histcore_items_is_the_face_of_the_item_passes() -> None:
    """``histcore.items`` exports the item passes (their ``input_problems`` and
    ``repair_input`` the readable ones of ``histcore.engine.input_rules``), the backend
    name and ``InputProblem``; ``histcore.engine.items`` exports none of them."""
    assert set(FACE_NAMES) <= set(histcore.items.__all__)
    assert len(set(histcore.items.__all__)) == len(histcore.items.__all__)
    assert items.__all__ == []
    for name in histcore.items.__all__:
        faced = (*INTERNAL_NAMES, "InputProblem", "LOST_OUTPUT_TEXT")
        bound_at = input_rules if name in faced else items
        assert getattr(histcore.items, name) is getattr(bound_at, name), name


def test_same_public_names(pure: ModuleType, core: ModuleType) -> None:
    assert sorted(_public(core) - CORE_ONLY) == sorted(ENGINE_NAMES)
    if hasattr(core, "__all__"):
        assert sorted(set(core.__all__) - CORE_ONLY) == sorted(ENGINE_NAMES)


def test_same_signatures(pure: ModuleType, core: ModuleType) -> None:
    for name in ENGINE_NAMES:
        ours = getattr(pure, name)
        if not callable(ours):
            assert getattr(core, name) == ours, name
            continue
        assert _parameters(getattr(core, name)) == _parameters(ours), name


def test_build_profile(core: ModuleType) -> None:
    assert core.build_profile in ("release", "debug")


def test_stub_matches_the_extension(core: ModuleType, tmp_path: Path) -> None:
    """``mypy.stubtest`` checks _core.pyi against the compiled module."""
    # Run outside the checkout, with the directory histcore was imported from first on
    # the path (a relative PYTHONPATH would not survive the change of directory).
    package_root = str(Path(str(core.__file__)).resolve().parent.parent)
    search_path = os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": search_path, "MYPY_CACHE_DIR": str(tmp_path / "cache")}
    completed = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "histcore._core"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_same_docstrings(pure: ModuleType, core: ModuleType) -> None:
    """Every engine function documents itself with the twin's words (the Rust ``///``
    text is the docstring; the signature lives in ``__text_signature__``)."""
    functions = [name for name in ENGINE_NAMES if callable(getattr(pure, name))]
    assert functions
    for name in functions:
        ours = inspect.getdoc(getattr(pure, name))
        assert ours, name
        assert inspect.getdoc(getattr(core, name)) == ours, name
