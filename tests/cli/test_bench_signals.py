"""``histcore bench`` on a signal: what it starts while the signal arrives is still ended
(``cli/bench/signals.py``). Each case runs in a process of its own, which signals itself
at the worst moment: right after a process or a server was started, before the bench has
recorded it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.processes import running_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _run_script(script: str, tmp: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(("name", "ends_as"), [("SIGTERM", "exit 143"), ("SIGINT", "interrupted")])
def test_a_signal_within_signals_held_ends_the_program_when_the_block_is_left(
    tmp_path: Path, name: str, ends_as: str
) -> None:
    script = f"""
import os, signal
from histcore.cli.bench import signals
with signals.ended_by_sigterm():
    try:
        with signals.signals_held():
            os.kill(os.getpid(), signal.{name})
            print("the block goes on", flush=True)
        print("after the block", flush=True)
    except SystemExit as exit:
        print("exit", exit.code, flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""
    assert _run_script(script, tmp_path) == ["the block goes on", ends_as]


#: Each way the bench starts a timing process, as a call in the test's script.
STARTS = {
    "time_modes": (
        'places = {"plain": sdk_stores.Place(path=sys.argv[1] + "/store.db")}\n'
        'sdk_stores.time_modes(sdk_stores.KINDS["sqlite"], places, 1)'
    ),
    "run_process": 'signals.run_process([sys.executable, "-c", "pass"])',
}


@pytest.mark.parametrize("start", list(STARTS))
def test_a_timing_process_started_as_sigterm_arrives_is_ended(tmp_path: Path, start: str) -> None:
    """The process is started, SIGTERM arrives before the bench holds it: it is ended
    all the same (it was left running, and this test failed, before ``signals_held``)."""
    marker = f"histcore-test-sleeper-{os.getpid()}-{start}"
    call = STARTS[start].replace("\n", "\n        ")
    script = f"""
import os, signal, subprocess, sys
from histcore.cli.bench import sdk_stores, signals
started, real_popen = [], subprocess.Popen
def popen(command, **options):
    # A process that would outlive the bench unless ended: a sleeper, tagged to be found.
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "{marker}"]
    started.append(real_popen(sleeper, **options))
    os.kill(os.getpid(), signal.SIGTERM)
    return started[-1]
subprocess.Popen = popen
with signals.ended_by_sigterm():
    try:
        {call}
    except SystemExit as exit:
        print("exit", exit.code, [child.poll() is not None for child in started], flush=True)
"""
    try:
        assert _run_script(script, tmp_path) == ["exit 143 [True]"]
        assert running_with(marker) == [], "the timing process is ended"
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)


def test_a_cluster_started_as_sigterm_arrives_is_stopped_and_removed() -> None:
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        pytest.skip("initdb/pg_ctl not on PATH")
    pytest.importorskip("psycopg")
    script = """
import os, signal, sys
from histcore.cli.bench import sdk_postgres, signals
real_run = sdk_postgres._run
def run(command, log):
    real_run(command, log)
    if command[-1] == "start":  # the server is up, and not yet recorded as started
        os.kill(os.getpid(), signal.SIGTERM)
sdk_postgres._run = run
with signals.ended_by_sigterm():
    try:
        with sdk_postgres.postgres_server(None, True, workdir=sys.argv[1]) as server:
            print("a server was handed out", server.dsn, flush=True)
    except SystemExit as exit:
        print("exit", exit.code, flush=True)
"""
    # Not pytest's tmp_path: the server runs as nobody, who must reach the cluster.
    top = Path(tempfile.mkdtemp(prefix="histcore-test-held-"))
    top.chmod(0o755)
    try:
        assert _run_script(script, top) == ["exit 143"]
        assert list(top.iterdir()) == [], "the cluster's folder is removed"
        assert running_with(str(top)) == [], "its server is stopped"
    finally:
        subprocess.run(["pkill", "-f", str(top)], check=False)
        shutil.rmtree(top, ignore_errors=True)
