"""``histcore doctor --fix`` on a store a histcore ``SQLiteSession`` has open: a row the
repair rewrites in place is read again by the session, whose history cache predates it
(as PostgreSQL's sessions do through the session's generation)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from histcore.sessions import SQLiteSession
from tests.cli.test_doctor import call, output, report_json, session_entry, user


@pytest.mark.parametrize("limit", [None, 2])
def test_a_session_open_across_the_repair_reads_the_rewritten_row(
    tmp_path: Any, limit: int | None
) -> None:
    path = os.path.join(tmp_path, "store.db")

    async def scenario() -> tuple[list[Any], list[Any]]:
        with SQLiteSession("s", path) as session:
            await session.add_items([user("q"), call("c1", 1), output("c1", "a")])
            assert len(await session.get_items(limit)) == (limit or 3)  # cached now
            # Another program repeats the call with new content...
            with SQLiteSession("s", path) as other:
                await other.add_items([call("c1", 2)])
            # ...and the doctor gives the first row of the call that content, in place,
            # and deletes the repeat: the rows the session holds keep their count.
            code, report = report_json(path, "--fix")
            entry = session_entry(report, "s")
            assert code == 0, report
            assert entry["rewritten_rows"] == [2]
            assert entry["removed_rows"] == [4]
            cached = await session.get_items(limit)
            with SQLiteSession("s", path) as fresh:
                return cached, await fresh.get_items(limit)

    cached, fresh = asyncio.run(scenario())
    assert fresh[-2:] == [call("c1", 2), output("c1", "a")]
    assert cached == fresh


def test_a_session_notices_one_rewrite_after_another(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "store.db")

    async def scenario() -> None:
        with SQLiteSession("s", path) as session:
            await session.add_items([user("q"), call("c1", 1), output("c1", "a")])
            for version in (2, 3):
                await session.get_items()
                with SQLiteSession("s", path) as other:
                    await other.add_items([call("c1", version)])
                assert report_json(path, "--fix")[0] == 0
                assert (await session.get_items())[1] == call("c1", version)

    asyncio.run(scenario())
