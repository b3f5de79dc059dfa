"""The README's Python examples run as written (each in a fresh interpreter), and print
the same output every time they run: an example that kept state between runs (a
database file left in the working directory, say) would print something else the
second time a reader ran it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import histcore

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3


def _run(code: str, cwd: Path) -> str:
    """The example's standard output; it must exit cleanly."""
    # The interpreter must import the histcore under test, wherever it is installed.
    env = {**os.environ, "PYTHONPATH": str(Path(histcore.__file__).resolve().parent.parent)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs_and_prints_the_same_every_time(index: int, tmp_path: Path) -> None:
    code = BLOCKS[index]
    if "openai_agents" in code:
        pytest.importorskip("agents", reason="the drop-in example needs openai-agents")
        code += "\nhistcore.openai_agents.uninstall()\n"
    first = _run(code, tmp_path)
    second = _run(code, tmp_path)  # same working directory, as a reader's second run
    assert second == first, f"the second run printed {second!r}, the first {first!r}"
    assert sorted(path.name for path in tmp_path.iterdir()) == [], (
        "the example leaves files in the working directory"
    )
