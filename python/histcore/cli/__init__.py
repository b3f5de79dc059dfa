"""The command line: ``histcore doctor`` (check and repair stored sessions) and
``histcore bench`` (measure the engine and the drop-in)."""

from __future__ import annotations

from histcore.cli.main import main

__all__ = ["main"]
