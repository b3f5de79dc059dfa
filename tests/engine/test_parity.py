"""The two engines expose one API: same names, same signatures, a stub that matches."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

# Names only the extension has: which build it is, for benchmarks that refuse debug.
CORE_ONLY = {"build_profile"}


def _public(module: ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    signature = inspect.signature(function)
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def test_same_public_names(pure: ModuleType, core: ModuleType) -> None:
    assert sorted(_public(core) - CORE_ONLY) == sorted(pure.__all__)
    assert set(pure.__all__) <= _public(pure)
    if hasattr(core, "__all__"):
        assert sorted(set(core.__all__) - CORE_ONLY) == sorted(pure.__all__)


def test_same_signatures(pure: ModuleType, core: ModuleType) -> None:
    for name in pure.__all__:
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
    functions = [name for name in pure.__all__ if callable(getattr(pure, name))]
    assert functions
    for name in functions:
        ours = inspect.getdoc(getattr(pure, name))
        assert ours, name
        assert inspect.getdoc(getattr(core, name)) == ours, name
