"""Check the release artifacts scripts/dist.sh wrote (standard library, pip and the tools).

    python scripts/check_dist.py dist/              # what scripts/dist.sh wrote
    python scripts/check_dist.py --release dist/    # what the release workflow gathered

Exactly three artifacts for the version in Cargo.toml:

* the abi3 wheel for CPython >= 3.10, manylinux_2_17 (manylinux2014) x86_64, which
  ``auditwheel show`` must agree with;
* the pure-Python wheel ``histcore-<version>-py3-none-any.whl``: the same package files
  byte for byte without the extension (``histcore/_core.*``), the same METADATA byte for
  byte (so the same dependencies), the same entry points and licence files;
* the sdist, whose PKG-INFO is that METADATA and which carries the in-tree backend.

Then which file pip picks from the directory: the compiled wheel where its tags match,
the pure wheel on a platform without one (macOS, Windows, aarch64, musl), and never the
sdist, even with the sdist beside the pure wheel and binaries not required. Last,
``twine check --strict`` on all three. AUDITWHEEL and TWINE name the tools (default: on
PATH); pip is this interpreter's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import BytesParser
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NAME = "histcore"
MANYLINUX_TAG = "manylinux_2_17_x86_64"
# Files of the compiled wheel that the pure one leaves out, by design.
EXTENSION_FILES = re.compile(r"^histcore/_core\.[^/]+$")
COMPILED_ONLY_DIST_INFO = re.compile(r"^sboms/")  # the Rust crates' SBOM

# (pip's --platform, --python-version): the file pip must pick from dist/.
RESOLUTION = [
    ("manylinux_2_17_x86_64", "3.10", "compiled"),
    ("manylinux_2_17_x86_64", "3.13", "compiled"),
    ("macosx_11_0_arm64", "3.12", "pure"),
    ("macosx_10_12_x86_64", "3.10", "pure"),
    ("win_amd64", "3.12", "pure"),
    ("manylinux_2_17_aarch64", "3.11", "pure"),
    ("musllinux_1_2_x86_64", "3.12", "pure"),
]

failures: list[str] = []


def check(condition: bool, message: str) -> None:
    print(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        failures.append(message)


def cargo_version() -> str:
    text = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    match = re.search(r'^version\s*=\s*"([^"]+)"', package, re.M)
    if match is None:
        raise SystemExit("no [package] version in Cargo.toml")
    return match.group(1)


def wheel_files(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as wheel:
        return {name: wheel.read(name) for name in wheel.namelist() if not name.endswith("/")}


def split_wheel(files: dict[str, bytes], version: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(package files, dist-info files keyed by their path inside the dist-info)."""
    info = f"{NAME}-{version}.dist-info/"
    package = {name: data for name, data in files.items() if not name.startswith(info)}
    dist_info = {name[len(info) :]: data for name, data in files.items() if name.startswith(info)}
    return package, dist_info


def wheel_tags(dist_info: dict[str, bytes]) -> list[str]:
    headers = BytesParser().parsebytes(dist_info["WHEEL"], headersonly=True)
    return headers.get_all("Tag") or []


def check_record(label: str, files: dict[str, bytes], dist_info: dict[str, bytes]) -> None:
    import base64
    import hashlib

    listed = {}
    for line in dist_info["RECORD"].decode().splitlines():
        path, digest, _size = line.rsplit(",", 2)
        listed[path] = digest
    bad = []
    for name, data in files.items():
        digest = listed.pop(name, None)
        if name.endswith("/RECORD"):
            continue
        expected = "sha256=" + (
            base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        )
        if digest != expected:
            bad.append(name)
    check(not bad and not listed, f"{label}: RECORD lists every file with its hash")


def auditwheel_tag(path: Path) -> str:
    tool = os.environ.get("AUDITWHEEL", "auditwheel")
    shown = subprocess.run([tool, "show", str(path)], capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        return f"auditwheel failed: {shown.stderr.strip()}"
    text = " ".join(shown.stdout.split())
    match = re.search(r'following platform tag: "([^"]+)"', text)
    return match.group(1) if match else f"unparsed: {text[:200]}"


def pip_pick(find_links: Path, *options: str) -> str:
    """The file name pip downloads for ``histcore`` from ``find_links`` only."""
    with tempfile.TemporaryDirectory() as dest:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--isolated",
            "--disable-pip-version-check",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--find-links",
            str(find_links),
            "--dest",
            dest,
            *options,
            NAME,
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"pip failed: {done.stderr.strip()[-300:]}"
        picked = os.listdir(dest)
        return picked[0] if len(picked) == 1 else f"pip downloaded {picked}"


def check_compiled(compiled: Path, version: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The manylinux wheel: tags, the extension, auditwheel, RECORD. Returns its package
    files and dist-info files."""
    # The compiled wheel.
    compiled_files = wheel_files(compiled)
    compiled_package, compiled_info = split_wheel(compiled_files, version)
    tags = wheel_tags(compiled_info)
    expected_tags = ["cp310-abi3-manylinux2014_x86_64", f"cp310-abi3-{MANYLINUX_TAG}"]
    check(tags == expected_tags, f"compiled wheel tags: {tags}")
    check("histcore/_core.abi3.so" in compiled_package, "compiled wheel has histcore/_core.abi3.so")
    tag = auditwheel_tag(compiled)
    check(tag == MANYLINUX_TAG, f"auditwheel show: consistent with {tag}")
    check_record("compiled wheel", compiled_files, compiled_info)

    return compiled_package, compiled_info


def check_pure(
    pure: Path, version: str, compiled_package: dict[str, bytes], compiled_info: dict[str, bytes]
) -> None:
    """The pure wheel: the same package minus the extension, the same metadata."""
    pure_files = wheel_files(pure)
    pure_package, pure_info = split_wheel(pure_files, version)
    check(wheel_tags(pure_info) == ["py3-none-any"], f"pure wheel tags: {wheel_tags(pure_info)}")
    check(b"Root-Is-Purelib: true" in pure_info["WHEEL"], "pure wheel is purelib")
    expected_package = {
        name: data for name, data in compiled_package.items() if not EXTENSION_FILES.match(name)
    }
    missing = sorted(set(expected_package) - set(pure_package))
    extra = sorted(set(pure_package) - set(expected_package))
    differing = sorted(
        name
        for name in expected_package.keys() & pure_package.keys()
        if expected_package[name] != pure_package[name]
    )
    left_out = sorted(set(compiled_package) - set(expected_package))
    problems = f" (missing {missing}, extra {extra}, differing {differing})"
    same = not (missing or extra or differing)
    check(
        same,
        f"pure wheel = the compiled wheel's {len(expected_package)} package files, "
        f"byte for byte, without {left_out}" + ("" if same else problems),
    )
    check(
        not any(name.endswith((".so", ".pyd", ".dylib")) for name in pure_files),
        "pure wheel has no compiled file",
    )
    check(pure_info["METADATA"] == compiled_info["METADATA"], "METADATA identical in both wheels")
    for name in sorted(set(compiled_info) | set(pure_info)):
        if name in ("METADATA", "WHEEL", "RECORD") or COMPILED_ONLY_DIST_INFO.match(name):
            continue
        check(
            compiled_info.get(name) == pure_info.get(name),
            f"dist-info/{name} identical in both wheels",
        )
    check_record("pure wheel", pure_files, pure_info)
    metadata = BytesParser().parsebytes(pure_info["METADATA"], headersonly=True)
    check(metadata["Version"] == version, f"metadata version {metadata['Version']} = Cargo.toml's")
    check(metadata["Requires-Python"] == ">=3.10", f"Requires-Python {metadata['Requires-Python']}")
    print("      dependencies: " + "; ".join(metadata.get_all("Requires-Dist") or []))


def check_sdist(sdist: Path, version: str, metadata: bytes) -> None:
    """The sdist: the wheels' metadata and what a build from it needs."""
    with tarfile.open(sdist) as archive:
        root = f"{NAME}-{version}/"
        names = set(archive.getnames())
        pkg_info = archive.extractfile(root + "PKG-INFO")
        check(
            pkg_info is not None and pkg_info.read() == metadata,
            "sdist PKG-INFO identical to the wheels' METADATA",
        )
        for needed in (
            "pyproject.toml",
            "Cargo.toml",
            "Cargo.lock",
            "rust/lib.rs",
            "python/histcore/__init__.py",
            "scripts/build_backend/histcore_build_backend.py",
            "LICENSE",
        ):
            check(root + needed in names, f"sdist has {needed}")


def check_resolution(
    dist: Path, compiled_name: str, pure_name: str, pure: Path, sdist: Path
) -> None:
    """Which file pip picks on each platform: the compiled wheel where it matches, the
    pure wheel everywhere else, never the sdist."""
    for platform, python, expected in RESOLUTION:
        picked = pip_pick(
            dist,
            "--only-binary",
            ":all:",
            "--platform",
            platform,
            "--python-version",
            python,
            "--implementation",
            "cp",
        )
        wanted = compiled_name if expected == "compiled" else pure_name
        check(picked == wanted, f"pip, {platform} CPython {python}: {picked}")
    picked = pip_pick(dist)
    check(picked == compiled_name, f"pip, this machine, defaults: {picked}")
    with tempfile.TemporaryDirectory() as no_compiled:
        for path in (pure, sdist):
            shutil.copy2(path, no_compiled)
        picked = pip_pick(Path(no_compiled))
        check(picked == pure_name, f"pip, defaults, only the pure wheel and the sdist: {picked}")


def check_twine(compiled: Path, pure: Path, sdist: Path) -> None:
    """What PyPI will be given: twine check --strict."""
    twine = os.environ.get("TWINE", "twine")
    done = subprocess.run(
        [twine, "check", "--strict", str(compiled), str(pure), str(sdist)],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout.rstrip())
    check(done.returncode == 0, f"twine check --strict: {done.stderr.strip() or 'passed'}")


def main(dist: Path) -> int:
    version = cargo_version()
    artifacts = sorted(path.name for path in dist.iterdir() if path.name.startswith(f"{NAME}-"))
    compiled_name = f"{NAME}-{version}-cp310-abi3-manylinux2014_x86_64.{MANYLINUX_TAG}.whl"
    pure_name = f"{NAME}-{version}-py3-none-any.whl"
    sdist_name = f"{NAME}-{version}.tar.gz"
    check(
        artifacts == sorted([compiled_name, pure_name, sdist_name]),
        f"dist/ holds exactly {compiled_name}, {pure_name} and {sdist_name} (found {artifacts})",
    )
    compiled, pure, sdist = dist / compiled_name, dist / pure_name, dist / sdist_name
    if failures:
        return 1

    compiled_package, compiled_info = check_compiled(compiled, version)
    check_pure(pure, version, compiled_package, compiled_info)
    check_sdist(sdist, version, compiled_info["METADATA"])
    check_resolution(dist, compiled_name, pure_name, pure, sdist)
    check_twine(compiled, pure, sdist)

    if failures:
        print(f"\ncheck_dist: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("\ncheck_dist: all checks passed")
    return 0


# --release: the whole set the release workflow uploads, one wheel per target.
RELEASE_TARGETS = {
    "linux x86_64 manylinux2014": r"manylinux_2_17_x86_64",
    "linux aarch64 manylinux2014": r"manylinux_2_17_aarch64",
    "linux x86_64 musllinux_1_2": r"musllinux_1_2_x86_64",
    "linux aarch64 musllinux_1_2": r"musllinux_1_2_aarch64",
    "macOS x86_64": r"macosx_\d+_\d+_x86_64",
    "macOS arm64": r"macosx_\d+_\d+_arm64",
    "Windows x64": r"win_amd64",
}


def main_release(dist: Path) -> int:
    """Every target's abi3 wheel, the pure wheel and the sdist: one METADATA for all."""
    version = cargo_version()
    wheels = sorted(dist.glob(f"{NAME}-*.whl"))
    sdists = sorted(dist.glob(f"{NAME}-*.tar.gz"))
    check(sdists == [dist / f"{NAME}-{version}.tar.gz"], f"one sdist for {version}: {sdists}")
    pure = dist / f"{NAME}-{version}-py3-none-any.whl"
    check(pure in wheels, f"the pure wheel {pure.name}")
    compiled = [wheel for wheel in wheels if wheel != pure]
    for target, pattern in RELEASE_TARGETS.items():
        matching = [
            wheel.name
            for wheel in compiled
            if wheel.name.startswith(f"{NAME}-{version}-cp310-abi3-")
            and re.search(rf"(^|\.){pattern}(\.|$)", wheel.name[:-4].split("-")[-1])
        ]
        check(len(matching) == 1, f"{target}: {matching}")
    check(len(compiled) == len(RELEASE_TARGETS), f"{len(compiled)} compiled wheels")
    if failures:
        return 1
    with tarfile.open(sdists[0]) as archive:
        member = archive.extractfile(f"{NAME}-{version}/PKG-INFO")
        metadata = member.read() if member is not None else b""
    pure_package, pure_info = split_wheel(wheel_files(pure), version)
    check(pure_info["METADATA"] == metadata, "pure wheel METADATA = sdist PKG-INFO")
    for wheel in compiled:
        package, info = split_wheel(wheel_files(wheel), version)
        check(info["METADATA"] == metadata, f"{wheel.name}: METADATA = sdist PKG-INFO")
        without_extension = {
            name: data for name, data in package.items() if not EXTENSION_FILES.match(name)
        }
        check(
            without_extension == pure_package, f"{wheel.name}: package = the pure wheel's + _core"
        )
    twine = os.environ.get("TWINE", "twine")
    done = subprocess.run(
        [twine, "check", "--strict", *map(str, wheels + sdists)], capture_output=True, text=True
    )
    print(done.stdout.rstrip())
    check(done.returncode == 0, f"twine check --strict: {done.stderr.strip() or 'passed'}")
    if failures:
        print(f"\ncheck_dist: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("\ncheck_dist: the release set is complete and consistent")
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--release"] and len(arguments) == 2:
        sys.exit(main_release(Path(arguments[1])))
    if len(arguments) != 1:
        raise SystemExit(f"usage: {sys.argv[0]} [--release] DIST_DIR")
    sys.exit(main(Path(arguments[0])))
