"""Read-only checks of WAL-mode SQLite stores: ``histcore doctor PATH`` (and
``--dry-run``) and ``histcore bench --store`` leave no ``-wal``/``-shm`` file they did
not find, and read a store on a read-only volume (immutable, and saying so).

The read-only volume is real: the check runs in a subprocess, in a mount namespace
with the store's directory bound read-only when the tests run as root (where chmod
does not stop writes), or with the directory chmod-ed read-only otherwise. Where
neither is possible that test skips, and the fallback is still tested with SQLite's
error injected.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from histcore.cli.main import main
from histcore.sessions._store_readers import sqlite as store_sqlite
from histcore.sessions._store_readers.model import StoreError
from tests.cli.test_doctor import call, output, user, write_store

SESSIONS = {
    "a": [user("q"), call("c1"), output("c1"), output("c1", "again")],
    "b": [user("hello")],
}


def wal_store(path: Path) -> Path:
    """A store histcore's SQLiteSession wrote (WAL mode), closed: no -wal, no -shm."""
    write_store(str(path), SESSIONS)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert side_files(path) == []
    return path


def side_files(path: Path) -> list[str]:
    return [suffix for suffix in ("-wal", "-shm") if os.path.exists(f"{path}{suffix}")]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


READ_ONLY_RUNS = {
    "doctor": ["doctor", "{path}"],
    "doctor --dry-run": ["doctor", "{path}", "--dry-run"],
    "doctor --json": ["doctor", "{path}", "--json"],
    "bench --store": ["bench", "--allow-debug", "--store", "{path}", "--repeat", "1"],
}


@pytest.mark.parametrize("run", sorted(READ_ONLY_RUNS))
def test_a_read_only_check_leaves_no_side_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run: str
) -> None:
    path = wal_store(tmp_path / "app.db")
    before = digest(path), path.stat().st_mtime_ns
    code = main([word.format(path=path) for word in READ_ONLY_RUNS[run]])
    capsys.readouterr()
    assert code in (0, 1)
    assert side_files(path) == []
    assert (digest(path), path.stat().st_mtime_ns) == before


def test_side_files_in_use_by_another_connection_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An application with the store open: its -wal and -shm are not the doctor's.
    path = wal_store(tmp_path / "app.db")
    app = sqlite3.connect(path)
    try:
        assert app.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == 5
        assert side_files(path) == ["-wal", "-shm"]
        assert main(["doctor", str(path)]) == 1
        assert side_files(path) == ["-wal", "-shm"]
        app.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('b', '{}')")
        app.commit()
    finally:
        app.close()
    capsys.readouterr()
    assert side_files(path) == []  # the application's last close removed them


# --- a read-only volume ---------------------------------------------------------------


def _read_only_command(directory: Path, argv: list[str]) -> list[str]:
    """The command running ``histcore ARGV`` with ``directory`` read-only; skips when
    this machine cannot make it so."""
    command = [sys.executable, "-m", "histcore", *argv]
    if os.geteuid() != 0:
        for name in os.listdir(directory):
            os.chmod(directory / name, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(directory, stat.S_IRUSR | stat.S_IXUSR)
        return command
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("running as root, without unshare(1) to bind a directory read-only")
    wrapped = [unshare, "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"']
    probe = subprocess.run(
        [*wrapped, str(directory), "sh", "-c", f"! touch {directory}/probe"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot bind a directory read-only here: {probe.stderr.decode()[-200:]}")
    return [*wrapped, str(directory), *command]


def _run_read_only(directory: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            _read_only_command(directory, argv),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.chmod(directory, stat.S_IRWXU)


def test_a_wal_store_on_a_read_only_volume_is_read_immutable(tmp_path: Path) -> None:
    directory = tmp_path / "volume"
    directory.mkdir()
    path = wal_store(directory / "app.db")
    before = digest(path)
    checked = _run_read_only(directory, ["doctor", str(path)])
    assert checked.returncode == 1, checked.stderr  # problems found: it was read
    assert "2 session(s) checked" in checked.stdout
    assert "duplicate tool output" in checked.stdout
    assert "opened immutable" in checked.stdout
    assert "not a readable SQLite database" not in checked.stderr
    timed = _run_read_only(
        directory, ["bench", "--allow-debug", "--store", str(path), "--repeat", "1"]
    )
    assert timed.returncode == 0, timed.stderr
    (note,) = [line for line in timed.stdout.splitlines() if "immutable" in line]
    assert note.startswith(f"note: {path} is a WAL-mode database in a directory that cannot")
    assert side_files(path) == []
    assert digest(path) == before


def test_a_wal_file_on_a_read_only_volume_is_not_read_immutable(tmp_path: Path) -> None:
    # Its changes would not be read: refused, saying what to do.
    directory = tmp_path / "volume"
    directory.mkdir()
    path = wal_store(directory / "app.db")
    (directory / "app.db-wal").write_bytes(b"")
    checked = _run_read_only(directory, ["doctor", str(path)])
    assert checked.returncode == 2, checked.stdout
    assert "not a readable SQLite database (unable to open database file)" in checked.stderr
    assert "copy the file and its -wal file to a writable directory" in checked.stderr


# --- the fallback, with SQLite's error injected ------------------------------------------


@pytest.fixture
def cannot_open(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """SQLite failing as on a read-only volume: a read-only open without immutable says
    it cannot open the file, and the directory reads as not writable."""
    opened: list[str] = []
    connect = store_sqlite.SQLiteReader._connect_and_list

    def failing(self: store_sqlite.SQLiteReader, busy_timeout: float) -> Any:
        opened.append(self.uri)
        if "immutable=1" not in self.uri:
            raise sqlite3.OperationalError("unable to open database file")
        return connect(self, busy_timeout)

    real_access = os.access

    def access(where: Any, mode: int) -> bool:
        if mode == os.W_OK and os.path.abspath(where) == str(tmp_path):
            return False
        return real_access(where, mode)

    monkeypatch.setattr(store_sqlite.SQLiteReader, "_connect_and_list", failing)
    monkeypatch.setattr(store_sqlite.os, "access", access)
    return opened


def test_the_immutable_fallback_with_the_error_injected(
    tmp_path: Path, cannot_open: list[str]
) -> None:
    path = wal_store(tmp_path / "app.db")
    store = store_sqlite.SQLiteReader(str(path), writable=False, busy_timeout=0.1)
    try:
        assert store.session_ids() == ["a", "b"]
        assert store.uri.endswith("?mode=ro&immutable=1")
        assert "opened immutable" in str(store.notice)
    finally:
        store.close()
    assert [uri.rsplit("?", 1)[1] for uri in cannot_open] == ["mode=ro", "mode=ro&immutable=1"]
    # Never for a repair, and never when a -wal file holds changes immutable would miss.
    with pytest.raises(StoreError, match="unable to open database file"):
        store_sqlite.SQLiteReader(str(path), writable=True, busy_timeout=0.1)
    Path(f"{path}-wal").write_bytes(b"")
    with pytest.raises(StoreError, match="copy the file and its -wal file"):
        store_sqlite.SQLiteReader(str(path), writable=False, busy_timeout=0.1)


def test_no_immutable_fallback_for_a_rollback_journal_file(
    tmp_path: Path, cannot_open: list[str]
) -> None:
    path = tmp_path / "plain.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id, data)")
    conn.close()
    with pytest.raises(StoreError, match=r"not a readable SQLite database \(unable to open"):
        store_sqlite.SQLiteReader(str(path), writable=False, busy_timeout=0.1)
    assert len(cannot_open) == 1
