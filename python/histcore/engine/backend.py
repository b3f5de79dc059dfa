"""Picks the backend module: the Rust extension ``histcore._core`` or the pure twin.

``HISTCORE_BACKEND``: ``auto`` (default) uses the extension and falls back to the pure
twin only when the extension is *missing*, never when it is broken; ``rust`` fails
loudly if the extension cannot be imported; ``python`` forces the pure twin.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Literal

_CHOICES = ("auto", "rust", "python")

#: Why ``HISTCORE_BACKEND=rust`` failed when the extension is simply not there (one
#: line: the ``histcore`` command prints it as its error), and the ways out.
MISSING_ENGINE = (
    "HISTCORE_BACKEND=rust, but this histcore is the pure-Python build (no histcore._core): "
    "install the compiled wheel or build from source with a Rust toolchain, "
    "or unset HISTCORE_BACKEND (or set it to auto or python)"
)


def _load() -> tuple[ModuleType, Literal["rust", "python"]]:
    choice = os.environ.get("HISTCORE_BACKEND", "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ImportError(f"HISTCORE_BACKEND must be one of {', '.join(_CHOICES)}, not {choice!r}")
    if choice == "python":
        from histcore.engine import pure as _pure

        return _pure, "python"
    try:
        core = importlib.import_module("histcore._core")
    except ModuleNotFoundError as exc:
        if exc.name != "histcore._core":  # present, but a module it imports is missing
            raise ImportError(
                "histcore's Rust extension (histcore._core) could not be imported "
                f"and HISTCORE_BACKEND={choice}: {exc}"
            ) from exc
        if choice == "rust":
            # Plainly absent: the cause adds only a second traceback, so it is dropped.
            raise ImportError(MISSING_ENGINE) from None
        from histcore.engine import pure as _pure

        return _pure, "python"
    return core, "rust"


#: The loaded backend module: ``histcore._core`` or ``histcore.engine.pure``.
backend_module, BACKEND = _load()
