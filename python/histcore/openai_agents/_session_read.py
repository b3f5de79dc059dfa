"""The SDK's ``SQLiteSession.get_items`` with its rows decoded in one engine call.

The SDK reads a session with one query, then decodes each row in a Python loop
(``json.loads`` per row, skipping rows that raise ``JSONDecodeError`` or ``TypeError``)
while the collector runs: at 10^5 items the collections that the decoded containers
trigger cost more than the decoding itself. The replacement runs the same query, with
the same lock, in the same worker thread, and hands the rows to the engine's
``decode_rows`` with the collector paused: each row is read by ``orjson`` where that
gives exactly what ``json.loads`` gives (an exact str with no run of 19 or more digits,
which orjson would read as a float, and text orjson accepts), and by the SDK's own
``json.loads`` (``JsonModule.loads``) otherwise, skipping what the SDK skips.

It takes its path only for the unlimited read (no ``limit``, no session limit: a
limited read widens its window past corrupt rows, which is left to the SDK), while the
session module's ``json`` is histcore's ``JsonModule`` with ``loads`` as installed and
nothing the original looks up is rebound (its watch). Rows that are not 1-tuples (a
custom ``row_factory``) are decoded by the SDK's loop, as the SDK's code would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any, cast

import orjson

from histcore.engine import items as engine
from histcore.engine.collector import paused_for
from histcore.openai_agents._replacements import JsonModule, intact, like
from histcore.openai_agents._watch import Watch

__all__ = ["decode_rows", "make_get_items"]

GetItems = Callable[..., Coroutine[Any, Any, list[Any]]]


def _decode_each(rows: list[Any], json_module: Any) -> list[Any]:
    """The SDK's ``_decode_rows``: each row unpacked and decoded, bad JSON skipped."""
    items: list[Any] = []
    for (message_data,) in rows:
        try:
            items.append(json_module.loads(message_data))
        except (json_module.JSONDecodeError, TypeError):
            continue
    return items


def decode_rows(rows: list[Any], json_module: Any) -> list[Any]:
    """What the SDK's row loop returns for ``rows`` with ``json_module`` as ``json``."""
    skipped = (json_module.JSONDecodeError, TypeError)
    with paused_for(rows):
        decoded = engine.decode_rows(rows, orjson.loads, json_module.loads, skipped)
    if decoded is NotImplemented:
        return _decode_each(rows, json_module)
    return cast("list[Any]", decoded)


def make_get_items(original: GetItems, module: ModuleType, watch: Watch | None = None) -> GetItems:
    unchanged = intact(watch)

    @like(original)
    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        json_module = module.json
        if (
            limit is not None
            or not unchanged()
            or not isinstance(json_module, JsonModule)
            or not json_module.reads_exactly()
            or module.resolve_session_limit(limit, self.session_settings) is not None
        ):
            return await original(self, limit)

        def get_items_sync() -> list[Any]:
            with self._locked_connection() as conn:
                # The SDK's query text, whitespace included (a trace callback sees it).
                cursor = conn.execute(
                    f"""
                        SELECT message_data FROM {self.messages_table}
                        WHERE session_id = ?
                        ORDER BY id ASC
                    """,
                    (self.session_id,),
                )
                return decode_rows(cursor.fetchall(), json_module)

        return await asyncio.to_thread(get_items_sync)

    return get_items
