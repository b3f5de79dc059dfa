"""Where and with what a benchmark's numbers were taken: the JSON ``environment`` object.

Both ``histcore bench --json`` and ``histcore bench --openai-agents --json`` carry it:
``histcore`` (version), ``git_commit``, ``git_dirty``, ``date`` (UTC, ISO 8601),
``machine`` (``platform``, ``cpu``, ``cores``), ``python``, ``python_implementation``,
``openai_agents`` (version or null), ``backend`` and ``build_profile``.

``git_commit`` is histcore's own checkout's ``HEAD`` when histcore runs from one (an
editable install), null for an installed wheel; ``git_dirty`` says whether tracked files
differ from that commit. ``build_profile`` is the Rust engine's build profile, null when
it was not timed.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histcore import BACKEND, __version__

__all__ = ["Environment", "cpu_model", "git_checkout"]

_GIT_TIMEOUT_SECONDS = 10


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_checkout(package: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the histcore checkout this package runs from, else (None, None).

    Only histcore's own checkout counts: an installed histcore inside some other git
    repository (a virtualenv in a project's tree) has no commit.
    """
    package = (package or Path(__file__).resolve().parents[2]).resolve()
    top = _git(package, "rev-parse", "--show-toplevel")
    if top is None or (Path(top) / "python" / "histcore").resolve() != package:
        return None, None
    commit = _git(package, "rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = _git(package, "status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status)


@dataclass(frozen=True)
class Environment:
    """Where and with what the numbers were taken."""

    platform: str
    cpu: str
    cpu_count: int
    python: str
    """The Python version, e.g. ``3.12.3``."""
    python_implementation: str
    histcore: str
    build_profile: str | None
    """The Rust engine's build profile, None when the Rust engine was not timed."""
    sdk_version: str | None
    backend: str
    """histcore's active engine in this process (``histcore.BACKEND``)."""
    git_commit: str | None
    git_dirty: bool | None
    date: str
    """When the run was taken, UTC, ISO 8601 to the second (``2025-01-31T12:00:00Z``)."""

    @classmethod
    def current(
        cls, build_profile: str | None, sdk_version: str | None, backend: str = BACKEND
    ) -> Environment:
        commit, dirty = git_checkout()
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        return cls(
            platform=platform.platform(),
            cpu=cpu_model(),
            cpu_count=os.cpu_count() or 1,
            python=platform.python_version(),
            python_implementation=platform.python_implementation(),
            histcore=__version__,
            build_profile=build_profile,
            sdk_version=sdk_version,
            backend=backend,
            git_commit=commit,
            git_dirty=dirty,
            date=now.isoformat().replace("+00:00", "Z"),
        )

    @property
    def debug(self) -> bool:
        return self.build_profile is not None and self.build_profile != "release"

    def machine(self) -> str:
        return f"{self.platform}, {self.cpu}, {self.cpu_count} CPUs"

    def to_json(self) -> dict[str, Any]:
        return {
            "histcore": self.histcore,
            "git_commit": self.git_commit,
            "git_dirty": self.git_dirty,
            "date": self.date,
            "machine": {"platform": self.platform, "cpu": self.cpu, "cores": self.cpu_count},
            "python": self.python,
            "python_implementation": self.python_implementation,
            "openai_agents": self.sdk_version,
            "backend": self.backend,
            "build_profile": self.build_profile,
        }
