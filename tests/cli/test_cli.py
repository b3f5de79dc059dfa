"""The ``histcore`` command line and ``histcore bench``, end to end at tiny sizes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from histcore import __version__
from histcore.cli.bench import command, engine
from histcore.cli.bench.engine import (
    BASELINES,
    OPERATIONS,
    BaselineResult,
    CaseResult,
    Settings,
    SuiteResult,
)
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.report import linearity, render
from histcore.cli.bench.timing import Timing
from histcore.cli.main import main
from histcore.engine import pure as _pure
from tests.support.engine_names import ENGINE_NAMES

TINY = ["--sizes", "200", "--repeat", "1"]
#: A size's progress line: ``[1/2] 10^3 items (40 cases) ........................ 3.1 s``.
PROGRESS_LINE = r"\[\d+/\d+\] \S+ items \((\d+) cases\) (\.+) [\d.]+ (ns|us|ms|s)"
ALL_CASES = [(name, shape) for name, operation in OPERATIONS.items() for shape in operation.shapes]


def fake_engine(profile: str, **overrides: Any) -> SimpleNamespace:
    """A stand-in for histcore._core: the pure twin's functions and a build profile."""
    functions = {name: getattr(_pure, name) for name in ENGINE_NAMES}
    return SimpleNamespace(**{**functions, **overrides, "build_profile": profile})


@pytest.fixture
def release_engine(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Make the bench see a release build (the pure twin in disguise)."""
    fake = fake_engine("release")
    monkeypatch.setattr(command, "load_rust_engine", lambda: fake)
    return fake


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_exits(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run arguments argparse exits on; return the exit code, stdout and stderr."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


# --- help -----------------------------------------------------------------------------


def test_help_documents_commands_and_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    top = " ".join(capsys.readouterr().out.split())  # argparse wraps the help text
    # What bench times now: generated histories, SDK turns, and the user's own store.
    assert "bench time histcore against the OpenAI Agents SDK" in top
    for option in ("--openai-agents", "--store/--dsn", "generated histories"):
        assert option in top
    assert "large generated" not in top
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--sizes",
        "--huge",
        "--functions",
        "--repeat",
        "--json",
        "--backend",
        "--no-reference",
        "--plot",
        "--allow-debug",
    ):
        assert option in text
    for name in OPERATIONS:
        assert name in text
    assert "exit codes" in text
    assert "debug" in text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_exits(capsys, "--version")
    assert code == 0
    assert out.strip() == f"histcore {__version__}"


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_exits(capsys)
    assert code == 2
    assert "COMMAND" in err


# --- end to end ---------------------------------------------------------------------


def test_bench_prints_progress_header_and_table(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace
) -> None:
    code, out, err = run_cli(capsys, "bench", *TINY)
    assert code == 0, err
    # Progress on stderr: one line for the one size, a dot per case, then its time.
    assert len(err.splitlines()) == 1, err
    assert re.fullmatch(PROGRESS_LINE, err.splitlines()[0]), err
    # The header names machine, CPUs, Python, histcore, build and SDK.
    assert f"histcore {__version__}" in out
    assert f"{os.cpu_count()} CPUs" in out
    assert f"python: CPython {sys.version.split()[0]}" in out
    assert "rust engine build: release" in out
    assert "openai-agents:" in out
    assert "DEBUG" not in out
    header = next(line for line in out.splitlines() if line.startswith("function"))
    for column in ("size", "rust", "pure", "SDK", "SDK/rust", "rust ns/item"):
        assert column in header
    # No internal performance targets (they live in benches/targets.py).
    assert "target" not in out
    assert "MISS" not in out
    assert max(map(len, out.splitlines())) <= 120
    rows = [line.split()[0] for line in out.splitlines() if line.strip()]
    for name in OPERATIONS:
        assert name in rows
    assert "[pending_programs]" in out
    assert "[reasoning_run]" in out
    for name in BASELINES:
        assert name in rows


def test_bench_progress_is_one_line_per_size_and_the_report_ends_with_a_summary(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace, tmp_path: Path
) -> None:
    functions = "dedupe_keys,deduplicate_input_items_preferring_latest"
    path = tmp_path / "bench.json"
    code, out, err = run_cli(
        capsys, "bench", *TINY, "--sizes", "100,200", "--functions", functions, "--json", str(path)
    )
    assert code == 0, err
    progress = err.splitlines()
    assert progress[-1] == f"histcore bench: wrote {path}"
    assert [line.split(" items")[0] for line in progress[:-1]] == ["[1/2] 10^2", "[2/2] 200"]
    for line in progress[:-1]:
        match = re.fullmatch(PROGRESS_LINE, line)
        assert match, line
        # The baselines, dedupe_keys, and the latest-value dedupe on its three shapes.
        assert int(match[1]) == len(match[2]) == len(BASELINES) + 1 + 3
    assert "dedupe_keys" not in err  # no line per function
    data = json.loads(path.read_text(encoding="utf-8"))
    summary = data["summary"]
    assert out.splitlines()[-4:] == ["", *summary["lines"]]
    first, second, third = summary["lines"]
    cases = {(c["function"], c["shape"], c["size"]): c["timings"] for c in data["cases"]}
    pure_over_rust = {
        name: cases[(name, "history", 200)]["python"]["median_s"]
        / cases[(name, "history", 200)]["rust"]["median_s"]
        for name in functions.split(",")
    }
    assert summary["python_over_rust"]["by_function"] == pytest.approx(pure_over_rust)
    low, high = sorted(pure_over_rust.values())
    assert second.startswith(f"pure/rust at 200 items: {low:.1f}x")  # names where they fit
    assert f" to {high:.1f}x" in second
    assert max(map(len, summary["lines"])) <= 120
    assert second.endswith(" over 2 functions")
    if data["environment"]["openai_agents"] is None:
        assert first == "SDK/rust at 200 items: not measured (openai-agents is not installed)"
    else:
        assert first.startswith("SDK/rust at 200 items: ")
        assert summary["sdk_over_primary"]["by_function"].keys() == pure_over_rust.keys()
    # Sizes below 10^3 say nothing about growth.
    assert third == "rust time per item: not checked (it needs two sizes of 10^3 items or more)"


def _summary_suite(
    spreads: dict[str, float], backends: tuple[engine.Backend, ...] = ("rust", "python")
) -> SuiteResult:
    """Runs at 10^3 and 10^5 items where the SDK takes 10x and the pure twin 4x as long
    as Rust at 10^5, and Rust's time per item grows by ``spreads[function]``."""
    cases = []
    for index, (name, spread) in enumerate(spreads.items()):
        for size, rust in ((1000, 1e-3), (100_000, 0.1 * spread)):
            sdk_ratio = 10.0 + index if size == 100_000 else 1.0
            timings = {
                "rust": timing(rust),
                "python": timing(4 * rust),
                "sdk": timing(rust * sdk_ratio),
            }
            cases.append(
                CaseResult(name, "history", size, {k: timings[k] for k in (*backends, "sdk")})
            )
    return SuiteResult(Settings(sizes=(1000, 100_000), backends=backends), "0.0", cases, [])


def test_the_summary_gives_the_headline_ratios_and_whether_time_per_item_stayed_flat() -> None:
    from histcore.cli.bench.report import summarize

    result = _summary_suite({"dedupe_keys": 1.2, "deep_copy_items": 3.0, "content_keys": 1.5})
    assert summarize(result).lines() == [
        "SDK/rust at 10^5 items: 10.0x (dedupe_keys) to 12.0x (content_keys), "
        "median 11.0x over 3 functions",
        "pure/rust at 10^5 items: 4.0x (dedupe_keys) to 4.0x (content_keys), "
        "median 4.0x over 3 functions",
        "rust time per item, 10^3 to 10^5 items: flat in 2 of 3 passes; "
        "not flat: deep_copy_items 3.00x",
    ]
    text = render(result, Environment.current("release", "0.0"))
    assert text.splitlines()[-3:] == summarize(result).lines()
    flat = _summary_suite({"dedupe_keys": 1.2, "content_keys": 1.5})
    assert summarize(flat).lines()[2] == (
        "rust time per item, 10^3 to 10^5 items: flat in all 2 passes (the linearity table above)"
    )


def test_the_summary_says_what_was_not_measured() -> None:
    from histcore.cli.bench.report import summarize

    result = _summary_suite({"dedupe_keys": 1.0}, backends=("python",))
    result.settings = Settings(sizes=(1000, 100_000), backends=("python",), reference=False)
    for case in result.cases:
        del case.timings["sdk"]
    lines = summarize(result).lines()
    assert lines[:2] == [
        "SDK/pure at 10^5 items: not measured (--no-reference)",
        "pure/rust at 10^5 items: not measured (--backend python)",
    ]
    assert lines[2].startswith("pure time per item, 10^3 to 10^5 items: flat in all 1 passes")


def test_ctrl_c_in_a_run_is_one_line_and_exit_130(
    capsys: pytest.CaptureFixture[str],
    release_engine: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*_: object, **__: object) -> SuiteResult:
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "run_suite", interrupted)
    code, out, err = run_cli(capsys, "bench", *TINY)
    assert code == 130
    assert (out, err) == ("", "histcore bench: interrupted\n")


def test_the_shipped_bench_speaks_of_no_internal_target(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace
) -> None:
    """Targets, floors and verdicts live in benches/targets.py, not in the command."""
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    help_text = capsys.readouterr().out
    code, out, err = run_cli(capsys, "bench", *TINY, "--functions", "dedupe_keys,content_keys")
    assert code == 0, err
    for text in (help_text, out, err):
        for word in ("target", "missed", "floor"):
            assert word not in text.lower()
        assert "MISS" not in text
    code, _, err = run_exits(capsys, "bench", "--targets")
    assert code == 2
    assert "unrecognized arguments: --targets" in err


def test_bench_writes_json_with_every_field(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace, tmp_path: Path
) -> None:
    path = tmp_path / "bench.json"
    code, _, err = run_cli(capsys, "bench", *TINY, "--sizes", "100,200", "--json", str(path))
    assert code == 0, err
    assert f"wrote {path}" in err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "histcore-bench/2"
    assert data["debug_build"] is False
    environment = data["environment"]
    assert environment["machine"]["cores"] == os.cpu_count()
    assert environment["machine"]["platform"] and environment["machine"]["cpu"]  # noqa: PT018
    assert environment["histcore"] == __version__
    assert environment["build_profile"] == "release"
    assert environment["python"] == sys.version.split()[0]
    assert environment["date"].endswith("Z")
    assert environment["git_commit"] is None or len(environment["git_commit"]) == 40
    assert "target_size" not in data["settings"]
    settings = data["settings"]
    assert settings["sizes"] == [100, 200]
    assert settings["backends"] == ["rust", "python"]
    assert settings["functions"] == list(OPERATIONS)
    cases = {(case["function"], case["shape"], case["size"]): case for case in data["cases"]}
    assert set(cases) == {(name, shape, size) for name, shape in ALL_CASES for size in (100, 200)}
    for case in cases.values():
        assert {"rust", "python"} <= set(case["timings"])
        for timing in case["timings"].values():
            assert timing["median_s"] > 0
            assert timing["loops"] >= 1
            assert len(timing["samples_s"]) >= 1
            assert timing["ns_per_item"] == pytest.approx(timing["median_s"] / case["size"] * 1e9)
        assert "target" not in case
        # The operation's baselines over the case's items (the bare loop, orjson for
        # content_keys) are sampled in the same rounds as the engines.
        assert set(case["baselines"]) == set(OPERATIONS[case["function"]].baselines)
        assert all(b["median_s"] > 0 for b in case["baselines"].values())
        if OPERATIONS[case["function"]].reference is None:
            assert "sdk" not in case["timings"]
            assert case["sdk_over_rust"] is None
        elif environment["openai_agents"] is not None:
            assert case["sdk_over_rust"] == pytest.approx(
                case["timings"]["sdk"]["median_s"] / case["timings"]["rust"]["median_s"]
            )
    baselines = {(b["name"], b["size"]) for b in data["baselines"]}
    assert baselines == {(name, size) for name in BASELINES for size in (100, 200)}
    # Sizes below 10^3 say nothing about growth, so no linearity rows.
    assert data["linearity"] == []


def test_bench_runs_the_real_engine_selected_by_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Unfaked: the pure twin always; the Rust engine too when it is built."""
    rust = engine.load_rust_engine()
    backend = ["--backend", "python"] if rust is None else ["--allow-debug"]
    code, out, err = run_cli(
        capsys, "bench", *TINY, "--functions", "dedupe_keys,content_keys", *backend
    )
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith(("dedupe", "content"))]
    assert [row[0] for row in rows] == ["dedupe_keys", "content_keys"]
    for row in rows:
        assert row[2] == "-" if rust is None else row[2] != "-"  # the rust column


def test_no_reference_leaves_the_sdk_out(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace, tmp_path: Path
) -> None:
    path = tmp_path / "out.json"
    code, _out, err = run_cli(
        capsys,
        "bench",
        *TINY,
        "--functions",
        "deduplicate_input_items",
        "--no-reference",
        "--json",
        str(path),
    )
    assert code == 0, err
    assert "SDK " not in err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [set(case["timings"]) for case in data["cases"]] == [{"rust", "python"}]
    assert data["cases"][0]["sdk_over_rust"] is None


def test_python_backend_needs_no_build(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "load_rust_engine", lambda: None)
    code, out, err = run_cli(
        capsys, "bench", *TINY, "--functions", "deep_copy_items", "--backend", "python"
    )
    assert code == 0, err
    assert "rust engine build: not timed" in out
    assert "SDK/pure" in out
    assert "pure/rust at 200 items: not measured (--backend python)" in out


# --- refusals -------------------------------------------------------------------------


def test_refuses_to_time_a_debug_build(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "load_rust_engine", lambda: fake_engine("debug"))
    code, out, err = run_cli(capsys, "bench", *TINY)
    assert code == 2
    assert "refusing to time a debug build" in err
    assert "--allow-debug" in err
    assert out == ""


def test_allow_debug_runs_and_labels_the_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(command, "load_rust_engine", lambda: fake_engine("debug"))
    path = tmp_path / "debug.json"
    code, out, err = run_cli(
        capsys,
        "bench",
        *TINY,
        "--functions",
        "dedupe_keys",
        "--allow-debug",
        "--json",
        str(path),
    )
    assert code == 0, err
    assert "DEBUG BUILD" in out
    assert "meaningless" in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["debug_build"] is True
    assert data["environment"]["build_profile"] == "debug"


def test_refuses_when_the_rust_engine_is_not_built(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "load_rust_engine", lambda: None)
    code, _, err = run_cli(capsys, "bench", *TINY)
    assert code == 2
    assert "not built" in err
    assert "--backend python" in err


def test_a_wrong_result_stops_the_run_before_it_is_timed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def reversed_dedupe(items: list[Any]) -> list[Any]:
        return _pure.deduplicate_input_items(items)[::-1]

    broken = fake_engine("release", deduplicate_input_items=reversed_dedupe)
    monkeypatch.setattr(command, "load_rust_engine", lambda: broken)
    path = tmp_path / "never.json"
    code, out, err = run_cli(
        capsys,
        "bench",
        *TINY,
        "--functions",
        "deduplicate_input_items",
        "--json",
        str(path),
    )
    assert code == 1
    assert "deduplicate_input_items (rust, history, 200 items) disagrees" in err
    assert "position 0" in err
    assert not path.exists()
    assert out == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sizes", "abc"], "invalid size 'abc'"),
        (["--sizes", "5"], "between 10 and"),
        (["--sizes", "1e99"], "between 10 and"),
        (["--sizes", "1.25e1"], "invalid size '1.25e1'"),
        (["--sizes", ","], "at least one size"),
        (["--functions", "dedupe_keys,nope"], "unknown function(s) 'nope'"),
        (["--repeat", "0"], "must be at least 1"),
        (["--repeat", "x"], "invalid repeat 'x'"),
        (["--backend", "gpu"], "invalid choice: 'gpu'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run_exits(capsys, "bench", *argv)
    assert code == 2
    assert message in err
    assert "usage: histcore" in err


def test_a_json_path_in_a_missing_directory_is_refused_before_running(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace, tmp_path: Path
) -> None:
    target = tmp_path / "missing" / "out.json"
    code, out, err = run_cli(capsys, "bench", *TINY, "--json", str(target))
    assert code == 2
    assert "does not exist" in err
    assert out == ""
    assert "[1/" not in err


# --- --plot ------------------------------------------------------------------------------


PLOT_RUN = ["--sizes", "10,100", "--functions", "dedupe_keys", "--repeat", "1"]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_draws_time_against_size(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / f"bench{suffix}"
    backend = ["--backend", "python"] if engine.load_rust_engine() is None else ["--allow-debug"]
    code, _, err = run_cli(capsys, "bench", *PLOT_RUN, *backend, "--plot", str(path))
    assert code == 0, err
    assert f"wrote {path}" in err
    data = path.read_bytes()
    assert len(data) > 5_000
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        from xml.etree import ElementTree

        root = ElementTree.fromstring(data)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert b"dedupe_keys" in data


def test_plot_draws_from_the_json_documents(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from histcore.cli.bench import plot

    def timing(seconds: float) -> dict[str, Any]:
        return {"median_s": seconds, "samples_s": [seconds], "loops": 1}

    engine_doc = {
        "environment": {"histcore": __version__, "machine": {"cpu": "cpu", "cores": 2}},
        "cases": [
            {"function": "dedupe_keys", "shape": shape, "size": size, "timings": timings}
            for size in (1000, 10_000)
            for shape, timings in (
                ("history", {"rust": timing(size * 1e-8), "sdk": timing(size * 1e-6)}),
                ("reasoning_run", {"rust": timing(size * 1e-8)}),
            )
        ],
    }
    sdk_doc = {
        "turns": [
            {"size": size, "plain": timing(0.1), "installed": timing(0.01), "guarded": timing(0.02)}
            for size in (1000, 10_000)
        ],
        "first_turns": [{"size": 1000, "plain": timing(0.3), "installed": timing(0.2)}],
    }
    path = tmp_path / "both.svg"
    plot.draw(str(path), engine=engine_doc, sdk=sdk_doc)
    text = path.read_text(encoding="utf-8")
    for title in ("dedupe_keys", "SDK turn, in one process", "SDK turn, first of a fresh process"):
        assert title in text
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plot.draw(str(tmp_path / "out.pdf"), engine=engine_doc)
    with pytest.raises(ValueError, match="nothing to draw"):
        plot.draw(str(tmp_path / "out.png"))


def _y_tick_labels(axes: Any) -> list[str]:
    """The y tick labels shown inside the axes' range, bottom to top."""
    low, high = axes.get_ylim()
    return [
        label.get_text()
        for label in sorted(axes.get_yticklabels(which="both"), key=lambda t: t.get_position()[1])
        if label.get_text() and low <= label.get_position()[1] <= high
    ]


def test_the_plot_labels_times_in_seconds_and_milliseconds() -> None:
    """Not 6x10^-1 and 4x10^0: a turn of 0.55 s to 4.2 s reads 600 ms ... 4 s."""
    pytest.importorskip("matplotlib")
    from histcore.cli.bench import plot

    def timing(seconds: float) -> dict[str, Any]:
        return {"median_s": seconds, "samples_s": [seconds], "loops": 1}

    sdk_doc = {
        "turns": [
            {"size": 1000, "plain": timing(0.55), "installed": timing(0.7)},
            {"size": 10_000, "plain": timing(4.2), "installed": timing(1.1)},
        ]
    }
    engine_doc = {
        "cases": [
            {"function": "dedupe_keys", "shape": "history", "size": size, "timings": timings}
            for size, timings in (
                (1000, {"rust": timing(2e-5), "sdk": timing(4e-4)}),
                (100_000, {"rust": timing(3e-3), "sdk": timing(0.05)}),
            )
        ]
    }
    drawn = plot.figure(engine=engine_doc, sdk=sdk_doc)
    drawn.canvas.draw()  # tick labels are chosen when the figure is drawn
    engine_axes, turn_axes = (axes for axes in drawn.axes if axes.get_visible())
    assert _y_tick_labels(engine_axes) == ["100 us", "1 ms", "10 ms"]
    assert _y_tick_labels(turn_axes) == ["600 ms", "1 s", "2 s", "3 s", "4 s"]
    assert turn_axes.get_ylabel() == "median time"


def test_plot_suffix_must_be_png_or_svg(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_exits(capsys, "bench", "--plot", "out.pdf")
    assert code == 2
    assert "usage: histcore" in err
    assert "invalid plot path 'out.pdf': the file name must end in .png or .svg" in err


def test_plot_without_matplotlib_fails_before_timing(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    release_engine: SimpleNamespace,
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    code, out, err = run_cli(capsys, "bench", *TINY, "--plot", str(tmp_path / "out.png"))
    assert code == 2
    assert err == "histcore bench: error: --plot needs matplotlib: pip install 'histcore[plot]'\n"
    assert out == ""


def test_a_plot_path_in_a_missing_directory_is_refused_before_running(
    capsys: pytest.CaptureFixture[str], release_engine: SimpleNamespace, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    code, out, err = run_cli(capsys, "bench", *TINY, "--plot", str(tmp_path / "no" / "a.svg"))
    assert code == 2
    assert "--plot: directory" in err
    assert "does not exist" in err
    assert "[1/" not in err
    assert out == ""


@pytest.mark.parametrize(
    ("text", "size"), [("1000", 1000), ("10_000", 10_000), ("1e5", 100_000), ("10^3", 1000)]
)
def test_size_spellings(text: str, size: int) -> None:
    assert command._sizes(text) == (size,)


# --- verdicts ---------------------------------------------------------------------------


def timing(seconds: float) -> Timing:
    return Timing(median=seconds, samples=(seconds,), loops=1)


def suite(cases: list[CaseResult], baselines: list[BaselineResult]) -> SuiteResult:
    return SuiteResult(Settings(sizes=(1000, 100_000)), "0.0", cases, baselines)


def test_linearity_compares_time_per_item_across_sizes() -> None:
    cases = [
        CaseResult("dedupe_keys", "history", 100, {"rust": timing(1.0)}),  # ignored: < 10^3
        CaseResult("dedupe_keys", "history", 1000, {"rust": timing(0.001)}),
        CaseResult("dedupe_keys", "history", 100_000, {"rust": timing(0.15)}),
        CaseResult("content_keys", "history", 1000, {"rust": timing(0.001)}),
        CaseResult("content_keys", "history", 100_000, {"rust": timing(0.25)}),
    ]
    rows = {row.operation: row for row in linearity(suite(cases, []))}
    assert rows["dedupe_keys"].ns_per_item == {1000: 1000.0, 100_000: 1500.0}
    assert rows["dedupe_keys"].linear
    assert rows["content_keys"].spread == pytest.approx(2.5)
    assert not rows["content_keys"].linear
    assert rows["content_keys"].verdict() == "NOT LINEAR"
    text = render(suite(cases, []), Environment.current("release", "0.0"))
    assert "NOT LINEAR" in text
    assert "linear" in text


def test_growth_the_bare_loop_shares_is_divided_out() -> None:
    def case(name: str, size: int, seconds: float, floor: float) -> CaseResult:
        return CaseResult(
            name, "history", size, {"rust": timing(seconds)}, baselines={"bare_loop": timing(floor)}
        )

    # Memory makes even the bare loop 2.5x slower per item at the larger size.
    cases = [
        case("deep_copy_items", 1000, 0.001, 0.0001),
        case("deep_copy_items", 100_000, 0.3, 0.025),
        case("content_keys", 1000, 0.001, 0.0001),
        case("content_keys", 100_000, 0.9, 0.025),
    ]
    baselines = [
        BaselineResult("bare_loop", 1000, timing(0.0001)),
        BaselineResult("bare_loop", 100_000, timing(0.025)),
    ]
    result = suite(cases, baselines)
    rows = {(row.operation, row.implementation): row for row in linearity(result)}
    copy = rows[("deep_copy_items", "rust")]
    assert copy.spread == pytest.approx(3.0)
    assert copy.spread_vs_bare_loop == pytest.approx(1.2)
    assert copy.verdict() == "linear vs bare loop"
    keys = rows[("content_keys", "rust")]
    assert keys.spread_vs_bare_loop == pytest.approx(3.6)
    assert keys.verdict() == "NOT LINEAR"
    floor = rows[("bare_loop", "baseline")]
    assert floor.spread == pytest.approx(2.5)
    assert floor.verdict() == "-"
    text = render(result, Environment.current("release", "0.0"))
    assert "linear vs bare loop" in text
    assert "vs bare loop" in text


def test_report_numbers_skipped_reference_footnotes_once() -> None:
    note = "SDK not run above 1000 items on reasoning_run: its helper is quadratic there"
    cases = [
        CaseResult("drop_orphan_function_calls", shape, 10_000, {"rust": timing(0.01)}, [note])
        for shape in ("reasoning_run", "reasoning_run")
    ]
    text = render(suite(cases, []), Environment.current("release", "0.0"))
    assert text.count("skipped[1]") == 2
    assert text.count(note) == 1


def test_a_function_without_an_sdk_helper_says_so_at_every_size() -> None:
    pytest.importorskip("agents")
    settings = Settings(
        sizes=(10, 100),
        operations=("input_problems",),
        backends=("python",),
        repeat=1,
    )
    result = engine.run_suite(settings)
    assert result.cases
    for case in result.cases:
        assert "sdk" not in case.timings
        assert case.notes == ["the SDK has no such helper"]
    text = render(result, Environment.current("release", "0.0"))
    assert "quadratic" not in text


# --- entry points ---------------------------------------------------------------------------


def test_python_dash_m_runs_the_same_command_line() -> None:
    env = dict(os.environ)
    # The directory holding the histcore package this test imported, so the child
    # process runs the same code (a checkout or an installed wheel).
    package_root = str(Path(command.__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "histcore", "bench", "--sizes", "abc"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid size 'abc'" in done.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "histcore", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0
    assert "bench" in shown.stdout


def test_default_report_fits_120_columns_at_the_default_sizes() -> None:
    sizes = (1000, 10_000, 100_000)
    cases = [
        CaseResult(
            name,
            shape,
            size,
            {
                "rust": timing(size * 3e-7),
                "python": timing(size * 3e-5),
                "sdk": timing(size * 8e-5),
            },
            baselines={"bare_loop": timing(size * 2e-7)},
        )
        for name, operation in OPERATIONS.items()
        for shape in operation.shapes
        for size in sizes
    ]
    baselines = [
        BaselineResult(name, size, timing(size * 1e-5)) for name in BASELINES for size in sizes
    ]
    result = SuiteResult(Settings(sizes=sizes), "0.0", cases, baselines)
    text = render(result, Environment.current("release", "0.0"))
    assert "linearity" in text
    assert "[pending]" in text
    assert "target" not in text
    assert "MISS" not in text
    assert max(map(len, text.splitlines())) <= 120
