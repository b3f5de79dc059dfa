"""Awaiting work that must not be abandoned half-way by a cancelled caller."""

from __future__ import annotations

import asyncio
from typing import TypeVar

__all__ = ["to_the_end"]

_T = TypeVar("_T")


async def to_the_end(future: asyncio.Future[_T]) -> _T:
    """Await ``future`` to its end even when the caller is cancelled meanwhile, then
    re-raise the cancellation (chained to the work's own error, if it failed): a
    cancelled write is over, done or not done, by the time the caller's cleanup runs,
    never still in flight with an outcome nobody learns."""
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(future)
        except asyncio.CancelledError as exc:
            if future.done():
                raise
            cancelled = exc
            continue
        except BaseException as exc:
            if cancelled is not None:
                raise cancelled from exc
            raise
        if cancelled is not None:
            raise cancelled
        return result
