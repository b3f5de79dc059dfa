"""The installed distribution (one version, honest metadata) and the in-tree build backend.

The backend (scripts/build_backend/histcore_build_backend.py) is exercised here on a
small fake source tree: the pure wheel it writes, and the message a build without cargo
ends with. scripts/check_dist.py checks the real release artifacts.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

import histcore

REPO = Path(__file__).resolve().parent.parent
BACKEND_FILE = REPO / "scripts" / "build_backend" / "histcore_build_backend.py"


def cargo_version() -> str:
    text = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    match = re.search(r'^version\s*=\s*"([^"]+)"', package, re.M)
    assert match is not None
    return match.group(1)


# --- the installed distribution ---------------------------------------------------------


def test_version_comes_from_the_installed_metadata_which_is_cargo_s() -> None:
    assert histcore.__version__ == importlib.metadata.version("histcore") == cargo_version()


def test_the_version_is_written_once() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert not re.search(r"^version\s*=", pyproject, re.M)
    init = (REPO / "python" / "histcore" / "__init__.py").read_text(encoding="utf-8")
    assert not re.search(r"__version__\s*=\s*[\"']\d+\.\d+", init)


def test_metadata_is_honest() -> None:
    metadata = importlib.metadata.metadata("histcore")
    classifiers = metadata.get_all("Classifier") or []
    assert "Operating System :: OS Independent" not in classifiers
    for expected in (
        "Programming Language :: Rust",
        "Typing :: Typed",
        "Programming Language :: Python :: Implementation :: CPython",
        "Operating System :: POSIX :: Linux",
        "Operating System :: MacOS",
        "Operating System :: Microsoft :: Windows",
        *(f"Programming Language :: Python :: 3.{minor}" for minor in (10, 11, 12, 13)),
    ):
        assert expected in classifiers
    # No placeholder links (the old ones pointed at a PyPI page that did not exist).
    assert not metadata.get_all("Project-URL")
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["License-Expression"] == "MIT"


def test_backend_matches_what_was_installed() -> None:
    from histcore.engine import backend

    requested = os.environ.get("HISTCORE_BACKEND", "auto").strip().lower() or "auto"
    spec = importlib.util.find_spec("histcore._core")
    files = importlib.metadata.files("histcore") or []
    # The compiled extension, not its stub (the Rust wheel ships _core.pyi beside it).
    compiled = [
        f
        for f in files
        if f.suffix != ".pyi" and (f.name.startswith("_core.") or f.suffix in (".so", ".pyd"))
    ]
    if spec is None:
        # The pure wheel: nothing compiled, and auto (or python) gives the pure twin.
        assert histcore.BACKEND == "python"
        assert backend.backend_module.__name__ == "histcore.engine.pure"
        assert not compiled
        return
    # The extension is installed: it is histcore's own, and the engine in use unless
    # the pure twin was asked for.
    assert spec.origin is not None
    assert Path(spec.origin).parent == Path(histcore.__file__).parent
    expected = "python" if requested == "python" else "rust"
    assert histcore.BACKEND == expected, f"HISTCORE_BACKEND={requested}"
    engine_module = "histcore.engine.pure" if expected == "python" else "histcore._core"
    assert backend.backend_module.__name__ == engine_module
    if any(f.parts[0] == "histcore" for f in files):
        # Installed from a wheel (not editable): the extension is one of its files.
        assert [Path(str(f.locate())).resolve() for f in compiled] == [Path(spec.origin).resolve()]


# --- the build backend --------------------------------------------------------------------


@pytest.fixture(scope="module")
def backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("histcore_build_backend", BACKEND_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PKG_INFO = b"""Metadata-Version: 2.4
Name: histcore
Version: 9.8.7
Requires-Dist: orjson>=3.9
License-File: LICENSE
Summary: test

body
"""

PYPROJECT = """
[project]
name = "histcore"
dynamic = ["version"]

[project.scripts]
histcore = "histcore.cli:main"

[tool.maturin]
python-source = "python"
module-name = "histcore._core"
"""


def fake_sdist(root: Path) -> Path:
    package = root / "python" / "histcore"
    (package / "sub").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "PKG-INFO").write_bytes(PKG_INFO)
    (root / "LICENSE").write_text("MIT\n", encoding="utf-8")
    (package / "__init__.py").write_text("x = 1\n", encoding="utf-8")
    (package / "py.typed").write_text("", encoding="utf-8")
    (package / "sub" / "mod.py").write_text("y = 2\n", encoding="utf-8")
    (package / "_core.pyi").write_text("def f() -> None: ...\n", encoding="utf-8")
    (package / "_core.abi3.so").write_bytes(b"\x7fELF")
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    return root


def test_pure_wheel_from_an_sdist(
    backend: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fake_sdist(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("HISTCORE_BUILD_PURE", "1")
    assert backend.get_requires_for_build_wheel() == []
    name = backend.build_wheel(str(out))
    assert name == "histcore-9.8.7-py3-none-any.whl"
    with zipfile.ZipFile(out / name) as wheel:
        files = {entry: wheel.read(entry) for entry in wheel.namelist()}
    info = "histcore-9.8.7.dist-info/"
    assert sorted(files) == sorted(
        [
            "histcore/__init__.py",
            "histcore/py.typed",
            "histcore/sub/mod.py",
            info + "METADATA",
            info + "WHEEL",
            info + "entry_points.txt",
            info + "licenses/LICENSE",
            info + "RECORD",
        ]
    )
    assert files[info + "METADATA"] == PKG_INFO  # maturin's metadata, untouched
    assert b"Tag: py3-none-any\n" in files[info + "WHEEL"]
    assert b"Root-Is-Purelib: true\n" in files[info + "WHEEL"]
    assert files[info + "entry_points.txt"] == b"[console_scripts]\nhistcore=histcore.cli:main\n"
    assert files[info + "licenses/LICENSE"] == b"MIT\n"
    record = files[info + "RECORD"].decode().splitlines()
    assert record[-1] == info + "RECORD,,"
    for line in record[:-1]:
        path, digest, size = line.rsplit(",", 2)
        data = files[path]
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        assert digest == "sha256=" + expected.decode()
        assert int(size) == len(data)
    # The same sources give the same bytes (fixed dates, sorted entries).
    again = tmp_path / "again"
    again.mkdir()
    backend.build_wheel(str(again))
    assert (again / name).read_bytes() == (out / name).read_bytes()

    metadata_dir = tmp_path / "meta"
    metadata_dir.mkdir()
    info_name = backend.prepare_metadata_for_build_wheel(str(metadata_dir))
    assert info_name == "histcore-9.8.7.dist-info"
    assert (metadata_dir / info_name / "METADATA").read_bytes() == PKG_INFO


@pytest.mark.parametrize("hook", ["get_requires_for_build_wheel", "build_sdist"])
def test_without_cargo_the_build_names_both_ways_out(
    backend: ModuleType,
    hook: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(fake_sdist(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CARGO", raising=False)
    monkeypatch.delenv("HISTCORE_BUILD_PURE", raising=False)
    monkeypatch.setenv("MATURIN_NO_INSTALL_RUST", "1")
    with pytest.raises(SystemExit) as exc:
        getattr(backend, hook)(*([] if hook.startswith("get_") else [str(tmp_path)]))
    assert exc.value.code == 1
    message = capsys.readouterr().err
    assert "cargo" in message
    assert "MATURIN_NO_INSTALL_RUST" in message
    assert "https://rustup.rs" in message
    assert "pip install --only-binary histcore histcore" in message
    assert "HISTCORE_BUILD_PURE=1 pip install --no-cache-dir" in message


def test_pure_build_from_a_checkout_without_cargo_says_why(
    backend: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = fake_sdist(tmp_path / "src")
    (root / "PKG-INFO").unlink()
    (root / "Cargo.toml").write_text('[package]\nname = "histcore"\n', encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CARGO", raising=False)
    monkeypatch.setenv("HISTCORE_BUILD_PURE", "1")
    with pytest.raises(SystemExit):
        backend.build_wheel(str(tmp_path))
    assert "build the sdist first" in capsys.readouterr().err


def test_pure_editable_is_refused(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HISTCORE_BUILD_PURE", "1")
    with pytest.raises(SystemExit):
        backend.build_editable("unused")
    assert "HISTCORE_BACKEND=python" in capsys.readouterr().err


def test_the_sdist_carries_the_backend() -> None:
    # pyproject.toml points at the backend; maturin's sdist takes every file git tracks.
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'build-backend = "histcore_build_backend"' in pyproject
    assert 'backend-path = ["scripts/build_backend"]' in pyproject
    assert BACKEND_FILE.is_file()


class FakeMaturin:
    """Stands in for maturin's hooks: records calls, or fails as a toolchain download would."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def get_requires_for_build_wheel(self, config_settings: object = None) -> list[str]:
        self.calls.append("get_requires_for_build_wheel")
        if self.fail:
            raise SystemExit(1)
        return ["puccinialin"]


def test_without_cargo_maturin_may_fetch_rust_and_a_failure_is_explained(
    backend: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = FakeMaturin(fail=True)
    monkeypatch.setattr(backend, "_maturin", lambda: fake)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CARGO", raising=False)
    monkeypatch.delenv("MATURIN_NO_INSTALL_RUST", raising=False)
    monkeypatch.delenv("HISTCORE_BUILD_PURE", raising=False)
    with pytest.raises(SystemExit):
        backend.get_requires_for_build_wheel()
    err = capsys.readouterr().err
    assert fake.calls == ["get_requires_for_build_wheel"]
    assert "maturin downloads a Rust toolchain" in err
    assert "maturin could not install one" in err
    assert "pip install --only-binary histcore histcore" in err


def test_with_cargo_every_hook_is_maturin_s(
    backend: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cargo = tmp_path / "bin" / "cargo"
    cargo.parent.mkdir()
    cargo.write_text("#!/bin/sh\n", encoding="utf-8")
    cargo.chmod(0o755)
    fake = FakeMaturin(fail=False)
    monkeypatch.setattr(backend, "_maturin", lambda: fake)
    monkeypatch.setenv("PATH", str(cargo.parent))
    monkeypatch.delenv("CARGO", raising=False)
    monkeypatch.delenv("HISTCORE_BUILD_PURE", raising=False)
    assert backend.get_requires_for_build_wheel() == ["puccinialin"]
    assert fake.calls == ["get_requires_for_build_wheel"]
