#!/usr/bin/env bash
# The sdist where no Rust toolchain is: cargo removed from PATH, MATURIN_NO_INSTALL_RUST=1.
#
#   bash scripts/check-sdist-without-rust.sh dist/histcore-<v>.tar.gz
#
# 1. `pip install SDIST` must fail, and its output must name both ways out: a Rust
#    toolchain (https://rustup.rs) and `pip install --only-binary histcore histcore`.
# 2. `HISTCORE_BUILD_PURE=1 pip install SDIST` must install the pure-Python package,
#    which scripts/smoke_test.py checks (HISTCORE_BACKEND=auto gives "python").
#
# Each install runs in its own fresh venv (PYTHON, default python3), with
# --no-cache-dir so that no wheel built here is reused by a later source install.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdist="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
python="$(command -v "${PYTHON:-python3}")"
work="$(mktemp -d -t histcore-norust.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# PATH without any directory that holds a cargo.
no_cargo_path=""
IFS=: read -r -a entries <<<"$PATH"
for entry in "${entries[@]}"; do
    [[ -z "$entry" || -x "$entry/cargo" ]] && continue
    no_cargo_path="${no_cargo_path:+$no_cargo_path:}$entry"
done
without_rust() {
    env -u CARGO -u CARGO_HOME -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN \
        PATH="$no_cargo_path" MATURIN_NO_INSTALL_RUST=1 HISTCORE_BACKEND=auto "$@"
}
if without_rust bash -c 'command -v cargo' >/dev/null; then
    echo "check-sdist-without-rust: cargo is still on PATH" >&2
    exit 1
fi

echo "--- pip install $(basename "$sdist") without cargo: must fail and name the ways out"
without_rust "$python" -m venv "$work/fail"
without_rust "$work/fail/bin/python" -m pip install --quiet --upgrade pip
status=0
without_rust "$work/fail/bin/python" -m pip install --no-cache-dir "$sdist" \
    >"$work/fail.log" 2>&1 || status=$?
sed 's/^/    | /' "$work/fail.log" | tail -n 25
if [[ $status -eq 0 ]]; then
    echo "check-sdist-without-rust: the sdist installed without cargo" >&2
    exit 1
fi
for needed in "https://rustup.rs" "pip install --only-binary histcore histcore" \
    "HISTCORE_BUILD_PURE=1"; do
    if ! grep -qF -- "$needed" "$work/fail.log"; then
        echo "check-sdist-without-rust: the failure does not say: $needed" >&2
        exit 1
    fi
done
if without_rust "$work/fail/bin/python" -c 'import histcore' 2>/dev/null; then
    echo "check-sdist-without-rust: a failed install left histcore behind" >&2
    exit 1
fi
echo "ok: the install failed (pip exit $status) and named both ways out"

echo "--- HISTCORE_BUILD_PURE=1 pip install $(basename "$sdist") without cargo: the pure package"
without_rust "$python" -m venv "$work/pure"
without_rust "$work/pure/bin/python" -m pip install --quiet --upgrade pip
without_rust env HISTCORE_BUILD_PURE=1 "$work/pure/bin/python" -m pip install --quiet \
    --no-cache-dir "$sdist"
(cd "$work" && without_rust "$work/pure/bin/python" "$repo/scripts/smoke_test.py" python)
echo "ok: the sdist installed the pure-Python package without cargo"
