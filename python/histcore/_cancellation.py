"""Awaiting work that must not be abandoned half-way by a cancelled caller, and work
that stands or falls together."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["finish_despite_cancellation", "gather_all"]

_T = TypeVar("_T")


async def finish_despite_cancellation(future: asyncio.Future[_T]) -> _T:
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


async def gather_all(jobs: list[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run ``jobs`` concurrently and return their results in order; on the first
    failure the others are cancelled."""
    if len(jobs) <= 1:
        return [await job for job in jobs]
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks:  # mark the siblings' own failures as seen
            if not task.cancelled():
                task.exception()
        raise
