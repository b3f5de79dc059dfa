"""The SDK suite's helper modules (scripts/sdk_suite/), imported for tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

SDK_SUITE = Path(__file__).resolve().parent.parent.parent / "scripts" / "sdk_suite"


def sdk_suite_module(name: str) -> ModuleType:
    """``scripts/sdk_suite/<name>.py``, imported once (``sys.path`` left as it was)."""
    sys.path.insert(0, str(SDK_SUITE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SDK_SUITE))
