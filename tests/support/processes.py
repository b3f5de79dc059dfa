"""This machine's processes, as tests that end a program look for what it left running."""

from __future__ import annotations

from pathlib import Path


def running_with(text: str) -> list[str]:
    """The command lines of this machine's processes that mention ``text`` (Linux)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in line:
            found.append(line)
    return found
