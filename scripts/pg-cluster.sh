#!/usr/bin/env bash
# Start, restart or stop a throwaway PostgreSQL cluster for histcore's tests and benchmarks.
#
#   eval "$(scripts/pg-cluster.sh start)"     # exports HISTCORE_PG_DSN and HISTCORE_PG_DIR
#   scripts/pg-cluster.sh restart "$HISTCORE_PG_DIR"
#   scripts/pg-cluster.sh stop "$HISTCORE_PG_DIR"
#
# The cluster lives in a fresh temporary directory, listens on 127.0.0.1 only (on a free
# port), trusts loopback connections and is owned by an unprivileged user: PostgreSQL
# refuses to run as root, so as root the script runs the server as HISTCORE_PG_USER
# (default histcore-pg, created when missing). When no PostgreSQL binaries are found it
# installs the distribution's `postgresql` package (root only; never when
# HISTCORE_PG_NO_INSTALL is set, as the test suite does). `start` prints nothing but
# `export` lines on stdout; progress and errors go to stderr. Never point it at real data:
# `stop` deletes the whole directory.
set -euo pipefail

PG_USER="${HISTCORE_PG_USER:-histcore-pg}"
DB_NAME="histcore"
DB_ROLE="histcore"
MARKER=".histcore-pg-cluster"

log() { printf 'pg-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Directory holding initdb/pg_ctl: PATH first, then the newest Debian-style install.
find_bindir() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        # Resolve symlinks: createdb sits beside the real pg_ctl, not always beside a link.
        dirname "$(readlink -f "$(command -v pg_ctl)")"
        return 0
    fi
    local candidate
    candidate="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$candidate" && -x "$candidate/initdb" && -x "$candidate/pg_ctl" ]]; then
        printf '%s\n' "$candidate"
        return 0
    fi
    return 1
}

ensure_binaries() {
    local bindir
    if bindir="$(find_bindir)"; then
        printf '%s\n' "$bindir"
        return 0
    fi
    [[ -z "${HISTCORE_PG_NO_INSTALL:-}" ]] \
        || die "initdb/pg_ctl not found (and HISTCORE_PG_NO_INSTALL is set): install PostgreSQL"
    [[ "$(id -u)" -eq 0 ]] || die "initdb/pg_ctl not found and not root: install PostgreSQL first"
    command -v apt-get >/dev/null 2>&1 || die "initdb/pg_ctl not found and apt-get is unavailable"
    log "PostgreSQL not found: installing the distribution's postgresql package"
    # Debian's package would otherwise create and start a cluster of its own on port 5432.
    if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
        mkdir -p /etc/postgresql-common
        printf 'create_main_cluster = false\n' >/etc/postgresql-common/createcluster.conf
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
    bindir="$(find_bindir)" || die "postgresql was installed but initdb/pg_ctl are still missing"
    printf '%s\n' "$bindir"
}

# The account the server runs as: ourselves unless we are root.
ensure_user() {
    if [[ "$(id -u)" -ne 0 ]]; then
        id -un
        return 0
    fi
    if ! id "$PG_USER" >/dev/null 2>&1; then
        log "creating unprivileged user $PG_USER"
        useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER" >&2 \
            || die "could not create user $PG_USER"
    fi
    printf '%s\n' "$PG_USER"
}

# Run a command as the cluster's owner.
as_owner() {
    local owner="$1"
    shift
    if [[ "$(id -un)" == "$owner" ]]; then
        "$@"
    else
        runuser -u "$owner" -- "$@"
    fi
}

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

check_cluster_dir() {
    local dir="${1:-}"
    [[ -n "$dir" ]] || die "usage: $0 $2 CLUSTER_DIR (the HISTCORE_PG_DIR printed by start)"
    [[ -f "$dir/$MARKER" ]] || die "$dir is not a cluster made by this script"
}

cmd_start() {
    local bindir owner dir port attempt
    bindir="$(ensure_binaries)"
    owner="$(ensure_user)"
    dir="$(mktemp -d "${TMPDIR:-/tmp}/histcore-pg.XXXXXX")"
    chmod 700 "$dir"
    chown "$owner" "$dir"
    : >"$dir/$MARKER"
    log "initialising a cluster in $dir (owner $owner, binaries $bindir)"
    if ! as_owner "$owner" "$bindir/initdb" -D "$dir/data" -U "$DB_ROLE" --auth=trust \
        --encoding=UTF8 --no-locale --no-instructions >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        rm -rf "$dir"
        die "initdb failed"
    fi
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        # Loopback only, sockets inside the cluster directory, and a few more connections
        # than the default so the concurrency tests' pools all fit.
        cat >"$dir/data/postgresql.auto.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
EOF
        chown "$owner" "$dir/data/postgresql.auto.conf"
        if as_owner "$owner" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            start >&2; then
            break
        fi
        log "start on port $port failed (attempt $attempt)"
        tail -n 20 "$dir/server.log" >&2 || true
        port=""
    done
    if [[ -z "$port" ]]; then
        rm -rf "$dir"
        die "PostgreSQL could not be started"
    fi
    printf '%s\n' "$bindir" >"$dir/bindir"
    printf '%s\n' "$owner" >"$dir/owner"
    if ! "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$DB_ROLE" "$DB_NAME" >&2; then
        cmd_stop "$dir"
        die "createdb failed"
    fi
    log "PostgreSQL is up on 127.0.0.1:$port"
    printf 'export HISTCORE_PG_DSN=%s\n' "postgresql://$DB_ROLE@127.0.0.1:$port/$DB_NAME"
    printf 'export HISTCORE_PG_DIR=%s\n' "$dir"
}

cmd_restart() {
    local dir="${1:-}"
    check_cluster_dir "$dir" restart
    as_owner "$(cat "$dir/owner")" "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" \
        -l "$dir/server.log" -w -t 60 -m fast restart >&2
}

cmd_stop() {
    local dir="${1:-}"
    check_cluster_dir "$dir" stop
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        as_owner "$(cat "$dir/owner")" "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" \
            -w -t 60 -m fast stop >&2 || log "pg_ctl stop failed; removing the directory anyway"
    fi
    rm -rf "$dir"
    log "stopped and removed $dir"
}

case "${1:-}" in
    start) cmd_start ;;
    restart) cmd_restart "${2:-}" ;;
    stop) cmd_stop "${2:-}" ;;
    *) die "usage: $0 start | restart CLUSTER_DIR | stop CLUSTER_DIR" ;;
esac
