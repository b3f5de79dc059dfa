"""The model test of ``replace_suffix`` on a session that keeps its history, one driver for
every store: after each operation the kept session reads what a fresh one reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def play(
    session: Any,
    other: Any,
    operations: Sequence[tuple[Any, ...]],
    fresh_read: Callable[[], Awaitable[list[Any]]],
    corrupt: Callable[[], Awaitable[None]],
) -> None:
    """Run ``operations`` (kind, argument[, count]) on ``session`` and a second session
    object ``other`` of the same session, comparing ``session``'s read with
    ``fresh_read()`` after each; ``corrupt()`` stores a row that is not an item."""
    await session.add_items([user("first")])  # the tables exist
    for counter, operation in enumerate(operations, start=1):
        kind, argument = operation[0], operation[1]
        if kind == "add":
            await session.add_items([user(f"{counter}.{n}") for n in range(argument)])
        elif kind in ("replace", "other replace"):
            writer = session if kind == "replace" else other
            start = min(argument, len(await fresh_read()))
            count = operation[2] if kind == "replace" else 1
            items = [user(f"r{counter}.{n}") for n in range(count)]
            revision = await writer.revision()
            assert await writer.replace_suffix(start, items, expected_revision=revision)
        elif kind == "read":
            await session.get_items()
        elif kind == "limited read":
            await session.get_items(argument)
        elif kind == "pop":
            await session.pop_item()
        elif kind == "other add":
            await other.add_items([user(f"o{counter}.{n}") for n in range(argument)])
        elif kind == "other pop":
            await other.pop_item()
        elif kind == "corrupt row":
            await corrupt()
        else:
            raise AssertionError(f"unknown operation {operation!r}")
        assert await session.get_items() == await fresh_read()
