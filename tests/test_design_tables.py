"""scripts/design_tables.py: docs/design.md's table of the drop-in's patches is what the
table module (``histcore.openai_agents._table``) renders, a hand edit is caught, and
every SDK name ``install(guard=True)`` reports replacing is in it."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "design_tables.py"
DESIGN = ROOT / "docs" / "design.md"


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _documented_names(text: str) -> set[str]:
    """``module.name`` of every row of the generated table, and of every module it is
    listed as also rebound in."""
    block = re.search(r"<!-- table:patches:start -->\n(.*?)<!-- table:patches:end -->", text, re.S)
    assert block is not None
    names: set[str] = set()
    for line in block[1].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[2].startswith("`"):
            continue
        module, name = cells[2].strip("`"), cells[3].strip("`")
        names.add(f"{module}.{name}")
        names.update(f"{also}.{name}" for also in re.findall(r"`([\w.]+)`", cells[4]))
    return names


def test_the_design_doc_matches_the_table() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_name_the_guarded_install_replaces_is_documented() -> None:
    pytest.importorskip("agents", reason="openai-agents is not installed")
    import histcore.openai_agents as accelerator

    accelerator.uninstall()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            installation = accelerator.install(guard=True)
        replaced = set(installation.replaced)
    finally:
        accelerator.uninstall()
    assert installation.guard is not None
    assert not installation.skipped
    missing = replaced - _documented_names(DESIGN.read_text(encoding="utf-8"))
    assert not missing, f"replaced but not in docs/design.md's table: {sorted(missing)}"


def test_a_hand_edit_fails_the_check(tmp_path: Path) -> None:
    text = DESIGN.read_text(encoding="utf-8")
    row = "| `agents.run_internal.run_loop` | `maybe_filter_model_input` |"
    assert row in text
    copy = tmp_path / "design.md"
    doctored = text.replace(row, "| `agents.run_internal.run_loop` | `something_else` |")
    copy.write_text(doctored, encoding="utf-8")
    result = _run("--check", "--design", copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "python scripts/design_tables.py" in result.stderr
    assert any(line.startswith("+") and row in line for line in result.stdout.splitlines())
    assert copy.read_text(encoding="utf-8") == doctored  # --check writes nothing


def test_a_missing_marker_is_a_clear_error(tmp_path: Path) -> None:
    copy = tmp_path / "design.md"
    text = DESIGN.read_text(encoding="utf-8")
    copy.write_text(text.replace("<!-- table:patches:end -->", ""), encoding="utf-8")
    result = _run("--check", "--design", copy)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "table:patches:end" in result.stderr
