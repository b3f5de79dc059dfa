"""``histcore doctor --fix`` on a store of a ``keep_replaced=True`` session leaves the
archive (``histcore_archive``, ``histcore_writes``) as it was."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from histcore.sessions import SQLiteSession
from tests.cli.test_doctor import call, output, report_json, session_entry, user
from tests.support.sqlite import query


def _archive(path: str) -> list[Any]:
    return [
        *query(path, "SELECT * FROM histcore_archive ORDER BY rowid"),
        *query(path, "SELECT * FROM histcore_writes ORDER BY rowid"),
    ]


def test_fix_leaves_the_archive_intact(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")

    async def write() -> None:
        with SQLiteSession("s", path, keep_replaced=True) as session:
            await session.add_items([user("q"), call("c1", 1), output("c1"), user("gone")])
            await session.pop_item()  # archived
            # A call stored twice: the doctor removes a row.
            await session.add_items([call("c1", 2), user("last")])

    asyncio.run(write())
    archived = _archive(path)
    assert len(archived) == 3  # one archived row, two writes noted
    code, report = report_json(path, "--fix")
    assert code == 0
    entry = session_entry(report, "s")
    assert entry["fix"] == "fixed"
    assert entry["removed_rows"]
    assert _archive(path) == archived

    async def read() -> list[Any]:
        with SQLiteSession("s", path, keep_replaced=True) as session:
            return [(e.item.get("content"), e.removed_revision) for e in await session.transcript()]

    assert ("gone", 2) in asyncio.run(read())
