"""`histcore doctor` and `histcore bench --openai-agents` through the real entry point."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from histcore.cli.main import main
from histcore.sessions import SQLiteSession


def _store(path: Path, items: list[dict[str, str]]) -> None:
    async def write() -> None:
        with SQLiteSession("s1", path) as session:
            await session.add_items(items)

    asyncio.run(write())


def test_doctor_subcommand_reports_and_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "store.db"
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    stale = {"type": "function_call_output", "call_id": "c1", "output": "stale"}
    fresh = {"type": "function_call_output", "call_id": "c1", "output": "fresh"}
    _store(path, [{"role": "user", "content": "hi"}, call, stale, fresh])  # two outputs of c1
    assert main(["doctor", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["path"] == str(path)
    assert main(["doctor", str(path), "--fix"]) == 0
    capsys.readouterr()
    assert main(["doctor", str(path)]) == 0
    with SQLiteSession("s1", path) as session:
        kept = asyncio.run(session.get_items())
    assert [item.get("output") for item in kept] == [None, None, "fresh"]
    assert any(name.startswith("store.db.") for name in os.listdir(tmp_path))  # the backup


def test_doctor_subcommand_rejects_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", str(tmp_path / "absent.db")]) == 2
    assert "histcore doctor: error:" in capsys.readouterr().err


def test_bench_openai_agents_runs_a_small_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("agents", reason="the SDK benchmark needs openai-agents")
    core = pytest.importorskip("histcore._core", reason="needs the Rust engine")
    args = ["bench", "--openai-agents", "--sizes", "200", "--repeat", "1"]
    if core.build_profile != "release":
        args.append("--allow-debug")
    out_path = tmp_path / "sdk.json"
    plot_path = tmp_path / "sdk.svg"
    plotting = importlib.util.find_spec("matplotlib") is not None
    plot = ["--plot", str(plot_path)] if plotting else []
    assert main([*args, "--json", str(out_path), *plot]) == 0
    printed, progress = capsys.readouterr()
    assert "SDK conversation turn" in printed
    assert "the first turn of a fresh process" in printed
    assert "with guard" in printed
    assert "guard check" in printed
    assert "new session" in printed
    # Plain words for a user: no internal targets, floors or diagnostics.
    for text in (printed.lower(), progress.lower()):
        for word in ("target", "missed", "floor", "at most", "trace provider", "gc"):
            assert word not in text
    report = json.loads(out_path.read_text())
    assert report["format"] == "histcore-bench-openai-agents/8"
    environment = report["environment"]
    assert environment["openai_agents"] is not None
    assert environment["python"] == sys.version.split()[0]
    assert environment["machine"]["cores"] == os.cpu_count()
    assert environment["date"].endswith("Z")
    assert "git_commit" in environment
    for gone in ("first_turn_floor", "first_turns_tracing_ready", "helpers"):
        assert gone not in report
    for kind in ("turns", "first_turns"):
        (turn,) = report[kind]
        assert turn["size"] == 200
        assert "target" not in turn
        assert "target_met" not in turn
        assert turn["plain"]["median_s"] > 0
        assert turn["installed"]["median_s"] > 0
        if kind == "turns":
            assert turn["guarded"]["median_s"] > 0
            # The guard's time: inside the guarded turn, and what the cost is made of (its
            # own time, and its dedupes less the installed turns': at 200 items that
            # difference is within the noise, so only its bound is asserted).
            assert turn["installed_dedupe"]["median_s"] > 0
            assert turn["guard_time"]["min_s"] < turn["guarded"]["min_s"]
            assert turn["guard_check_s"] == pytest.approx(
                turn["guard_time"]["min_s"] - turn["installed_dedupe"]["min_s"]
            )
            assert turn["guard_cost"] == pytest.approx(
                turn["guard_check_s"] / turn["installed"]["median_s"]
            )
            assert turn["new_session"]["median_s"] > 0
            assert turn["new_session_speedup"] == pytest.approx(
                turn["plain"]["median_s"] / turn["new_session"]["median_s"]
            )
            assert "plain_gc" not in turn
        else:  # the collector's time inside a fresh process's timed turn: part of it
            for mode in ("plain", "installed"):
                assert 0 <= turn[f"{mode}_gc"]["median_s"] < turn[mode]["median_s"]
    if plotting:
        assert b"SDK turn, in one process" in plot_path.read_bytes()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], (10_000, 100_000)),
        # Explicit sizes win, also when they are the engine benchmark's defaults.
        (["--sizes", "1000,10000,100000"], (1_000, 10_000, 100_000)),
        (["--sizes", "500"], (500,)),
    ],
)
def test_bench_openai_agents_sizes(
    monkeypatch: pytest.MonkeyPatch, given: list[str], expected: tuple[int, ...]
) -> None:
    sdk_conversation = pytest.importorskip("histcore.cli.bench.sdk_conversation")
    pytest.importorskip("histcore._core", reason="needs the Rust engine")
    asked: list[tuple[int, ...]] = []

    def fake_run_cli(sizes: tuple[int, ...], **_: object) -> int:
        asked.append(tuple(sizes))
        return 0

    monkeypatch.setattr(sdk_conversation, "run_cli", fake_run_cli)
    assert main(["bench", "--openai-agents", "--allow-debug", *given]) == 0
    assert asked == [expected]


@pytest.mark.parametrize(
    "command", [["-m", "histcore", "doctor", "x.db"], ["-m", "histcore", "bench"]]
)
def test_an_invalid_backend_is_one_line_not_a_traceback(command: list[str]) -> None:
    env = {**os.environ, "HISTCORE_BACKEND": "fastest"}
    done = subprocess.run(
        [sys.executable, *command], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "histcore: error: HISTCORE_BACKEND must be one of auto, rust, python, not 'fastest'\n"
    )
    # A program importing histcore still gets the ImportError.
    imported = subprocess.run(
        [sys.executable, "-c", "import histcore"], env=env, capture_output=True, text=True
    )
    assert imported.returncode == 1
    assert "ImportError: HISTCORE_BACKEND must be" in imported.stderr


# What the console script runs, in a fresh interpreter where histcore._core cannot be
# imported: None in sys.modules makes `import histcore._core` fail as if absent.
_SCRIPT_WITHOUT_ENGINE = (
    "import sys; sys.modules['histcore._core'] = None; "
    "sys.argv = ['/venv/bin/histcore', *sys.argv[1:]]; "
    "from histcore.cli import main; sys.exit(main())"
)


@pytest.mark.parametrize("command", [["bench"], ["doctor", "x.db"], ["--version"]])
def test_rust_backend_without_the_engine_is_one_line_with_the_ways_out(
    command: list[str],
) -> None:
    env = {**os.environ, "HISTCORE_BACKEND": "rust"}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT_WITHOUT_ENGINE, *command],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("histcore: error: HISTCORE_BACKEND=rust, but this histcore is ")
    assert "pure-Python build" in lines[0]
    assert "install the compiled wheel or build from source with a Rust toolchain" in lines[0]
    assert "unset HISTCORE_BACKEND (or set it to auto or python)" in lines[0]
