"""`histcore doctor` and `histcore bench --openai-agents` through the real entry point."""

from __future__ import annotations

import asyncio
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
    assert main([*args, "--json", str(out_path)]) == 0
    printed = capsys.readouterr().out
    assert "SDK conversation turn" in printed
    assert "the first turn of a fresh process" in printed
    assert "trace provider also built before the clock" in printed
    report = json.loads(out_path.read_text())
    for kind in ("turns", "first_turns", "first_turns_tracing_ready"):
        (turn,) = report[kind]
        assert turn["size"] == 200 and turn["target"] is None  # noqa: PT018
        assert turn["plain"]["median_s"] > 0 and turn["installed"]["median_s"] > 0  # noqa: PT018
        if kind == "turns":
            assert "plain_gc" not in turn
        else:  # the collector's time inside a fresh process's timed turn: part of it
            for mode in ("plain", "installed"):
                assert 0 <= turn[f"{mode}_gc"]["median_s"] < turn[mode]["median_s"]
    assert "in GC: plain / installed" in printed
    # The empty session's first turn: the floor, and what it leaves reachable per size.
    floor = report["first_turn_floor"]
    assert floor["size"] == 0 and "reachable" not in floor  # noqa: PT018
    assert floor["plain"]["median_s"] > 0 and floor["installed"]["median_s"] > 0  # noqa: PT018
    (first,) = report["first_turns"]
    assert first["reachable"] == pytest.approx(
        first["plain"]["median_s"] / floor["installed"]["median_s"]
    )
    # Internal targets and floors only with --targets.
    assert "on an empty session" not in printed
    assert "at most" not in printed
    assert "MISSED" not in printed
    assert "target" not in printed
    assert main([*args, "--targets"]) == 0
    printed = capsys.readouterr().out
    assert "on an empty session, the floor of the turns above" in printed
    assert "at most" in printed
    assert "with guard" in printed
    assert "guard cost" in printed


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


def test_bench_first_turn_verdict_names_what_the_floor_leaves() -> None:
    bench = pytest.importorskip("histcore.cli.bench.sdk_conversation")
    from histcore.cli.bench.timing import Timing

    def timing(seconds: float) -> Timing:
        return Timing(seconds, (seconds,), 1)

    collector = (timing(0.09), timing(0.08))
    floor = bench.TurnTiming(0, timing(0.17), timing(0.165), collector)
    small = bench.TurnTiming(1_000, timing(0.27), timing(0.18), collector)
    large = bench.TurnTiming(100_000, timing(12.0), timing(1.6), collector)
    result = bench.SdkBenchResult("0.24.0", "rust", "release", first_turns=[small, large])
    result.first_turn_floor = floor
    assert result.reachable(small) == pytest.approx(0.27 / 0.165)
    assert "MISSED" not in bench.render(result)  # targets only when asked for
    printed = bench.render(result, targets=True)
    # Missed, and out of reach over the floor: both said.
    assert "MISSED (>= 5x), at most 1.6x over the floor" in printed
    # Missed, but the floor would allow it (72x): no excuse printed.
    (line,) = [line for line in printed.splitlines() if line.strip().startswith("10^5")]
    assert line.endswith("MISSED (>= 12x)")
    assert "plain 170 ms (GC 90 ms), installed 165 ms (GC 80 ms)" in printed
    without_floor = bench.SdkBenchResult("0.24.0", "rust", "release", first_turns=[small])
    assert "at most" not in bench.render(without_floor, targets=True)
