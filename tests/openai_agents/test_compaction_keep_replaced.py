"""Compaction by the OpenAI Agents SDK over a ``keep_replaced=True`` session loses
nothing: the items the summary replaced are in ``transcript()``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the compaction hook is the OpenAI Agents SDK's")

from tests.openai_agents.test_compaction_snapshot import SUMMARY, _compacted_run, user
from tests.support.pg import Backends, backends


@pytest.fixture(params=["sqlite", "postgres"])
async def made(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


async def test_compaction_over_a_kept_session_loses_nothing(made: Backends) -> None:
    session: Any = made.session("s", keep_replaced=True)
    items, client = await _compacted_run(session)
    assert len(client.requests) == 1
    assert items == [user(f"old {n}") for n in range(27)] + [SUMMARY]
    transcript = await session.transcript()
    replaced = [entry for entry in transcript if not entry.live]
    # The newest 3 stored items, the turn's input and the model's answer became SUMMARY.
    assert [entry.item.get("content") for entry in replaced[:4]] == [
        "old 27",
        "old 28",
        "old 29",
        "Paris",
    ]
    assert len(replaced) == 5
    (summary,) = [entry for entry in transcript if entry.item == SUMMARY]
    assert summary.live
    # The summary was stored by the revision that removed what it replaces.
    assert {entry.removed_revision for entry in replaced} == {summary.stored_revision}
    assert [entry.item for entry in transcript if entry.live] == items
    assert len(transcript) == 33
