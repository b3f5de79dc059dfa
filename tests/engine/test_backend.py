"""Backend selection through HISTCORE_BACKEND, each case in a fresh interpreter.

Missing and broken extensions are simulated on a temporary copy of the imported
histcore package, so the real installation is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import histcore

PACKAGE_DIR = Path(histcore.__file__).resolve().parent
REPORT = (
    "import json, histcore, histcore.engine.backend as b; "
    "print(json.dumps([histcore.BACKEND, b.backend_module.__name__, histcore.__file__]))"
)


def _extension_built() -> bool:
    return any(path.suffix in (".so", ".pyd") for path in PACKAGE_DIR.glob("_core*"))


def run(root: Path, backend: str | None, code: str = REPORT) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with only ``root`` (holding a histcore package) on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HISTCORE_BACKEND")}
    env["PYTHONPATH"] = str(root)
    if backend is not None:
        env["HISTCORE_BACKEND"] = backend
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def loaded(completed: subprocess.CompletedProcess[str]) -> list[Any]:
    assert completed.returncode == 0, completed.stderr
    result: list[Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def failure(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode != 0, completed.stdout
    assert "ImportError" in completed.stderr, completed.stderr
    return completed.stderr


@pytest.fixture
def without_extension(tmp_path: Path) -> Path:
    """A copy of the histcore package with no compiled extension in it."""
    shutil.copytree(
        PACKAGE_DIR,
        tmp_path / "histcore",
        ignore=shutil.ignore_patterns("_core*.so", "_core*.pyd", "__pycache__"),
    )
    assert not list((tmp_path / "histcore").glob("_core*.so"))
    return tmp_path


def _with_broken_core(root: Path, body: str) -> Path:
    (root / "histcore" / "_core.py").write_text(body, encoding="utf-8")
    return root


@pytest.mark.parametrize("value", ["python", "PYTHON", " python "])
def test_python_forces_the_twin(value: str) -> None:
    backend, engine, _ = loaded(run(PACKAGE_DIR.parent, value))
    assert (backend, engine) == ("python", "histcore.engine.pure")


@pytest.mark.parametrize("value", ["fast", "c", "pure"])
def test_invalid_value_is_a_clear_import_error(value: str) -> None:
    message = failure(run(PACKAGE_DIR.parent, value))
    assert "HISTCORE_BACKEND" in message
    assert repr(value) in message
    assert "auto" in message
    assert "rust" in message
    assert "python" in message


@pytest.mark.parametrize("value", [None, "", "auto"])
def test_auto_falls_back_when_extension_is_missing(
    without_extension: Path, value: str | None
) -> None:
    backend, engine, where = loaded(run(without_extension, value))
    assert (backend, engine) == ("python", "histcore.engine.pure")
    assert Path(where).resolve().is_relative_to(without_extension.resolve())


def test_rust_fails_loudly_when_extension_is_missing(without_extension: Path) -> None:
    stderr = failure(run(without_extension, "rust"))
    # One traceback (no chained ModuleNotFoundError), ending in one line that says
    # what is wrong and both ways out.
    assert stderr.count("Traceback") == 1, stderr
    message = stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: HISTCORE_BACKEND=rust, but ")
    assert "pure-Python build (no histcore._core)" in message
    assert "install the compiled wheel or build from source with a Rust toolchain" in message
    assert "unset HISTCORE_BACKEND (or set it to auto or python)" in message


@pytest.mark.parametrize("value", [None, "auto", "rust"])
def test_broken_extension_never_falls_back(without_extension: Path, value: str | None) -> None:
    root = _with_broken_core(without_extension, 'raise ImportError("simulated broken extension")\n')
    assert "simulated broken extension" in failure(run(root, value))


@pytest.mark.parametrize("value", [None, "auto"])
def test_extension_missing_a_dependency_never_falls_back(
    without_extension: Path, value: str | None
) -> None:
    root = _with_broken_core(without_extension, "import histcore_missing_dependency_xyz\n")
    assert "histcore_missing_dependency_xyz" in failure(run(root, value))


def test_python_ignores_a_broken_extension(without_extension: Path) -> None:
    root = _with_broken_core(without_extension, 'raise ImportError("simulated")\n')
    assert loaded(run(root, "python"))[:2] == ["python", "histcore.engine.pure"]


@pytest.mark.skipif(not _extension_built(), reason="Rust extension histcore._core not built")
@pytest.mark.parametrize("value", [None, "auto", "rust", "RUST"])
def test_extension_is_used_when_present(value: str | None) -> None:
    backend, engine, _ = loaded(run(PACKAGE_DIR.parent, value))
    assert (backend, engine) == ("rust", "histcore._core")


def test_public_api_is_bound_to_the_selected_engine() -> None:
    code = (
        "import json, histcore, histcore.items as i, histcore.engine.backend as b; "
        "names = [n for n in i.__all__ if n not in ('BACKEND', 'MAX_DEPTH', 'InputProblem', "
        "'input_problems', 'repair_input', 'LOST_OUTPUT_TEXT')]; "
        "print(json.dumps([all(getattr(i, n) is getattr(b.backend_module, n) for n in names), "
        "all(getattr(histcore, n) is getattr(i, n) for n in names)]))"
    )
    for value in ("python", None):
        assert loaded(run(PACKAGE_DIR.parent, value, code)) == [True, True]
