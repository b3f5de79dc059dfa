"""Helpers shared by the tests of the drop-in's SDK session read."""

from __future__ import annotations

from typing import Any

import pytest

from histcore.openai_agents import _session_read


def decode_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the rows of each ``decode_rows`` call the session read makes."""
    calls: list[int] = []
    real = _session_read.decode_rows

    def counted(rows: list[Any], json_module: Any) -> list[Any]:
        calls.append(len(rows))
        return real(rows, json_module)

    monkeypatch.setattr(_session_read, "decode_rows", counted)
    return calls
