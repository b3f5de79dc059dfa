"""histcore's PEP 517 build backend: maturin, plus a pure-Python wheel and a clear no-Rust error.

pyproject.toml names this module (``backend-path``), so pip, ``python -m build`` and the
release workflow all come through here. Three cases:

* cargo is available (the usual case): every hook is maturin's, unchanged.
* ``HISTCORE_BUILD_PURE=1``: ``build_wheel`` writes ``histcore-<version>-py3-none-any.whl``,
  the package without the compiled extension (``histcore._core`` and its stub), so
  ``histcore.BACKEND == "python"``. Its METADATA is maturin's own, byte for byte: the
  sdist's PKG-INFO when building from an sdist (no cargo needed), otherwise what
  ``maturin pep517 write-dist-info`` writes from a checkout (needs cargo). ``scripts/dist.sh``
  builds the release's pure wheel this way, from the sdist.
* cargo is missing: with ``MATURIN_NO_INSTALL_RUST`` set the build stops at once with a
  message naming the ways out (a Rust toolchain, or the pure wheel); without it maturin
  downloads a Rust toolchain itself, and if that fails the same message follows its error.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from email.parser import BytesParser
from pathlib import Path
from typing import Any, NoReturn

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PURE_ENV = "HISTCORE_BUILD_PURE"
PURE_TAG = "py3-none-any"
# Files of the package directory that never go into the pure wheel: the extension and
# its type stub (a stub for a module that is not there would mislead type checkers),
# and build or byte-code leftovers of a checkout.
_COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll", ".pyc", ".pyo")
# Zip entries carry this date unless SOURCE_DATE_EPOCH says otherwise, as maturin's do.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def cargo_available() -> bool:
    return shutil.which(os.environ.get("CARGO") or "cargo") is not None


def rust_missing_message(install_rust_refused: bool) -> str:
    """What a user reads when the Rust engine cannot be built here."""
    why = (
        "cargo (the Rust toolchain) is not on PATH and MATURIN_NO_INSTALL_RUST is set"
        if install_rust_refused
        else "cargo (the Rust toolchain) is not on PATH and maturin could not install one"
    )
    return f"""
histcore: cannot build the compiled engine from this source: {why}.

Two ways out:
  1. Install a Rust toolchain (https://rustup.rs, or your system's cargo package),
     make sure `cargo` is on PATH, and install again.
  2. Install a prebuilt wheel instead of building this source:
         pip install --only-binary histcore histcore
     Where no compiled wheel fits your platform, that is the pure-Python wheel: the
     same package without the compiled engine (histcore.BACKEND == "python": same
     results, slower). Or build that pure package from this sdist:
         {PURE_ENV}=1 pip install --no-cache-dir histcore-<version>.tar.gz
     (--no-cache-dir: pip would otherwise keep that wheel for later source builds)
"""


def _fail(message: str) -> NoReturn:
    sys.stderr.write(message)
    sys.stderr.flush()
    raise SystemExit(1)


def _maturin() -> Any:
    # Imported on use, so that the pure-Python parts run (and are tested) without maturin.
    import maturin

    return maturin


def _with_rust(hook_name: str, *args: Any) -> Any:
    """Run one of maturin's hooks, explaining a missing cargo instead of failing cryptically."""
    if cargo_available():
        return getattr(_maturin(), hook_name)(*args)
    if os.environ.get("MATURIN_NO_INSTALL_RUST"):
        _fail(rust_missing_message(install_rust_refused=True))
    sys.stderr.write(
        "histcore: cargo is not on PATH; maturin downloads a Rust toolchain into a temporary "
        "directory (set MATURIN_NO_INSTALL_RUST=1 to refuse, or "
        f"{PURE_ENV}=1 for the pure-Python package)\n"
    )
    try:
        return getattr(_maturin(), hook_name)(*args)
    except (Exception, SystemExit):
        sys.stderr.write(rust_missing_message(install_rust_refused=False))
        raise


# --- the pure-Python wheel ------------------------------------------------------------


def _pyproject(root: Path) -> dict[str, Any]:
    with open(root / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


def _package_layout(root: Path) -> tuple[Path, str]:
    """The package directory and the extension's module name, from [tool.maturin]."""
    config = _pyproject(root).get("tool", {}).get("maturin", {})
    module = str(config["module-name"])  # e.g. "histcore._core"
    package, _, extension = module.rpartition(".")
    if not package or "." in package:
        raise ValueError(f"expected a module-name of the form package._ext, not {module!r}")
    return root / str(config.get("python-source", ".")) / package, extension


def package_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(path in the wheel, file) for the package without its compiled extension."""
    package_dir, extension = _package_layout(root)
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"no package at {package_dir}")
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir)
        if not path.is_file() or "__pycache__" in relative.parts:
            continue
        if path.suffix in _COMPILED_SUFFIXES:
            continue
        if len(relative.parts) == 1 and path.name.split(".")[0] == extension:
            continue  # _core.pyi, _core.abi3.so, ...
        yield f"{package_dir.name}/{relative.as_posix()}", path


def _metadata_from_maturin(root: Path) -> bytes:
    if not (root / "Cargo.toml").is_file():
        raise FileNotFoundError("neither PKG-INFO nor Cargo.toml found: not a histcore source tree")
    if not cargo_available():
        _fail(
            "histcore: a pure build from a checkout takes its metadata from maturin, which "
            "needs cargo; build the sdist first (it carries PKG-INFO) or install a Rust "
            "toolchain.\n"
        )
    with tempfile.TemporaryDirectory() as scratch:
        name = _maturin().prepare_metadata_for_build_wheel(scratch)
        return (Path(scratch) / name / "METADATA").read_bytes()


def core_metadata(root: Path) -> bytes:
    """METADATA as maturin writes it: the sdist's PKG-INFO, or maturin asked directly."""
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        return pkg_info.read_bytes()
    return _metadata_from_maturin(root)


def _entry_points(root: Path) -> bytes | None:
    """entry_points.txt from [project], in maturin's layout."""
    project = _pyproject(root).get("project", {})
    groups: dict[str, dict[str, str]] = {}
    if project.get("scripts"):
        groups["console_scripts"] = project["scripts"]
    if project.get("gui-scripts"):
        groups["gui_scripts"] = project["gui-scripts"]
    groups.update(project.get("entry-points", {}))
    if not groups:
        return None
    sections = [
        f"[{group}]\n" + "".join(f"{name}={target}\n" for name, target in entries.items())
        for group, entries in groups.items()
    ]
    return "\n".join(sections).encode()


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _dist_info(root: Path) -> tuple[str, str, dict[str, bytes]]:
    """(distribution file name, version, dist-info files) of the pure wheel."""
    metadata = core_metadata(root)
    headers = BytesParser().parsebytes(metadata, headersonly=True)
    name, version = headers["Name"], headers["Version"]
    if not name or not version:
        raise ValueError("the core metadata has no Name or Version")
    dist_name = name.replace("-", "_").replace(".", "_").lower()
    files: dict[str, bytes] = {"METADATA": metadata}
    wheel = (
        "Wheel-Version: 1.0\n"
        f"Generator: histcore_build_backend (maturin {_maturin_version()} metadata)\n"
        "Root-Is-Purelib: true\n"
        f"Tag: {PURE_TAG}\n"
    )
    files["WHEEL"] = wheel.encode()
    entry_points = _entry_points(root)
    if entry_points is not None:
        files["entry_points.txt"] = entry_points
    for license_file in headers.get_all("License-File") or []:
        files[f"licenses/{license_file}"] = (root / license_file).read_bytes()
    return dist_name, version, files


def _maturin_version() -> str:
    try:
        from importlib.metadata import version

        return version("maturin")
    except Exception:  # pragma: no cover - maturin without metadata
        return "unknown"


def _zip_date() -> tuple[int, int, int, int, int, int]:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        return _ZIP_EPOCH
    import time

    stamp = time.gmtime(max(int(epoch), 315532800))  # zip cannot go before 1980
    return stamp[:6]


def build_pure_wheel(wheel_directory: str, root: Path | None = None) -> str:
    """Write the pure-Python wheel into ``wheel_directory``; returns its file name."""
    root = Path.cwd() if root is None else root
    dist_name, version, dist_files = _dist_info(root)
    info_dir = f"{dist_name}-{version}.dist-info"
    entries = [(path, source.read_bytes()) for path, source in package_files(root)]
    entries += [(f"{info_dir}/{path}", data) for path, data in dist_files.items()]
    record_path = f"{info_dir}/RECORD"
    record = "".join(_record_line(path, data) + "\n" for path, data in entries)
    entries.append((record_path, (record + f"{record_path},,\n").encode()))

    filename = f"{dist_name}-{version}-{PURE_TAG}.whl"
    buffer = io.BytesIO()
    date = _zip_date()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=date)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    Path(wheel_directory, filename).write_bytes(buffer.getvalue())
    return filename


def write_pure_dist_info(metadata_directory: str, root: Path | None = None) -> str:
    root = Path.cwd() if root is None else root
    dist_name, version, dist_files = _dist_info(root)
    info_dir = Path(metadata_directory, f"{dist_name}-{version}.dist-info")
    for path, data in dist_files.items():
        target = info_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return info_dir.name


# --- the PEP 517 hooks ------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    if pure_requested():
        return []
    return _with_rust("get_requires_for_build_wheel", config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    if pure_requested():
        return write_pure_dist_info(metadata_directory)
    return _with_rust("prepare_metadata_for_build_wheel", metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    if pure_requested():
        return build_pure_wheel(wheel_directory)
    return _with_rust("build_wheel", wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    return _with_rust("get_requires_for_build_sdist", config_settings)


def build_sdist(sdist_directory: str, config_settings: Mapping[str, Any] | None = None) -> str:
    return _with_rust("build_sdist", sdist_directory, config_settings)


def _no_pure_editable() -> None:
    if pure_requested():
        _fail(
            f"histcore: {PURE_ENV}=1 builds regular wheels only; for an editable pure-Python "
            "setup put python/ on PYTHONPATH and set HISTCORE_BACKEND=python.\n"
        )


def get_requires_for_build_editable(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    _no_pure_editable()
    return _with_rust("get_requires_for_build_editable", config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    _no_pure_editable()
    return _with_rust("prepare_metadata_for_build_editable", metadata_directory, config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _no_pure_editable()
    return _with_rust("build_editable", wheel_directory, config_settings, metadata_directory)
