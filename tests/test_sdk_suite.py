"""scripts/sdk_suite/suite.py: what makes the SDK-suite comparison fail.

The comparison forgives nothing: a changed outcome fails unless the test is on the
flaky list (with its reason and evidence) or, in the guard run, the guard repaired a
model input during it; a replaced group that took its own path in no call, or that no
listed test reaches, fails too.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parent.parent
SUITE_FILE = REPO / "scripts" / "sdk_suite" / "suite.py"


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location("histcore_sdk_suite", SUITE_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- outcomes ----------------------------------------------------------------------


def test_the_same_outcomes_pass(suite: ModuleType, tmp_path: Path) -> None:
    outcomes = {"tests/a.py::t1": "passed", "tests/a.py::t2": "failed"}
    plain = write_json(tmp_path / "plain.json", outcomes)
    other = write_json(tmp_path / "installed.json", outcomes)
    assert suite.compare(plain, other, "installed", tmp_path / "none.txt") == 0


def test_any_changed_outcome_fails(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = write_json(tmp_path / "plain.json", {"tests/a.py::t1": "passed"})
    for installed in ({"tests/a.py::t1": "failed"}, {}, {"tests/a.py::t1": "skipped"}):
        other = write_json(tmp_path / "installed.json", installed)
        assert suite.compare(plain, other, "installed", tmp_path / "none.txt") == 1
    assert "tests/a.py::t1: passed -> skipped  [FAIL]" in capsys.readouterr().out


def test_nothing_compared_fails(suite: ModuleType, tmp_path: Path) -> None:
    empty = write_json(tmp_path / "plain.json", {})
    assert suite.compare(empty, empty, "installed", tmp_path / "none.txt") == 1


def test_a_listed_flaky_test_is_forgiven_and_said(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flaky = tmp_path / "flaky.txt"
    flaky.write_text(
        "# comment\ntests/a.py::t1 | reason: races a timer | evidence: plain 0.24.0 "
        "failed then passed\n",
        encoding="utf-8",
    )
    plain = write_json(
        tmp_path / "plain.json", {"tests/a.py::t1": "passed", "tests/a.py::t2": "passed"}
    )
    other = write_json(
        tmp_path / "other.json", {"tests/a.py::t1": "failed", "tests/a.py::t2": "passed"}
    )
    assert suite.compare(plain, other, "installed", flaky) == 0
    assert "forgiven: listed flaky, races a timer" in capsys.readouterr().out
    # Only that test: another change still fails.
    other = write_json(
        tmp_path / "other.json", {"tests/a.py::t1": "passed", "tests/a.py::t2": "failed"}
    )
    assert suite.compare(plain, other, "installed", flaky) == 1


@pytest.mark.parametrize(
    "line",
    [
        "tests/a.py::t1",
        "tests/a.py::t1 | reason: races a timer",
        "tests/a.py::t1 | reason: | evidence: seen",
        "tests/a.py::t1 | reason: races | evidence:",
        "tests/a.py | reason: a whole file | evidence: seen",
    ],
)
def test_a_flaky_entry_needs_a_test_id_a_reason_and_evidence(
    suite: ModuleType, tmp_path: Path, line: str
) -> None:
    flaky = tmp_path / "flaky.txt"
    flaky.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        suite.read_flaky(flaky)


def test_the_shipped_flaky_list_reads(suite: ModuleType) -> None:
    for nodeid, why in suite.read_flaky(suite.FLAKY).items():
        assert "::" in nodeid
        assert why


def test_the_guard_run_accepts_a_change_only_where_it_repaired(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = write_json(
        tmp_path / "plain.json", {"tests/a.py::t1": "failed", "tests/a.py::t2": "passed"}
    )
    guard = write_json(
        tmp_path / "guard.json", {"tests/a.py::t1": "passed", "tests/a.py::t2": "passed"}
    )
    repairs = write_json(
        tmp_path / "repairs.json",
        {"tests/a.py::t1": {"repaired": 1, "dropped": 2, "rules": {"call_without_output": 1}}},
    )
    none = tmp_path / "none.txt"
    assert suite.compare(plain, guard, "guard", none, [repairs]) == 0
    out = capsys.readouterr().out
    assert "accepted: the guard repaired 1 input(s) (call_without_output x1)" in out
    # A change in a test the guard did not repair fails.
    guard = write_json(
        tmp_path / "guard.json", {"tests/a.py::t1": "passed", "tests/a.py::t2": "failed"}
    )
    assert suite.compare(plain, guard, "guard", none, [repairs]) == 1
    # Without the repairs (any run but the guard's), the same change fails.
    guard = write_json(
        tmp_path / "guard.json", {"tests/a.py::t1": "passed", "tests/a.py::t2": "passed"}
    )
    assert suite.compare(plain, guard, "installed", none) == 1


# --- lists and paths ---------------------------------------------------------------


def write_list(directory: Path, version: str, lines: list[str]) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / f"{version}.txt"
    path.write_text("# header\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_write_list_keeps_the_groups_each_test_reached(suite: ModuleType, tmp_path: Path) -> None:
    traces = [tmp_path / "trace.txt.gw0", tmp_path / "trace.txt.gw1"]
    traces[0].write_text("tests/a.py::t1\tdedupe\ntests/b.py::t2\tfingerprint\n")
    traces[1].write_text("tests/a.py::t1\torphans\n")
    lists = tmp_path / "lists"
    assert suite.write_list(lists, "9.9.9", traces) == 0
    entries = dict(suite._entries(lists / "9.9.9.txt"))
    assert entries == {
        "tests/a.py::t1": frozenset({"dedupe", "orphans"}),
        "tests/b.py::t2": frozenset({"fingerprint"}),
    }
    # The selection reads the ids alone.
    assert suite._read_list(lists / "9.9.9.txt") == ["tests/a.py::t1", "tests/b.py::t2"]


def test_write_list_over_some_paths_keeps_the_other_entries(
    suite: ModuleType, tmp_path: Path
) -> None:
    lists = tmp_path / "lists"
    write_list(
        lists,
        "9.9.9",
        ["tests/a.py::t1\tdedupe", "tests/memory/m.py::gone\tdedupe", "tests/memory2.py::k\tx"],
    )
    trace = tmp_path / "trace.txt.gw0"
    trace.write_text("tests/memory/m.py::new\tsqlite_read\n")
    argv = ["write-list", str(lists), "9.9.9", "--paths", "tests/memory", str(trace)]
    assert suite.main(argv) == 0
    entries = dict(suite._entries(lists / "9.9.9.txt"))
    # Outside the traced path: kept (a file whose name only starts like it, too); inside:
    # what the trace found, the entry it no longer reached gone.
    assert entries == {
        "tests/a.py::t1": frozenset({"dedupe"}),
        "tests/memory2.py::k": frozenset({"x"}),
        "tests/memory/m.py::new": frozenset({"sqlite_read"}),
    }


def counts_dir(tmp_path: Path, installed: list[str], processes: list[dict[str, object]]) -> Path:
    directory = tmp_path / "counts"
    directory.mkdir()
    write_json(directory / "installation-1.json", {"pid": 1, "groups": installed})
    for number, groups in enumerate(processes):
        write_json(directory / f"dropin-counts-{number}.json", {"pid": number, "groups": groups})
    return directory


def test_paths_sum_the_processes_and_pass_when_every_group_took_its_own(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists = tmp_path / "lists"
    write_list(lists, "9.9.9", ["tests/a.py::t1\tdedupe,fingerprint"])
    directory = counts_dir(
        tmp_path,
        ["dedupe", "fingerprint"],
        [
            {"dedupe": {"_dedupe_key": [3, 3]}, "fingerprint": {"fingerprint_input_item": [0, 0]}},
            {"dedupe": {"_dedupe_key": [2, 1]}, "fingerprint": {"fingerprint_input_item": [4, 4]}},
            {"fingerprint": {"fingerprint_input_item": [1, 0]}},
        ],
    )
    # Through the command line scripts/sdk-suite.sh calls.
    assert suite.main(["paths", str(lists), "9.9.9", str(directory)]) == 0
    out = capsys.readouterr().out
    assert "3 process(es)" in out
    assert "dedupe" in out


def test_a_group_that_only_fell_back_fails(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists = tmp_path / "lists"
    write_list(lists, "9.9.9", ["tests/a.py::t1\tdedupe,fingerprint"])
    directory = counts_dir(
        tmp_path,
        ["dedupe", "fingerprint"],
        [{"dedupe": {"_dedupe_key": [5, 5]}, "fingerprint": {"fingerprint_input_item": [1, 0]}}],
    )
    assert suite.paths(lists, "9.9.9", directory) == 1
    assert "FAIL: no call took histcore's path" in capsys.readouterr().out


def test_an_installed_group_with_no_counts_at_all_fails(suite: ModuleType, tmp_path: Path) -> None:
    lists = tmp_path / "lists"
    write_list(lists, "9.9.9", ["tests/a.py::t1\tdedupe,turn_input"])
    directory = counts_dir(tmp_path, ["dedupe", "turn_input"], [{"dedupe": {"k": [1, 0]}}])
    assert suite.paths(lists, "9.9.9", directory) == 1


def test_a_group_no_listed_test_reaches_fails(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lists = tmp_path / "lists"
    # A list traced before the group existed (or with no groups at all).
    write_list(lists, "9.9.9", ["tests/a.py::t1\tdedupe", "tests/b.py::t2"])
    directory = counts_dir(
        tmp_path,
        ["dedupe", "session_read"],
        [{"dedupe": {"k": [1, 0]}, "session_read": {"get_items": [1, 0]}}],
    )
    assert suite.paths(lists, "9.9.9", directory) == 1
    assert "FAIL: no test of 9.9.9.txt traced" in capsys.readouterr().out


def test_no_recorded_installation_fails(suite: ModuleType, tmp_path: Path) -> None:
    lists = tmp_path / "lists"
    write_list(lists, "9.9.9", ["tests/a.py::t1\tdedupe"])
    (tmp_path / "counts").mkdir()
    assert suite.paths(lists, "9.9.9", tmp_path / "counts") == 1


def test_every_shipped_list_traces_every_group(suite: ModuleType) -> None:
    from histcore.openai_agents import _table

    for path in sorted((REPO / "scripts" / "sdk_suite" / "lists").glob("*.txt")):
        traced = {group for _, groups in suite._entries(path) for group in groups}
        missing = {group.name for group in _table.GROUPS} - traced
        assert not missing, f"{path.name}: no test traced for {sorted(missing)}"


# --- the pytest plugin -------------------------------------------------------------

PLUGIN_DIR = REPO / "scripts" / "sdk_suite"

FAKE_SDK_TESTS = """
import agents.run_internal.items as items


def test_reaches_dedupe():
    assert items.deduplicate_input_items([{"type": "message", "id": "m", "role": "user"}])


def test_reaches_nothing():
    assert True


def test_fails():
    assert False
"""


def pytest_in(
    directory: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest with the plugin over ``test_fake.py`` in ``directory``, in a process of its own."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTEST_XDIST_WORKER", "HISTCORE_DROPIN_COUNTS", "PYTEST_ADDOPTS")
    }
    environment.update({"PYTHONPATH": str(PLUGIN_DIR), **(env or {})})
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "histcore_sdk_plugin",
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.run(
        [*command, "-q", "--no-header", *options, "test_fake.py"],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run_plugin(directory: Path, *options: str, env: dict[str, str] | None = None) -> str:
    done = pytest_in(directory, *options, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture
def fake_sdk(tmp_path: Path) -> Path:
    pytest.importorskip("agents")
    (tmp_path / "test_fake.py").write_text(FAKE_SDK_TESTS, encoding="utf-8")
    return tmp_path


def test_the_installed_run_counts_histcore_s_paths_per_process(fake_sdk: Path) -> None:
    counts = fake_sdk / "counts"
    output = run_plugin(
        fake_sdk,
        "--histcore-install",
        f"--histcore-outcomes={fake_sdk / 'out.json'}",
        env={"HISTCORE_DROPIN_COUNTS": str(counts)},
    )
    assert "histcore_sdk_plugin: install() replaced" in output
    outcomes = json.loads((fake_sdk / "out.json").read_text())
    assert outcomes == {
        "test_fake.py::test_fails": "failed",
        "test_fake.py::test_reaches_dedupe": "passed",
        "test_fake.py::test_reaches_nothing": "passed",
    }
    (installation,) = counts.glob("installation-*.json")
    from histcore.openai_agents import _table

    assert json.loads(installation.read_text())["groups"] == [g.name for g in _table.GROUPS]
    (written,) = counts.glob("dropin-counts-*.json")
    groups = json.loads(written.read_text())["groups"]
    assert groups["dedupe"]["deduplicate_input_items"] == [1, 0]


def test_the_trace_names_each_test_s_groups(fake_sdk: Path) -> None:
    trace = fake_sdk / "trace.txt"
    run_plugin(fake_sdk, f"--histcore-trace={trace}")
    assert trace.read_text() == "test_fake.py::test_reaches_dedupe\tdedupe\n"


def test_the_guard_run_refuses_repairs_without_the_guard(fake_sdk: Path) -> None:
    done = pytest_in(fake_sdk, "--histcore-install", "--histcore-repairs=x.json")
    assert done.returncode == 4
    assert "--histcore-repairs needs --histcore-guard" in done.stderr


def test_repairs_are_noted_per_test_with_the_rules_that_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plugin names its file after the xdist worker it runs in: not one here.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        plugin = importlib.import_module("histcore_sdk_plugin")
    finally:
        sys.path.remove(str(PLUGIN_DIR))
    counts = SimpleNamespace(repaired=2, dropped=3, rules=Counter({"duplicate_id": 3}))
    repairs = plugin._Repairs(str(tmp_path / "repairs.json"), counts)

    def run(nodeid: str, repaired: int, dropped: int, rules: dict[str, int]) -> None:
        protocol = repairs.pytest_runtest_protocol(SimpleNamespace(nodeid=nodeid))
        next(protocol)
        counts.repaired += repaired
        counts.dropped += dropped
        counts.rules.update(rules)
        with pytest.raises(StopIteration):
            next(protocol)

    run("t.py::clean", 0, 0, {})
    run("t.py::repaired", 1, 2, {"call_without_output": 1, "duplicate_id": 1})
    repairs.pytest_sessionfinish(None)
    assert json.loads((tmp_path / "repairs.json").read_text()) == {
        "t.py::repaired": {
            "repaired": 1,
            "dropped": 2,
            "rules": {"call_without_output": 1, "duplicate_id": 1},
        }
    }


# --- the kept plain outcomes ---------------------------------------------------------


def test_against_kept_outcomes_only_the_selection_is_compared(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = write_json(
        tmp_path / "kept.json",
        {"tests/a.py::t1": "passed", "tests/a.py::t2": "failed", "tests/b.py::t3": "passed"},
    )
    selection = tmp_path / "selection.txt"
    selection.write_text("tests/a.py::t1\ntests/b.py\n", encoding="utf-8")
    ran = write_json(
        tmp_path / "run.json", {"tests/a.py::t1": "passed", "tests/b.py::t3": "passed"}
    )
    assert (
        suite.compare(kept, ran, "installed", tmp_path / "none.txt", None, "kept", selection) == 0
    )
    assert "kept:" in capsys.readouterr().out
    # A selected test that did not run, or one the kept outcomes lack, is a change.
    missing = write_json(tmp_path / "missing.json", {"tests/a.py::t1": "passed"})
    assert (
        suite.compare(kept, missing, "installed", tmp_path / "none.txt", None, "kept", selection)
        == 1
    )
    assert "tests/b.py::t3: passed -> absent  [FAIL]" in capsys.readouterr().out
    extra = write_json(
        tmp_path / "extra.json",
        {"tests/a.py::t1": "passed", "tests/b.py::t3": "passed", "tests/b.py::t4": "passed"},
    )
    assert (
        suite.compare(kept, extra, "installed", tmp_path / "none.txt", None, "kept", selection) == 1
    )
    assert "tests/b.py::t4: absent -> passed  [FAIL]" in capsys.readouterr().out


def test_write_expected_keeps_only_what_two_plain_runs_agree_on(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_json(tmp_path / "one.json", {"t.py::a": "passed", "t.py::b": "failed"})
    second = write_json(tmp_path / "two.json", {"t.py::a": "passed", "t.py::b": "passed"})
    target = tmp_path / "kept.json"
    assert suite.write_expected(target, first, second) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == {"t.py::a": "passed"}
    assert "left out, differs between two plain runs: t.py::b: failed / passed" in (
        capsys.readouterr().out
    )
    empty = write_json(tmp_path / "empty.json", {})
    with pytest.raises(SystemExit, match="empty expectations"):
        suite.write_expected(target, empty, second)


def test_whose_change_tells_histcore_s_from_a_stale_expectation(
    suite: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = write_json(
        tmp_path / "kept.json", {"t.py::a": "passed", "t.py::b": "passed", "t.py::c": "passed"}
    )
    run = write_json(
        tmp_path / "run.json", {"t.py::a": "failed", "t.py::b": "failed", "t.py::c": "failed"}
    )
    ids = tmp_path / "ids.txt"
    ids.write_text("t.py::b\n", encoding="utf-8")
    # Plain fails as the run did: the kept outcome is stale here, forgiven.
    again = write_json(tmp_path / "again.json", {"t.py::a": "passed", "t.py::b": "failed"})
    assert suite.whose(kept, run, again, ids) == 0
    assert "t.py::b: kept passed, the run failed, plain again failed: not histcore's" in (
        capsys.readouterr().out
    )
    # Plain passes as kept: histcore's change, which fails.
    ids.write_text("t.py::a\nt.py::b\n", encoding="utf-8")
    assert suite.whose(kept, run, again, ids) == 1
    assert "t.py::a: kept passed, the run failed, plain again passed: FAIL: histcore's" in (
        capsys.readouterr().out
    )
    # A test plain did not run again is undecided, which fails too.
    ids.write_text("t.py::c\n", encoding="utf-8")
    assert suite.whose(kept, run, again, ids) == 1
    assert "FAIL: undecided" in capsys.readouterr().out


def test_every_kept_outcome_file_is_an_outcome_map(suite: ModuleType) -> None:
    kept = sorted((REPO / "scripts" / "sdk_suite" / "expected").glob("*.json"))
    assert kept, "no kept plain outcomes: scripts/sdk-suite.sh --write-expected VERSION"
    for path in kept:
        outcomes = suite._load(path)
        assert outcomes, path.name
        assert set(outcomes.values()) <= set(suite.OUTCOMES), path.name


# --- CPython 3.11's AST-depth bug -------------------------------------------------------


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info[:3] < (3, 11, 8),
    reason="only CPython 3.11.0-3.11.7 keeps one AST depth counter (gh-106905)",
)
def test_the_plugin_draws_no_carets_where_cpython_miscounts_ast_depth(tmp_path: Path) -> None:
    import traceback

    # Without the plugin, a subscript's carets are drawn by parsing it.
    assert traceback._extract_caret_anchors_from_line_segment("a[b]") is not None  # type: ignore[attr-defined]
    (tmp_path / "test_fake.py").write_text(
        "import traceback\n"
        "def test_carets():\n"
        "    assert traceback._extract_caret_anchors_from_line_segment('a[b]') is None\n",
        encoding="utf-8",
    )
    done = pytest_in(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
