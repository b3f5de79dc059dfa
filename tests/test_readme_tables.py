"""scripts/readme_tables.py: the README's benchmark tables are what the committed JSON
under benches/results/ renders, a changed number is caught, and a file of an unknown
format stops the script with a clear error. Nothing here times anything."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "readme_tables.py"
RESULTS = ROOT / "benches" / "results"
BLOCKS = ("engine", "engine-sizes", "openai-agents")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_readme_matches_the_committed_results() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_table_has_its_markers_and_a_stamp() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in BLOCKS:
        block = re.search(
            rf"<!-- bench:{name}:start -->\n(.*?)<!-- bench:{name}:end -->", readme, re.S
        )
        assert block is not None, name
        assert "`histcore bench " in block[1], name
        assert "|---|" in block[1], name


def test_a_changed_number_fails_the_check(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- bench:engine:start -->")
    number = re.compile(r"\| (\d+(?:\.\d+)?) ms \|")
    found = number.search(readme, start)
    assert found is not None
    changed = f"{float(found[1]) + 1:g}"
    doctored = readme[: found.start(1)] + changed + readme[found.end(1) :]
    copy = tmp_path / "README.md"
    copy.write_text(doctored, encoding="utf-8")
    result = _run("--check", "--readme", copy)
    assert result.returncode == 1, result.stdout + result.stderr
    diff = result.stdout.splitlines()
    assert any(line.startswith("-") and f"| {changed} ms |" in line for line in diff), diff
    assert any(line.startswith("+") and found[0] in line for line in diff), diff
    assert "python scripts/readme_tables.py" in result.stderr
    assert copy.read_text(encoding="utf-8") == doctored  # --check writes nothing


def test_an_unknown_format_is_a_clear_error(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    engine = json.loads((results / "engine.json").read_text(encoding="utf-8"))
    engine["format"] = "histcore-bench/999"
    (results / "engine.json").write_text(json.dumps(engine), encoding="utf-8")
    result = _run("--check", "--results", results)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "unknown format 'histcore-bench/999'" in result.stderr
    assert "engine.json" in result.stderr


def test_a_missing_marker_is_a_clear_error(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    copy = tmp_path / "README.md"
    copy.write_text(readme.replace("<!-- bench:engine-sizes:end -->", ""), encoding="utf-8")
    result = _run("--check", "--readme", copy)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "bench:engine-sizes:end" in result.stderr


def test_the_sdk_stamp_gives_the_sizes_and_rounds_the_file_records(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    sdk = json.loads((results / "openai-agents.json").read_text(encoding="utf-8"))
    sdk["settings"] = {"sizes": [1000, 20000], "repeat": 7}
    (results / "openai-agents.json").write_text(json.dumps(sdk), encoding="utf-8")
    readme = tmp_path / "README.md"
    shutil.copyfile(ROOT / "README.md", readme)
    result = _run("--readme", readme, "--results", results, "--picture", tmp_path / "b.svg")
    assert result.returncode == 0, result.stdout + result.stderr
    text = readme.read_text(encoding="utf-8")
    assert "`histcore bench --openai-agents --sizes 1000,20000 --repeat 7 --json " in text
