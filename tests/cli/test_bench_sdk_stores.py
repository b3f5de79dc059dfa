"""``histcore bench --openai-agents`` per store kind: each kind checked then timed (each
mode in a process of its own), PostgreSQL kinds skipped with a reason when no server can
be had, a mismatch an error, and one README row per store kind. Small sizes only."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the SDK benchmark needs openai-agents")

from histcore.cli import main
from histcore.cli.bench import command, sdk_postgres, sdk_store_turns, sdk_stores
from histcore.cli.bench.sdk_conversation import CorrectnessError, render, run_benchmark, to_json
from histcore.cli.bench.sdk_stores import KINDS, Checked
from tests.support.processes import running_with

ROOT = Path(__file__).resolve().parents[2]
SIZE = 20


def test_the_command_line_knows_every_store_kind() -> None:
    assert command._STORE_KINDS == tuple(KINDS)


def test_an_unknown_store_kind_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--openai-agents", "--stores", "sqlite,mongo"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "unknown store kind(s) 'mongo'" in err
    assert "sqlalchemy-postgres" in err


def test_store_options_need_openai_agents(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--stores", "sqlite", "--allow-debug"]) == 2
    assert "--stores and --scratch-dsn go with --openai-agents" in capsys.readouterr().err


def test_without_a_server_the_postgres_kinds_are_skipped_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sdk_postgres.shutil, "which", lambda name: None)
    result = run_benchmark(
        (SIZE,), 1, io.StringIO(), stores=("sqlalchemy-postgres", "histcore-postgres")
    )
    assert result.stores == []
    assert set(result.skipped) == {"sqlalchemy-postgres", "histcore-postgres"}
    for reason in result.skipped.values():
        assert "initdb and pg_ctl not on PATH" in reason
        assert "\n" not in reason
    printed = render(result)
    assert "skipped SQLAlchemySession, PostgreSQL (asyncpg): no PostgreSQL: initdb" in printed
    assert to_json(result)["stores_skipped"] == result.skipped


def test_a_store_kind_whose_turns_differ_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aiosqlite")
    real = sdk_store_turns.check_turn

    def differing(kind: Any, place: Any, installed: bool) -> Checked:
        checked = real(kind, place, installed)
        if installed:
            return Checked(checked.answer, [*checked.inputs, "extra"], checked.items)
        return checked

    monkeypatch.setattr(sdk_store_turns, "check_turn", differing)
    with pytest.raises(CorrectnessError, match="AsyncSQLiteSession with install\\(\\): the model"):
        run_benchmark((SIZE,), 1, io.StringIO(), stores=("async-sqlite",))


def _scratch_dsn() -> str:
    from tests.support.pg import require_pg, require_psycopg

    require_psycopg()
    return require_pg().dsn


def _timed(
    monkeypatch: pytest.MonkeyPatch, stores: tuple[str, ...], dsn: str | None = None
) -> tuple[Any, list[str]]:
    """The bench's result on ``stores``, and the processes it timed, as kind:mode."""
    processes: list[str] = []
    real = sdk_stores.time_modes

    def counted(kind: Any, places: dict[str, Any], repeat: int) -> Any:
        processes.extend(f"{kind.name}:{mode}" for mode in places)
        return real(kind, places, repeat)

    monkeypatch.setattr(sdk_stores, "time_modes", counted)
    result = run_benchmark((SIZE,), 1, io.StringIO(), stores=stores, scratch_dsn=dsn)
    assert result.skipped == {}
    assert [turn.store for turn in result.stores] == list(stores)
    for turn in result.stores:
        assert turn.size == SIZE
        assert turn.installed.median > 0
        assert turn.plain is not None
        assert turn.speedup == turn.plain.median / turn.installed.median
        if sys.platform.startswith("linux"):
            # each mode's own process, which imports the SDK: tens of MB at least
            assert turn.plain_rss is not None
            assert turn.plain_rss > 10_000_000
            assert turn.installed_rss is not None
            assert turn.installed_rss > 10_000_000
            # a timed turn's peak is the process's at most (its untimed turns, imports)
            assert turn.installed_process_rss is not None
            assert turn.installed_rss <= turn.installed_process_rss
    data = json.loads(json.dumps(to_json(result)))
    assert [entry["store"] for entry in data["stores"]] == list(stores)
    assert [entry["installed_peak_rss"] for entry in data["stores"]] == [
        turn.installed_rss for turn in result.stores
    ]
    assert [entry["plain_process_peak_rss"] for entry in data["stores"]] == [
        turn.plain_process_rss for turn in result.stores
    ]
    text = render(result)
    assert "per store kind" in text
    assert "turn peak RSS plain / installed" in text
    return result, processes


def test_the_sqlite_store_kinds_are_checked_and_timed_in_processes_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in ("aiosqlite", "cryptography"):
        pytest.importorskip(module)
    _, processes = _timed(monkeypatch, ("async-sqlite", "encrypted-sqlite"))
    assert processes == [
        "async-sqlite:plain",
        "async-sqlite:installed",
        "encrypted-sqlite:plain",
        "encrypted-sqlite:installed",
    ]


def test_the_postgres_store_kinds_are_checked_and_timed_in_processes_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in ("sqlalchemy", "asyncpg", "psycopg_pool"):
        pytest.importorskip(module)
    dsn = _scratch_dsn()
    result, processes = _timed(monkeypatch, ("sqlalchemy-postgres", "histcore-postgres"), dsn)
    # histcore's PostgresSession only installed, against the SDK's SQLAlchemySession on
    # the same server (its check turn too: the same answer, model input and items).
    assert processes == [
        "sqlalchemy-postgres:plain",
        "sqlalchemy-postgres:installed",
        "histcore-postgres:installed",
    ]
    theirs, ours = result.stores
    assert ours.plain_store == "sqlalchemy-postgres"
    assert ours.plain is theirs.plain
    assert ours.plain_rss == theirs.plain_rss
    assert to_json(result)["stores"][-1]["label"] == "histcore PostgresSession, PostgreSQL"
    assert "(histcore PostgresSession, PostgreSQL: its plain SDK column is SQLAlchemySession" in (
        render(result)
    )
    # Nothing is left in the scratch database.
    import psycopg

    with psycopg.connect(dsn) as connection:
        left = connection.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE %s",
            (f"histcore_bench_{os.getpid()}_%",),
        ).fetchone()
    assert left == (0,)


def test_a_throwaway_cluster_is_started_and_removed() -> None:
    from shutil import which

    if which("initdb") is None or which("pg_ctl") is None:
        pytest.skip("initdb/pg_ctl not on PATH")
    pytest.importorskip("psycopg")
    import psycopg

    with sdk_postgres.postgres_server(None, True) as server:
        assert server.reason is None
        assert server.dsn is not None
        with psycopg.connect(server.dsn) as connection:
            # UTF8, not initdb's SQL_ASCII without a locale (psycopg then reads bytes).
            assert connection.execute("SHOW server_encoding").fetchone() == ("UTF8",)
        schema = server.new_schema()
        assert schema.startswith(f"histcore_bench_{os.getpid()}_")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.dsn, connect_timeout=2)


def _terminated(
    command: list[str], tmp_path: Path, ready: Callable[[str], bool]
) -> tuple[int, str]:
    """Run ``command`` with its temporary files in ``tmp_path``, send it SIGTERM once
    ``ready`` holds of its stderr so far; its exit code and its stderr."""
    import signal
    import subprocess
    import tempfile
    import time

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # Not in tmp_path, which must be left empty; a file without a name leaves nothing.
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        child = subprocess.Popen(command, stderr=err, text=True, env=env)
        try:
            deadline = time.monotonic() + 120
            while child.poll() is None and time.monotonic() < deadline:
                err.seek(0)
                if ready(err.read()):
                    break
                time.sleep(0.05)
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=60)
        finally:
            child.kill()
        err.seek(0)
        return child.returncode, err.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_ends_the_bench_through_its_cleanup(tmp_path: Path) -> None:
    """Its store copies removed and its timing processes ended, as after Ctrl-C."""
    core = pytest.importorskip("histcore._core", reason="histcore bench needs the Rust engine")
    command = [sys.executable, "-m", "histcore", "bench", "--openai-agents"]
    command += ["--sizes", "200", "--stores", "sqlite", "--repeat", "1000"]
    if core.build_profile != "release":
        command.append("--allow-debug")
    code, stderr = _terminated(command, tmp_path, lambda text: "a process each" in text)
    assert code == 128 + 15, stderr
    assert list(tmp_path.iterdir()) == [], "the bench's temporary directory is gone"
    assert running_with(str(tmp_path)) == [], "no timing process is left"


def test_sigterm_stops_and_deletes_a_throwaway_cluster() -> None:
    import shutil
    import tempfile

    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.skip("initdb/pg_ctl not on PATH")
    pytest.importorskip("psycopg")
    child = (
        "import sys, time\n"
        "from histcore.cli.bench import sdk_postgres, signals\n"
        "with signals.ended_by_sigterm(), sdk_postgres.postgres_server(None, True) as s:\n"
        "    print('dsn', s.dsn, s.reason, file=sys.stderr, flush=True)\n"
        "    time.sleep(120)\n"
    )
    # Not pytest's tmp_path: the server runs as nobody, who must reach the cluster.
    top = Path(tempfile.mkdtemp(prefix="histcore-test-sigterm-"))
    top.chmod(0o755)
    try:
        code, stderr = _terminated([sys.executable, "-c", child], top, lambda text: "dsn " in text)
        assert "dsn postgresql://" in stderr, "a cluster was started"
        assert code == 128 + 15, stderr
        assert list(top.iterdir()) == [], "the cluster's directory is gone"
        assert running_with(str(top)) == [], "its server is stopped"
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_ends_bench_store_with_its_copy_of_your_store_removed(tmp_path: Path) -> None:
    """``histcore bench --store`` copies each session it times into a temporary folder:
    SIGTERM while it times removes the copy, and your store is as it was."""
    from histcore.cli.bench.sdk_conversation import build_store

    core = pytest.importorskip("histcore._core", reason="histcore bench needs the Rust engine")
    store = tmp_path / "store.db"
    build_store(str(store), 2000)
    before = store.read_bytes()
    work = tmp_path / "tmp"
    work.mkdir()
    command = [sys.executable, "-m", "histcore", "bench", "--store", str(store)]
    command += ["--repeat", "1000"]
    if core.build_profile != "release":
        command.append("--allow-debug")
    code, stderr = _terminated(command, work, lambda _: any(work.rglob("session-0.db")))
    assert "items ..." in stderr, "it was timing a session"
    assert code == 128 + 15, stderr
    assert list(work.iterdir()) == [], "the copy of the store is gone"
    assert store.read_bytes() == before


# --- the README's rows ------------------------------------------------------------


def _timing(seconds: float) -> dict[str, float]:
    return {"median_s": seconds, "min_s": seconds}


def test_the_readme_table_has_a_row_per_store_kind() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import readme_tables
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    document = {
        "format": "histcore-bench-openai-agents/8",
        "turns": [{"size": 10_000, "plain": _timing(1.5), "installed": _timing(0.1)}],
        "first_turns": [],
        "stores": [
            {
                "store": "sqlite",
                "label": "SQLiteSession",
                "size": 10_000,
                "plain_store": "sqlite",
                "plain": _timing(1.5),
                "installed": _timing(0.1),
            },
            {
                "store": "sqlalchemy-postgres",
                "label": "SQLAlchemySession, PostgreSQL (asyncpg)",
                "size": 10_000,
                "plain_store": "sqlalchemy-postgres",
                "plain": _timing(1.0),
                "installed": _timing(0.25),
            },
            {
                "store": "histcore-postgres",
                "label": "histcore PostgresSession, PostgreSQL",
                "size": 10_000,
                "plain_store": "sqlalchemy-postgres",
                "plain": _timing(1.0),
                "installed": _timing(0.2),
            },
        ],
        "stores_skipped": {"async-sqlite": "needs aiosqlite: pip install 'histcore[test]'"},
    }
    results = readme_tables.Results(Path("sdk.json"), document, "histcore bench --openai-agents")
    rows = [line for line in readme_tables.sdk_table(results) if line.startswith("| 10^4")]
    assert [row.split(" | ")[:4] for row in rows] == [
        ["| 10^4 items, SQLiteSession", "1.5 s", "100 ms", "15.0x"],
        ["| 10^4 items, SQLAlchemySession, PostgreSQL (asyncpg)", "1 s", "250 ms", "4.0x"],
        [
            "| 10^4 items, histcore PostgresSession, PostgreSQL (against SQLAlchemySession)",
            "1 s",
            "200 ms",
            "5.0x",
        ],
    ]
    assert "Not timed in that run: async-sqlite: needs aiosqlite" in "\n".join(
        readme_tables.sdk_table(results)
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's fork and exec")
def test_a_timing_process_reports_its_own_peak_not_its_parents() -> None:
    """Linux carries ru_maxrss over fork and exec: a child of a large bench process
    would report the parent's peak as its own."""
    import subprocess

    block = bytearray(200 * 1024 * 1024)
    block[::4096] = b"\1" * len(block[::4096])  # touched: resident
    child = "from histcore.cli.bench.memory import peak_rss; print(peak_rss())"
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert 0 < int(done.stdout) < 150 * 1024 * 1024
    del block


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc/self/clear_refs")
def test_a_turns_peak_starts_from_the_rss_before_it() -> None:
    """After ``reset_peak_rss`` the peak is no longer the earlier high-water mark: what a
    timed turn reports is its own."""
    import subprocess

    child = (
        "from histcore.cli.bench import memory\n"
        "block = bytearray(200 * 1024 * 1024)\n"
        "block[::4096] = b'\\1' * len(block[::4096])\n"
        "del block\n"
        "before = memory.peak_rss()\n"
        "reset = memory.reset_peak_rss()\n"
        "print(before, reset, memory.peak_rss(), memory.process_peak_rss())\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    before, reset, after, whole = done.stdout.split()
    assert int(before) > 200 * 1024 * 1024
    if reset == "False":
        pytest.skip("/proc/self/clear_refs is not writable here")
    assert int(after) < 150 * 1024 * 1024
    assert int(whole) == int(before), "the process's peak still counts what came before"


@pytest.mark.parametrize(("mode", "opened"), [("plain", 1), ("installed", 1), ("new session", 4)])
def test_the_rounds_keep_one_session_object_as_a_conversation_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, opened: int
) -> None:
    """One session object for the untimed turn and every round (``new session``: one
    more per timed turn); under ``install()`` the rounds then read only the rows added
    since the object's last read, never the whole history again."""
    from histcore.openai_agents import _session_read, installation
    from histcore.testing_histories import generate_history

    kind, place = KINDS["sqlite"], sdk_stores.Place(path=str(tmp_path / "store.db"))
    sdk_stores.fill(kind, place, generate_history(SIZE, 0, refresh_reasoning=False))
    sessions: list[Any] = []
    real_open = sdk_stores.open_session

    def counting(kind: Any, place: Any) -> Any:
        sessions.append(real_open(kind, place))
        return sessions[-1]

    monkeypatch.setattr(sdk_stores, "open_session", counting)
    full_reads: list[int] = []

    class CountedHistory(_session_read._History):  # made by a whole read alone
        def __init__(self, *args: Any) -> None:
            full_reads.append(args[2])
            super().__init__(*args)

    monkeypatch.setattr(_session_read, "_History", CountedHistory)
    rounds = sdk_stores._rounds(kind, place, mode, 3)
    assert len(rounds) == 3
    assert all(seconds > 0 for seconds, *_ in rounds)
    assert len(sessions) == opened
    assert installation() is None, "the rounds leave nothing installed"
    if mode == "installed":
        assert full_reads == [SIZE], "only the untimed turn reads the whole history"


def test_the_modes_rounds_take_turns_each_mode_in_its_own_process(tmp_path: Path) -> None:
    """Round 1 in the order given, round 2 the other way around, and so on, each mode
    in a process of its own (the rounds ordered by when each started, on the machine's
    monotonic clock, which all processes share)."""
    from histcore.testing_histories import generate_history

    kind = KINDS["sqlite"]
    places = {}
    for mode in ("plain", "installed"):
        places[mode] = sdk_stores.Place(path=str(tmp_path / f"{mode}.db"))
        sdk_stores.fill(kind, places[mode], generate_history(SIZE, 0, refresh_reasoning=False))
    timed = sdk_stores.time_modes(kind, places, 3)
    assert set(timed) == {"plain", "installed"}
    started = sorted(
        (round_.started, mode) for mode, modes in timed.items() for round_ in modes.rounds
    )
    assert [mode for _, mode in started] == [
        "plain",
        "installed",
        "installed",
        "plain",
        "plain",
        "installed",
    ]
    for modes in timed.values():
        assert len(modes.rounds) == 3
        assert all(round_.seconds > 0 for round_ in modes.rounds)
        if sys.platform.startswith("linux"):
            assert modes.peak_rss is not None
            assert modes.peak_rss > 10_000_000
    # each store holds its process's untimed turn and its three timed ones
    for place in places.values():
        said = [
            item["content"]
            for item in sdk_stores.read_items(kind, place)
            if item.get("role") == "user" and isinstance(item.get("content"), str)
        ]
        assert said[-4:] == ["Quito", *(f"Paris and Rome, round {n}" for n in range(3))]


def test_a_timing_process_that_fails_names_the_mode_and_its_error(tmp_path: Path) -> None:
    kind = KINDS["sqlite"]
    places = {
        "plain": sdk_stores.Place(path=str(tmp_path / "missing-folder" / "store.db")),
    }
    with pytest.raises(
        sdk_stores.ChildFailed, match="the plain turns on SQLiteSession failed"
    ) as failed:
        sdk_stores.time_modes(kind, places, 2)
    assert "unable to open database file" in str(failed.value), "the process's own error"


def test_a_timing_process_that_cannot_start_leaves_none_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = KINDS["sqlite"]
    places = {mode: sdk_stores.Place(path=str(tmp_path / f"{mode}.db")) for mode in ("a", "b")}
    started: list[Any] = []
    real = sdk_stores.subprocess.Popen

    def second_fails(*args: Any, **kwargs: Any) -> Any:
        if started:
            raise OSError("no more processes")
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(sdk_stores.subprocess, "Popen", second_fails)
    with pytest.raises(OSError, match="no more processes"):
        sdk_stores.time_modes(kind, places, 1)
    assert len(started) == 1
    assert started[0].poll() is not None, "the first mode's process was ended"
