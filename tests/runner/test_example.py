"""docs/runner-example.md (the README example) runs exactly as written and prints the
output it documents."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "runner-example.md"


def _block(text: str, language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", text, re.S)
    assert len(blocks) == 1, f"expected one {language} block in {EXAMPLE.name}"
    return str(blocks[0])


def test_the_documented_example_runs_and_prints_its_documented_output() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    code, expected = _block(text, "python"), _block(text, "text")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(EXAMPLE), "exec"), {"__name__": "__main__"})
    assert printed.getvalue() == expected
