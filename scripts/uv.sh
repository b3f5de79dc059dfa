#!/usr/bin/env bash
# Print the path of the pinned uv (from PyPI), installing it on first use into a venv
# kept as a cache (one per version; made anew wherever it is missing or broken).
#
#   uv="$(bash scripts/uv.sh)"
#
# scripts/sdk-suite.sh builds its venvs with it, and .ci/run the venvs of its matrix:
# a venv with histcore and its test extras takes uv about 3 s, pip about 50 s.
# PYTHON is the interpreter of uv's venv (default python3).
set -euo pipefail

uv_version="0.13.9"
python="${PYTHON:-python3}"
home="${XDG_CACHE_HOME:-$HOME/.cache}/histcore/uv-$uv_version"
uv="$home/bin/uv"
# Used only once complete (the marker is written last).
if [[ ! -e "$home/.complete" ]] || ! "$uv" --version >/dev/null 2>&1; then
    rm -rf "$home"
    mkdir -p "$(dirname "$home")"
    "$python" -m venv "$home" >&2
    "$home/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" >&2
    touch "$home/.complete"
fi
echo "$uv"
