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
        if choice == "rust" or exc.name != "histcore._core":
            raise ImportError(
                "histcore's Rust extension (histcore._core) could not be imported "
                f"and HISTCORE_BACKEND={choice}: {exc}"
            ) from exc
        from histcore.engine import pure as _pure

        return _pure, "python"
    return core, "rust"


#: The loaded backend module: ``histcore._core`` or ``histcore.engine.pure``.
backend_module, BACKEND = _load()
