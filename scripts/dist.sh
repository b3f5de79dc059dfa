#!/usr/bin/env bash
# Build everything a release uploads into dist/, then check it (scripts/check_dist.py):
#
#   histcore-<v>-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#       the Rust engine for CPython >= 3.10 (abi3), linked by zig against glibc 2.17 so
#       that it runs on manylinux2014 systems whatever glibc this machine has;
#   histcore-<v>-py3-none-any.whl
#       the pure-Python package (no histcore._core): HISTCORE_BUILD_PURE=1 through the
#       in-tree backend (scripts/build_backend), built from the sdist below;
#   histcore-<v>.tar.gz
#       the sdist (maturin).
#
# <v> is Cargo.toml's version, the only one. The build tools come from PyPI
# (scripts/dist-requirements.txt) into a venv kept as a cache (DIST_TOOLS names another
# place), the crates from crates.io (cargo --locked: Cargo.lock as committed). Needs
# cargo and network access to both.
#
#   bash scripts/dist.sh
#   PYTHON=python3.12 DIST_DIR=dist-py312 bash scripts/dist.sh
#
# PYTHON is the interpreter for the tools venv (default python3); DIST_DIR the output
# directory (default dist/ in the checkout; earlier histcore artifacts there are removed).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
dist="${DIST_DIR:-$repo/dist}"
mkdir -p "$dist"
dist="$(cd "$dist" && pwd)"
started=$SECONDS

say() { echo "==> [dist $((SECONDS - started))s] $*"; }

# The tools venv is kept between runs (about 500 MB, mostly zig, slow to write and to
# delete), one per interpreter version and requirements file: a cache, made anew
# wherever it is missing or broken, and brought to the pinned versions every run.
requirements_hash="$(sha256sum scripts/dist-requirements.txt | cut -c1-12)"
python_tag="$("$python" -c 'import sys; print("py%d.%d.%d" % sys.version_info[:3])')"
tools_venv="${DIST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/histcore/dist-tools-$python_tag-$requirements_hash}"
# A venv is used only once it is complete (the marker is written last).
if [[ ! -e "$tools_venv/.complete" ]] || ! "$tools_venv/bin/python" -c pass 2>/dev/null; then
    say "build tools (scripts/dist-requirements.txt) into a new venv: $tools_venv"
    rm -rf "$tools_venv"
    mkdir -p "$(dirname "$tools_venv")"
    "$python" -m venv "$tools_venv"
    "$tools_venv/bin/python" -m pip install --quiet --upgrade pip
    "$tools_venv/bin/python" -m pip install --quiet -r scripts/dist-requirements.txt
    touch "$tools_venv/.complete"
else
    say "build tools: $tools_venv"
fi
tools="$tools_venv/bin"
"$tools/python" -m pip install --quiet -r scripts/dist-requirements.txt
export PATH="$tools:$PATH"

rm -f "$dist"/histcore-*.whl "$dist"/histcore-*.tar.gz

say "sdist (maturin), and the pure-Python wheel from it (HISTCORE_BUILD_PURE=1)"
# `python -m build` without --sdist/--wheel builds the sdist, then the wheel from the
# unpacked sdist: the pure wheel holds exactly what the sdist gives a source install.
HISTCORE_BUILD_PURE=1 "$tools/python" -m build --no-isolation --outdir "$dist" "$repo"

say "manylinux2014 x86_64 abi3 wheel (maturin --release --locked --zig)"
maturin build --release --locked --zig --compatibility manylinux2014 \
    --target x86_64-unknown-linux-gnu --out "$dist"

say "check the artifacts"
AUDITWHEEL="$tools/auditwheel" TWINE="$tools/twine" "$tools/python" scripts/check_dist.py "$dist"

say "done in $((SECONDS - started))s:"
ls -l "$dist"/histcore-*
