#!/usr/bin/env bash
# The OpenAI Agents SDK's own test suite, plain and with histcore's drop-in installed.
#
#   scripts/sdk-suite.sh VERSION[:RUN,RUN...]...          compare (CI runs this)
#   scripts/sdk-suite.sh --write-expected VERSION...      rewrite the plain outcomes kept
#   scripts/sdk-suite.sh --regenerate-list VERSION...     rewrite the lists of tests
#
# VERSION is a release of openai-agents (0.24.0) or X.Y.x for the newest X.Y patch. RUN
# names a run of that release (default plain,installed,guard):
#
#   plain                  the listed tests (by id: those that reach a helper install()
#                          replaces), without histcore
#   installed              the listed tests, `--histcore-install` (install() before
#                          collection), counting the calls that took histcore's own path
#                          (HISTCORE_DROPIN_COUNTS, scripts/sdk_suite/path_counts.py)
#   installed-python       as installed, on the pure-Python engine (HISTCORE_BACKEND=python)
#   guard                  the listed tests, `--histcore-guard` (install(guard=True)),
#                          noting per test whether the guard repaired a model input
#   plain-session          every test of the listed files, as one pytest session: how a
#                          user's suite runs them
#   guard-session          every test of the listed files with the guard, one session, on
#                          the Rust engine; guard-session-python on the pure one
#
# For each release:
#  1. pip downloads its sdist from PyPI (it holds tests/ and uv.lock);
#  2. a fresh venv gets the test dependencies exactly as the sdist's uv.lock pins them
#     (`uv export --frozen --group dev --all-extras`, uv itself from PyPI), the release
#     itself built from that sdist, and histcore (HISTCORE_WHEEL: a wheel, or a source
#     tree built here; default the checkout);
#  3. the runs, $SDK_SUITE_PARALLEL at once, each in its own copy of the sdist tree with
#     its own TMPDIR; the plugin writes each test's outcome;
#  4. each run is compared with its baseline: the plain run of the same tests when it
#     ran, otherwise the plain outcomes kept in scripts/sdk_suite/expected/VERSION.json
#     (every test of the listed files, written by --write-expected). Any changed outcome
#     fails, except a guard run's change in a test where the guard repaired an input
#     (printed with its rules) and a test in scripts/sdk_suite/flaky.txt (seen to flake
#     without histcore; printed). Against the kept outcomes, the changed tests then run
#     plain once more: a change plain gives again is not histcore's (the kept outcome
#     is stale on this machine: said in the summary); any other fails the step. A plain
#     run is also compared with the kept outcomes, when both exist. An installed run also
#     fails when a helper group install() replaced took its own path in no call, or no
#     listed test reaches it; the counts are printed per group. The runs use
#     `--assert=plain` (below); changed tests run again with pytest's assertion
#     rewriting, so a failure reads as usual (that rerun decides nothing).
#
# --write-expected runs plain-session twice and keeps the outcomes both runs agree on; a
# test whose outcome differs between them is left out and named (add it to flaky.txt
# with that evidence, or it is compared as absent).
# --regenerate-list runs the sdist's whole suite (pytest-xdist, -n $SDK_SUITE_JOBS) with
# the helpers rebound to recording wrappers, and writes the ids of the tests that
# reached one, each with the groups of the helpers it reached.
#
# Environment: PYTHON (base interpreter, default python3), HISTCORE_WHEEL,
# HISTCORE_BACKEND (engine of the installed and guard runs; default auto),
# SDK_SUITE_CACHE (sdists and uv's download cache; default ~/.cache/histcore-sdk-suite;
# uv itself is scripts/uv.sh's), SDK_SUITE_JOBS (workers for --regenerate-list, default
# 2), SDK_SUITE_TRACE_PATHS (--regenerate-list traces only these test paths, space
# separated, and keeps the list's other entries; default tests), SDK_SUITE_PARALLEL (comparison runs at once, default 2), SDK_SUITE_TIMEOUT
# (seconds per pytest run, default 2400), SDK_SUITE_KEEP=1 (keep the work directory).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo/scripts/sdk_suite"
lists="$here/lists"
expectations="$here/expected"
base_python="${PYTHON:-python3}"
cache="${SDK_SUITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/histcore-sdk-suite}"
histcore_source="${HISTCORE_WHEEL:-$repo}"
jobs="${SDK_SUITE_JOBS:-2}"
parallel="${SDK_SUITE_PARALLEL:-2}"
run_timeout="${SDK_SUITE_TIMEOUT:-2400}"

usage() {
    sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

regenerate=0
write_expected=0
versions=()
declare -A runs_of=()
known_runs=" plain installed installed-python guard plain-session guard-session guard-session-python "
for arg in "$@"; do
    case "$arg" in
        --regenerate-list) regenerate=1 ;;
        --write-expected) write_expected=1 ;;
        -h|--help) usage ;;
        -*) echo "sdk-suite: unknown option $arg" >&2; usage ;;
        *)
            wanted="${arg%%:*}"
            asked="plain,installed,guard"
            [[ "$arg" == *:* ]] && asked="${arg#*:}"
            IFS=, read -r -a asked_runs <<< "$asked"
            [[ ${#asked_runs[@]} -gt 0 ]] || { echo "sdk-suite: $arg names no run" >&2; exit 2; }
            for run in "${asked_runs[@]}"; do
                [[ "$known_runs" == *" $run "* ]] || {
                    echo "sdk-suite: unknown run '$run' in $arg (runs:$known_runs)" >&2
                    exit 2
                }
            done
            versions+=("$wanted")
            runs_of[$wanted]="${asked_runs[*]}"
            ;;
    esac
done
[[ ${#versions[@]} -gt 0 ]] || usage
[[ $((regenerate + write_expected)) -le 1 ]] || {
    echo "sdk-suite: --regenerate-list and --write-expected are separate calls" >&2
    exit 2
}
[[ "$parallel" =~ ^[1-9][0-9]*$ ]] || { echo "sdk-suite: SDK_SUITE_PARALLEL=$parallel" >&2; exit 2; }
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

# uv, pinned, from PyPI (scripts/uv.sh keeps it in a cache).
uv="$(PYTHON="$base_python" bash "$repo/scripts/uv.sh")"

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

# $1 = run directory (it gets the sdist tree, sdk/, and a temporary directory, tmp/, of
# its own), $2.. = pytest arguments; runs in $1/sdk with TMPDIR=$1/tmp, so no two runs
# share a working directory or temporary files.
sdk_pytest() {
    local dir="$1"
    shift
    rm -rf "$dir"
    mkdir -p "$dir/tmp"
    cp -a "$sdk_dir" "$dir/sdk"
    (
        cd "$dir/sdk"
        TMPDIR="$dir/tmp" PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" timeout "$run_timeout" \
            "$venv/bin/python" -m pytest -p histcore_sdk_plugin -p no:cacheprovider \
            -q -rN --no-header "$@"
    )
}

# One comparison run: $1 = its name, $2.. = environment assignments and then plugin
# options (before the first that starts with --; they include the selection). Writes
# $work/$1-$version.{json,log}; in the background, at most $parallel at once.
declare -A run_pid=() run_started=() run_environment=() run_options=()
start_run() {
    local name="$1" environment=()
    shift
    while [[ $# -gt 0 && "$1" != --* ]]; do
        environment+=("$1")
        shift
    done
    while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do
        wait -n || true
    done
    run_started[$name]=$SECONDS
    (
        for assignment in "${environment[@]}"; do export "${assignment?}"; done
        code=0
        sdk_pytest "$work/run-$name-$version" --assert=plain \
            --histcore-outcomes="$work/$name-$version.json" "$@" "${files[@]}" || code=$?
        # The CPU time of the run's processes (user, system): its cost on a busy machine.
        times > "$work/$name-$version.cpu"  # its second line: the processes waited for
        exit $code
    ) > "$work/$name-$version.log" 2>&1 &
    run_pid[$name]=$!
    run_environment[$name]="${environment[*]}"
    run_options[$name]="$*"
}

# The CPU seconds (user + system) run $1's processes took, from its `times` line.
cpu_seconds() {
    local line
    line="$(tail -n 1 "$work/$1-$version.cpu" 2>/dev/null || true)"
    "$base_python" -c '
import re, sys
total = sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", sys.argv[1]))
print(round(total))' "$line"
}

# Waits for run $1; fails the script when it did not complete.
finish_run() {
    local name="$1" code=0
    wait "${run_pid[$name]}" || code=$?
    echo "  $name: $(tail -n 1 "$work/$name-$version.log") (pytest exit $code," \
        "$((SECONDS - ${run_started[$name]})) s from its start, CPU $(cpu_seconds "$name") s)"
    if [[ $code -gt 1 || ! -f "$work/$name-$version.json" ]]; then
        echo "sdk-suite: the $name run did not complete (pytest exit code $code):" >&2
        tail -n 40 "$work/$name-$version.log" >&2
        exit 1
    fi
}

# For reading only (it decides nothing): the changed tests of run $1 again in its mode,
# with pytest's assertion rewriting, and the end of what they printed.
explain_changes() {
    local name="$1" changed=() environment=() options=()
    mapfile -t changed < <(sed -nE 's/^    ([^ ]+::[^ ]+): .*\[FAIL\]$/\1/p' \
        "$work/compare-$name-$version.txt" | head -n 20)
    [[ ${#changed[@]} -gt 0 ]] || return 0
    read -r -a environment <<< "${run_environment[$name]}"
    read -r -a options <<< "${run_options[$name]}"
    echo "  the changed tests of the $name run once more, for their failure output:"
    (
        for assignment in "${environment[@]}"; do export "${assignment?}"; done
        unset HISTCORE_DROPIN_COUNTS  # the run's counts stay the run's
        sdk_pytest "$work/run-$name-again-$version" "${options[@]}" "${changed[@]}" 2>&1 || true
    ) | tail -n 60 | sed 's/^/    /'
}

# Against the kept outcomes: the changed tests of run $1 once more, plain, to say whose
# change each is. Succeeds only when plain gives each changed outcome again: the kept
# outcome is then stale on this machine, not histcore's doing (said loudly).
whose_change() {
    local name="$1" ids="$work/changed-$1-$version.txt" changed=()
    sed -nE 's/^    ([^ ]+): [^ ]+ -> [^ ]+  \[FAIL\]$/\1/p' \
        "$work/compare-$name-$version.txt" > "$ids"
    mapfile -t changed < "$ids"
    [[ ${#changed[@]} -gt 0 && ${#changed[@]} -le 200 ]] || return 1
    echo "  the ${#changed[@]} changed test(s) of the $name run once more, plain:"
    sdk_pytest "$work/run-$name-plain-again-$version" --assert=plain \
        --histcore-outcomes="$work/$name-plain-again-$version.json" "${changed[@]}" \
        > "$work/$name-plain-again-$version.log" 2>&1 || true
    [[ -f "$work/$name-plain-again-$version.json" ]] || return 1
    "$base_python" "$here/suite.py" whose "$expected" "$work/$name-$version.json" \
        "$work/$name-plain-again-$version.json" "$ids" | sed 's/^/    /'
    return "${PIPESTATUS[0]}"
}

status=0
declare -a summary=() summary_details=()
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
        read -r -a trace_paths <<< "${SDK_SUITE_TRACE_PATHS:-tests}"
        sdk_pytest "$work/run-trace-$version" -n "$jobs" --histcore-trace="$trace" \
            "${trace_paths[@]}" > "$work/trace-$version.log" 2>&1
        code=$?
        set -e
        tail -n 3 "$work/trace-$version.log"
        if [[ $code -ne 0 && $code -ne 1 ]]; then
            echo "sdk-suite: the traced run of $version ended with pytest exit code $code" >&2
            tail -n 40 "$work/trace-$version.log" >&2
            exit 1
        fi
        if [[ "${SDK_SUITE_TRACE_PATHS:-tests}" == tests ]]; then
            "$base_python" "$here/suite.py" write-list "$lists" "$version" "$trace"*
        else
            "$base_python" "$here/suite.py" write-list "$lists" "$version" \
                --paths "$(IFS=,; echo "${trace_paths[*]}")" "$trace"*
        fi
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
    # The session runs select whole files: every test in them.
    file_selection="$work/selection-files-$version.txt"
    printf '%s\n' "${files[@]}" > "$file_selection"
    expected="$expectations/$version.json"

    if [[ $write_expected -eq 1 ]]; then
        log "plain-session twice over ${#files[@]} files, for $expected"
        start_run plain-session --histcore-select="$file_selection"
        start_run plain-session-again --histcore-select="$file_selection"
        finish_run plain-session
        finish_run plain-session-again
        mkdir -p "$expectations"
        "$base_python" "$here/suite.py" write-expected "$expected" \
            "$work/plain-session-$version.json" "$work/plain-session-again-$version.json"
        summary+=("$version: plain outcomes written to $expected in $((SECONDS - started))s")
        continue
    fi

    read -r -a runs <<< "${runs_of[$wanted]}"
    log "runs over ${#files[@]} files: ${runs[*]} ($parallel at once)"
    # --assert=plain: the runs skip pytest's assertion rewriting, which changes only
    # the message of a failed assert, not whether it fails, and is redone by every
    # process (no .pyc is cached under PYTHONDONTWRITEBYTECODE): 15 of the 36 s that
    # collecting 0.24.0's listed files takes. The rerun of changed tests keeps it, for
    # readable failures.
    counts="$work/counts-$version"
    for run in "${runs[@]}"; do
        case "$run" in
            plain) start_run plain --histcore-select="$selection" ;;
            installed) start_run installed "HISTCORE_DROPIN_COUNTS=$counts/installed" \
                --histcore-select="$selection" --histcore-install ;;
            installed-python) start_run installed-python HISTCORE_BACKEND=python \
                "HISTCORE_DROPIN_COUNTS=$counts/installed-python" \
                --histcore-select="$selection" --histcore-install ;;
            guard) start_run guard --histcore-select="$selection" --histcore-guard \
                --histcore-repairs="$work/repairs-guard-$version.json" ;;
            plain-session) start_run plain-session --histcore-select="$file_selection" ;;
            guard-session) start_run guard-session HISTCORE_BACKEND=rust \
                --histcore-select="$file_selection" --histcore-guard \
                --histcore-repairs="$work/repairs-guard-session-$version.json" ;;
            guard-session-python) start_run guard-session-python HISTCORE_BACKEND=python \
                --histcore-select="$file_selection" --histcore-guard \
                --histcore-repairs="$work/repairs-guard-session-python-$version.json" ;;
        esac
    done
    for run in "${runs[@]}"; do
        finish_run "$run"
    done
    log "runs done"

    # Every outcome must be its baseline's: nothing is rerun to forgive a change (a test
    # that flakes without histcore too is listed in flaky.txt, with its evidence); a guard
    # run may differ only in tests where the guard repaired a model input.
    verdicts=()
    failed=0
    for run in "${runs[@]}"; do
        baseline="" label_of_baseline="plain" extra=() within="$selection"
        [[ "$run" == *-session* ]] && within="$file_selection"
        case "$run" in
            plain|plain-session)
                [[ -f "$expected" ]] || continue
                baseline="$expected" label_of_baseline="kept"
                extra=(--within "$within") ;;
            *-session*)
                if [[ " ${runs[*]} " == *" plain-session "* ]]; then
                    baseline="$work/plain-session-$version.json"
                fi ;;
            *)
                if [[ " ${runs[*]} " == *" plain "* ]]; then
                    baseline="$work/plain-$version.json"
                fi ;;
        esac
        if [[ -z "$baseline" ]]; then
            if [[ ! -f "$expected" ]]; then
                echo "sdk-suite: no plain run and no kept outcomes ($expected) to compare" \
                    "the $run run of $version with (add plain, or --write-expected)" >&2
                exit 1
            fi
            baseline="$expected" label_of_baseline="kept"
            extra=(--within "$within")
        fi
        [[ "$run" == guard* ]] && extra+=(--repairs "$work/repairs-$run-$version.json")
        if "$base_python" "$here/suite.py" compare "$baseline" "$work/$run-$version.json" \
            --label "$run" --baseline-label "$label_of_baseline" "${extra[@]}" \
            | tee "$work/compare-$run-$version.txt"; then
            verdicts+=("$run ok")
        elif [[ "$label_of_baseline" == kept && "$run" != plain* ]] && whose_change "$run"; then
            verdicts+=("$run ok (kept outcomes STALE here: scripts/sdk-suite.sh --write-expected $version)")
        else
            failed=1
            verdicts+=("$run CHANGED")
            explain_changes "$run"
        fi
        if [[ "$run" == installed* ]]; then
            if "$base_python" "$here/suite.py" paths "$lists" "$version" "$counts/$run" \
                > "$work/paths-$run-$version.txt"; then
                verdicts+=("$run paths ok")
            else
                failed=1
                verdicts+=("$run PATHS UNTAKEN")
            fi
            cat "$work/paths-$run-$version.txt"
            summary_details+=("openai-agents $version, $run:" \
                "$(cat "$work/paths-$run-$version.txt")")
        fi
    done
    word="ok  "
    if [[ $failed -eq 1 ]]; then
        status=1
        word="FAIL"
    fi
    joined="$(IFS=,; echo "${verdicts[*]}")"
    summary+=("$word openai-agents $version: ${joined//,/, } ($((SECONDS - started)) s)")
done

if [[ ${#summary_details[@]} -gt 0 ]]; then
    echo
    printf '%s\n' "${summary_details[@]}"
fi
echo
printf 'sdk-suite: %s\n' "${summary[@]}"
exit $status
