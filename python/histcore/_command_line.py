"""What the ``histcore`` command does when the package itself cannot load."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def is_command_line() -> bool:
    """True in the ``histcore`` console script and in ``python -m histcore``."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if script in ("histcore", "histcore.exe"):
        return True
    orig = getattr(sys, "orig_argv", [])
    return (
        "-m" in orig
        and orig.index("-m") + 1 < len(orig)
        and orig[orig.index("-m") + 1] == "histcore"
    )


def exit_with(error: BaseException) -> NoReturn:
    """One line on stderr and exit status 2, instead of an import traceback."""
    print(f"histcore: error: {error}", file=sys.stderr)
    raise SystemExit(2)
