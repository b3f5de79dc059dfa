#!/usr/bin/env bash
# histcore's lint, the one list of checks that both `make lint` and .ci/run run:
#
#   cargo fmt --check
#   cargo clippy --all-targets -- -D warnings
#   ruff check and ruff format --check    (python, tests, benches, scripts)
#   mypy --strict                         (python/histcore and tests/test_top_level.py)
#   lint-imports                          (the layer contracts of pyproject.toml)
#   scripts/function_lengths.py           (no Python function over 100 lines)
#
#   scripts/lint.sh                       # PYTHON picks the interpreter (default: python)
#
# PYTHON's environment needs the dev extra (ruff, mypy, import-linter) and the packages
# mypy reads: histcore's dependencies and its test, openai-agents and postgres extras.
# histcore itself need not be installed: mypy reads python/histcore, and lint-imports
# runs with python/ first on PYTHONPATH, so both check this checkout's sources.
# Every check runs even when an earlier one fails; the exit code is 1 if any failed.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python}"
cd "$repo" || exit 1

bindir="$("$python" -c 'import os, sys; print(os.path.dirname(sys.executable))')" || {
    echo "scripts/lint.sh: cannot run $python" >&2
    exit 1
}
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

failed=()
check() {
    local name="$1" start=$SECONDS
    shift
    echo "--> $name"
    if "$@"; then
        echo "    ok: $name ($((SECONDS - start))s)"
    else
        echo "    FAILED: $name ($((SECONDS - start))s)" >&2
        failed+=("$name")
    fi
}
# import-linter puts its working directory on sys.path and writes its cache there: run
# it from a scratch directory, with python/ ahead of any installed histcore.
lint_imports() {
    (cd "$scratch" && PYTHONPATH="$repo/python" "$bindir/lint-imports" --config "$repo/pyproject.toml")
}

check "cargo fmt --check" cargo fmt --check
check "cargo clippy" cargo clippy --all-targets -- -D warnings
check "ruff check" "$python" -m ruff check python tests benches scripts
check "ruff format --check" "$python" -m ruff format --check python tests benches scripts
check "mypy --strict" "$python" -m mypy --strict python/histcore tests/test_top_level.py
check "lint-imports" lint_imports
check "function lengths" "$python" scripts/function_lengths.py python/histcore tests benches scripts

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "scripts/lint.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "scripts/lint.sh: PASSED"
