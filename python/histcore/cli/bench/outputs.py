"""Where a benchmark writes (``--json``, ``--plot``): checked before a long run starts,
so a run is not lost to a typo in an output path."""

from __future__ import annotations

import os

__all__ = ["output_problem", "plot_problem"]


def output_problem(option: str, path: str) -> str | None:
    """Why ``path`` cannot be written to; None if it can."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"{option}: directory {os.path.dirname(path)!r} does not exist"
    if os.path.isdir(path):
        return f"{option}: {path!r} is a directory"
    return None


def plot_problem(plot_path: str | None) -> str | None:
    """Why --plot cannot be drawn; None if it can (or there is none)."""
    if plot_path is None:
        return None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "--plot needs matplotlib: pip install 'histcore[plot]'"
    return output_problem("--plot", plot_path)
