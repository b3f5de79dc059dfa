"""Helpers shared by the test modules (imported as ``tests.support.*``)."""

from __future__ import annotations

import re
from typing import Any

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def value_id(value: Any) -> str:
    """A parametrize id for ``value``: its repr without object addresses, so every
    process (each pytest-xdist worker) collects the same test ids."""
    return _ADDRESS.sub("", repr(value))
