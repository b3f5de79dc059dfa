#!/usr/bin/env bash
# Run histcore's test suite against the INSTALLED package, not the python/ sources.
#
#   scripts/test.sh                      # all of tests/
#   scripts/test.sh tests/engine/test_parity.py -k stub
#   scripts/test.sh benches              # the benchmarks, once each (--benchmark-disable)
#   HISTCORE_BACKEND=rust scripts/test.sh
#
# PYTHON selects the interpreter (default: python on PATH, e.g. an activated venv).
# pytest runs from a temporary directory with --import-mode=importlib, so neither the
# checkout root nor python/ lands on sys.path: `import histcore` finds the installed
# package. With CI=true the run refuses a histcore that is not in site-packages.
# The tests run in HISTCORE_TEST_JOBS pytest-xdist workers (default auto: one per core;
# 1 runs them in this process), except the benchmarks, which time one process alone.
# Exit code: pytest's, except that "no tests collected" (5) is a failure too.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python}"
backend="${HISTCORE_BACKEND:-auto}"
jobs="${HISTCORE_TEST_JOBS:-auto}"

# Paths given on the command line are resolved now: pytest runs elsewhere.
args=()
targets=0
for arg in "$@"; do
    if [[ "$arg" != -* && -e "$arg" ]]; then
        args+=("$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")")
        targets=$((targets + 1))
    elif [[ "$arg" != -* && "$arg" == *::* && -e "${arg%%::*}" ]]; then
        path="${arg%%::*}"
        args+=("$(cd "$(dirname "$path")" && pwd)/$(basename "$path")::${arg#*::}")
        targets=$((targets + 1))
    else
        args+=("$arg")
    fi
done
if [[ $targets -eq 0 ]]; then
    args+=("$repo/tests")
fi
for arg in "${args[@]}"; do
    [[ "$arg" == "$repo/benches"* ]] && jobs=1
done

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"

location="$("$python" -c 'import histcore; print(histcore.__file__)')" || {
    echo "scripts/test.sh: histcore is not importable with $python (install it first)" >&2
    exit 1
}
echo "scripts/test.sh: histcore from $location (HISTCORE_BACKEND=$backend, HISTCORE_TEST_JOBS=$jobs)"
if [[ "${CI:-}" == "true" && "$location" != */site-packages/histcore/* ]]; then
    echo "scripts/test.sh: CI must test the installed package, not $location" >&2
    exit 1
fi

if [[ "$jobs" != 1 ]]; then
    if ! "$python" -c 'import xdist' 2>/dev/null; then
        echo "scripts/test.sh: pytest-xdist is missing (the test extra has it); set HISTCORE_TEST_JOBS=1 to run without it" >&2
        exit 1
    fi
    args=(-n "$jobs" "${args[@]}")
fi

status=0
"$python" -m pytest \
    --import-mode=importlib \
    -p no:cacheprovider \
    -ra \
    --rootdir "$repo" \
    -c "$repo/pyproject.toml" \
    "${args[@]}" || status=$?

case $status in
    0) echo "scripts/test.sh: PASSED (HISTCORE_BACKEND=$backend)" ;;
    5) echo "scripts/test.sh: FAILED: no tests were collected (HISTCORE_BACKEND=$backend)" >&2
       status=1 ;;
    *) echo "scripts/test.sh: FAILED with pytest exit code $status (HISTCORE_BACKEND=$backend)" >&2 ;;
esac
exit $status
