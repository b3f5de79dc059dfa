"""``histcore bench --openai-agents`` without the SDK: one line naming the extra."""

from __future__ import annotations

import os
import subprocess
import sys

# Runs the command line with the SDK made unimportable (as if the extra were missing).
WITHOUT_SDK = """
import sys
sys.modules["agents"] = None
from histcore.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )


def test_bench_openai_agents_without_the_sdk_names_the_extra() -> None:
    result = run("bench", "--openai-agents", "--allow-debug", "--backend", "python")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'histcore[openai-agents]'" in lines[0]
    assert lines[0].startswith("histcore bench: error:")
    assert result.stdout == ""
