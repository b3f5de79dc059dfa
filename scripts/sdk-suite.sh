#!/usr/bin/env bash
# The OpenAI Agents SDK's own test suite, plain and with histcore's drop-in installed.
#
#   scripts/sdk-suite.sh VERSION...                  compare outcomes (CI runs this)
#   scripts/sdk-suite.sh --regenerate-list VERSION... rewrite the list of tests
#
# VERSION is a release of openai-agents (0.24.0) or X.Y.x for the newest X.Y patch.
# For each one:
#
#  1. pip downloads the release's sdist from PyPI (it holds tests/ and uv.lock);
#  2. a fresh venv gets the test dependencies exactly as the sdist's uv.lock pins them
#     (`uv export --frozen --group dev --all-extras`, uv itself from PyPI), the release
#     itself built from that sdist, and histcore (HISTCORE_WHEEL: a wheel, or a source
#     tree built here; default the checkout);
#  3. the tests listed in scripts/sdk_suite/lists/VERSION.txt (by id: those that reach a
#     helper install() replaces) run twice, at the same time: plain, and with
#     `-p histcore_sdk_plugin --histcore-install` (install() before collection). The
#     plugin writes each test's outcome; any test whose outcome differs fails the run,
#     and its id is printed. Both runs use `--assert=plain` (below); the changed tests
#     run again with pytest's assertion rewriting, so a failure reads as usual.
#
# --regenerate-list runs the sdist's whole suite (pytest-xdist, -n $SDK_SUITE_JOBS) with
# the helpers rebound to recording wrappers, and writes the ids of the tests that
# reached one.
#
# Environment: PYTHON (base interpreter, default python3), HISTCORE_WHEEL,
# HISTCORE_BACKEND (passed to the installed run; default auto), SDK_SUITE_CACHE
# (sdists, the uv tool and its download cache; default ~/.cache/histcore-sdk-suite),
# SDK_SUITE_JOBS (workers for --regenerate-list, default 2), SDK_SUITE_TIMEOUT (seconds
# per pytest run, default 2400), SDK_SUITE_KEEP=1 (keep the work directory).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/scripts/sdk_suite"
lists="$here/lists"
base_python="${PYTHON:-python3}"
cache="${SDK_SUITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/histcore-sdk-suite}"
histcore_source="${HISTCORE_WHEEL:-$repo}"
jobs="${SDK_SUITE_JOBS:-2}"
run_timeout="${SDK_SUITE_TIMEOUT:-2400}"
uv_version="0.13.9"

usage() {
    sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

regenerate=0
versions=()
for arg in "$@"; do
    case "$arg" in
        --regenerate-list) regenerate=1 ;;
        -h|--help) usage ;;
        -*) echo "sdk-suite: unknown option $arg" >&2; usage ;;
        *) versions+=("$arg") ;;
    esac
done
[[ ${#versions[@]} -gt 0 ]] || usage
if [[ "$histcore_source" != *.whl && ! -f "$histcore_source/pyproject.toml" ]]; then
    echo "sdk-suite: HISTCORE_WHEEL=$histcore_source is neither a wheel nor a source tree" >&2
    exit 2
fi
[[ -e "$histcore_source" ]] || { echo "sdk-suite: $histcore_source does not exist" >&2; exit 2; }

work="$(mktemp -d -t histcore-sdk-suite.XXXXXX)"
cleanup() {
    if [[ "${SDK_SUITE_KEEP:-}" == 1 ]]; then
        echo "sdk-suite: kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
mkdir -p "$cache/sdists"
export UV_CACHE_DIR="$cache/uv"
export UV_NO_PROGRESS=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { echo "sdk-suite: [$SECONDS s] $*"; }

# uv, from PyPI, in a venv of its own kept in the cache.
uv="$cache/uv-$uv_version/bin/uv"
if [[ ! -x "$uv" ]]; then
    rm -rf "$cache/uv-$uv_version"
    "$base_python" -m venv "$cache/uv-$uv_version"
    "$cache/uv-$uv_version/bin/python" -m pip install --quiet "uv==$uv_version"
fi

# The release a VERSION argument names: X.Y.x asks PyPI for the newest X.Y patch (from
# the wheel names pip would download: no sdist metadata to build for that).
resolve() {
    local wanted="$1"
    if [[ "$wanted" =~ ^([0-9]+)\.([0-9]+)\.x$ ]]; then
        local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}" probe="$work/resolve-$1"
        "$base_python" -m pip download --quiet --no-deps --only-binary :all: --dest "$probe" \
            "openai-agents>=$major.$minor,<$major.$((minor + 1))" >&2
        local wheel
        wheel="$(basename "$(ls "$probe"/openai_agents-*.whl)")"
        wheel="${wheel#openai_agents-}"
        echo "${wheel%%-*}"
    elif [[ "$wanted" =~ ^[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?$ ]]; then
        echo "$wanted"
    else
        echo "sdk-suite: not a version: $wanted (e.g. 0.24.0 or 0.22.x)" >&2
        return 2
    fi
}

sdist_of() {
    local version="$1" file="$cache/sdists/openai_agents-$1.tar.gz"
    if [[ ! -f "$file" ]]; then
        local dest="$work/download-$version"
        "$base_python" -m pip download --quiet --no-deps --no-binary :all: --dest "$dest" \
            "openai-agents==$version" >&2
        mv "$dest/openai_agents-$version.tar.gz" "$file"
    fi
    echo "$file"
}

# A histcore wheel, built once per run when HISTCORE_WHEEL is a source tree.
histcore_wheel=""
histcore_target() {
    if [[ "$histcore_source" == *.whl ]]; then
        histcore_wheel="$histcore_source"
    elif [[ -z "$histcore_wheel" ]]; then
        log "building histcore from $histcore_source"
        "$uv" build --quiet --wheel --python "$base_python" --out-dir "$work/histcore-dist" \
            "$histcore_source" >&2
        histcore_wheel="$(ls "$work"/histcore-dist/histcore-*.whl)"
    fi
}

# A changed outcome counts only if it reproduces: the changed tests run again, one mode
# after the other, and are compared once more (some SDK tests race other processes and
# fail now and then in either mode). $1 = version, $2 = the changed test ids, one a line.
confirm_changes() {
    local version="$1" changed=()
    mapfile -t changed < "$2"
    [[ ${#changed[@]} -gt 0 ]] || return 1
    log "running the ${#changed[@]} changed tests again, plain then installed"
    sdk_pytest "$venv" --histcore-outcomes="$work/plain-again-$version.json" "${changed[@]}" \
        > "$work/plain-again-$version.log" 2>&1 || true
    sdk_pytest "$venv" --histcore-install --histcore-outcomes="$work/installed-again-$version.json" \
        "${changed[@]}" > "$work/installed-again-$version.log" 2>&1 || true
    "$base_python" "$here/suite.py" compare "$work/plain-again-$version.json" \
        "$work/installed-again-$version.json"
}

# $1 = venv, $2.. = pytest arguments; runs in the sdist directory ($sdk_dir).
sdk_pytest() {
    local venv="$1"
    shift
    (
        cd "$sdk_dir"
        PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" timeout "$run_timeout" \
            "$venv/bin/python" -m pytest -p histcore_sdk_plugin -p no:cacheprovider \
            -q -rN --no-header "$@"
    )
}

status=0
declare -a summary=()
for wanted in "${versions[@]}"; do
    started=$SECONDS
    version="$(resolve "$wanted")"
    if [[ "$version" == "$wanted" ]]; then
        log "openai-agents $version"
    else
        log "openai-agents $version (the newest $wanted)"
    fi
    sdist="$(sdist_of "$version")"
    sdk_dir="$work/openai-agents-$version"
    mkdir -p "$sdk_dir"
    tar -xzf "$sdist" -C "$sdk_dir" --strip-components=1
    if [[ ! -d "$sdk_dir/tests" || ! -f "$sdk_dir/uv.lock" ]]; then
        echo "sdk-suite: the $version sdist has no tests/ or uv.lock" >&2
        exit 1
    fi

    venv="$work/venv-$version"
    "$uv" venv --quiet --python "$base_python" "$venv"
    # The lock's pins for the dev group and every extra, for this interpreter; the
    # project itself comes from the sdist, histcore and its own dependencies after.
    # Compiled at install (uv does not by default): otherwise each pytest process, and
    # each process a test spawns, compiles every module it imports (no .pyc is written
    # under PYTHONDONTWRITEBYTECODE), ~40 s of the two runs of 0.22.3.
    (cd "$sdk_dir" && "$uv" export --quiet --frozen --no-hashes --no-header --no-annotate \
        --no-emit-project --group dev --all-extras) > "$work/requirements-$version.txt"
    "$uv" pip install --quiet --python "$venv/bin/python" --no-deps --compile-bytecode \
        -r "$work/requirements-$version.txt"
    "$uv" pip install --quiet --python "$venv/bin/python" --no-deps --compile-bytecode "$sdist"
    histcore_target
    "$uv" pip install --quiet --python "$venv/bin/python" --compile-bytecode "$histcore_wheel"
    "$venv/bin/python" - "$version" <<'PY'
import importlib.metadata, sys
import histcore
found = importlib.metadata.version("openai-agents")
assert found == sys.argv[1], (found, sys.argv[1])
print(f"sdk-suite: openai-agents {found}, histcore {histcore.__version__} ({histcore.BACKEND})")
PY
    log "venv ready"

    if [[ $regenerate -eq 1 ]]; then
        trace="$work/trace-$version.txt"
        set +e
        sdk_pytest "$venv" -n "$jobs" --histcore-trace="$trace" tests > "$work/trace-$version.log" 2>&1
        code=$?
        set -e
        tail -n 3 "$work/trace-$version.log"
        if [[ $code -ne 0 && $code -ne 1 ]]; then
            echo "sdk-suite: the traced run of $version ended with pytest exit code $code" >&2
            tail -n 40 "$work/trace-$version.log" >&2
            exit 1
        fi
        "$base_python" "$here/suite.py" write-list "$lists" "$version" "$trace"*
        summary+=("$version: list regenerated in $((SECONDS - started))s")
        continue
    fi

    selection="$work/selection-$version.txt"
    mapfile -t files < <("$base_python" "$here/suite.py" files "$lists" "$version" "$sdk_dir" \
        "$selection")
    if [[ ${#files[@]} -eq 0 ]]; then
        echo "sdk-suite: no test file to run for $version" >&2
        exit 1
    fi
    log "running the listed tests of ${#files[@]} files, plain and installed at once"
    # --assert=plain: both runs skip pytest's assertion rewriting, which changes only
    # the message of a failed assert, not whether it fails, and is redone by every
    # process (no .pyc is cached under PYTHONDONTWRITEBYTECODE): 15 of the 36 s that
    # collecting 0.24.0's listed files takes. The confirming runs keep it, for
    # readable failures.
    set +e
    sdk_pytest "$venv" --assert=plain --histcore-select="$selection" \
        --histcore-outcomes="$work/plain-$version.json" "${files[@]}" \
        > "$work/plain-$version.log" 2>&1 &
    plain_pid=$!
    sdk_pytest "$venv" --assert=plain --histcore-install --histcore-select="$selection" \
        --histcore-outcomes="$work/installed-$version.json" \
        "${files[@]}" > "$work/installed-$version.log" 2>&1 &
    installed_pid=$!
    wait $plain_pid
    plain_code=$?
    wait $installed_pid
    installed_code=$?
    set -e
    for run in plain installed; do
        code_var="${run}_code"
        code="${!code_var}"
        echo "  $run: $(tail -n 1 "$work/$run-$version.log") (pytest exit $code)"
        if [[ $code -gt 1 || ! -f "$work/$run-$version.json" ]]; then
            echo "sdk-suite: the $run run did not complete (pytest exit code $code):" >&2
            tail -n 40 "$work/$run-$version.log" >&2
            exit 1
        fi
    done
    changed_file="$work/changed-$version.txt"
    if "$base_python" "$here/suite.py" compare "$work/plain-$version.json" \
        "$work/installed-$version.json" "$changed_file"; then
        summary+=("ok   openai-agents $version: no changed outcome ($((SECONDS - started))s)")
    elif confirm_changes "$version" "$changed_file"; then
        summary+=("ok   openai-agents $version: no changed outcome that reproduces ($((SECONDS - started))s)")
    else
        status=1
        summary+=("FAIL openai-agents $version: changed outcomes ($((SECONDS - started))s)")
        grep -E "^(FAILED|ERROR)" "$work/installed-$version.log" | head -n 40 || true
    fi
done

echo
printf 'sdk-suite: %s\n' "${summary[@]}"
exit $status
