"""The README's Python examples run as written (each in a fresh interpreter)."""

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


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, tmp_path: Path) -> None:
    code = BLOCKS[index]
    if "openai_agents" in code:
        pytest.importorskip("agents", reason="the drop-in example needs openai-agents")
        code += "\nhistcore.openai_agents.uninstall()\n"
    # The interpreter must import the histcore under test, wherever it is installed.
    env = {**os.environ, "PYTHONPATH": str(Path(histcore.__file__).resolve().parent.parent)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
