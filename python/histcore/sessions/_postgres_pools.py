"""The PostgreSQL sessions' shared connection pools: one per DSN and event loop.

A psycopg pool belongs to the event loop it was opened in, so the pools are kept per
running loop (forgotten once the loop is closed or gone). Concurrent first uses of one
DSN wait for the same opening task.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from histcore.exceptions import SessionError

__all__ = ["Pool", "close_pools", "describe_dsn", "shared_pool"]

Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]


def describe_dsn(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN, for messages: never the password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "<unparsable DSN>"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{user}{host}{port}/{parts.get('dbname') or ''}"


@dataclass
class _LoopPools:
    """The shared pools of one event loop (a pool cannot be used from another loop)."""

    loop: weakref.ref[asyncio.AbstractEventLoop]
    opening: dict[str, asyncio.Task[Pool]] = field(default_factory=dict)


_pools: dict[int, _LoopPools] = {}


def _pools_of_running_loop() -> _LoopPools:
    loop = asyncio.get_running_loop()
    for key, entry in list(_pools.items()):
        alive = entry.loop()
        if alive is None or alive.is_closed():
            del _pools[key]  # its loop is gone, and so is every use of its pools
    found = _pools.get(id(loop))
    if found is None or found.loop() is not loop:
        found = _pools[id(loop)] = _LoopPools(weakref.ref(loop))
    return found


async def _open_pool(dsn: str, max_size: int, timeout: float) -> Pool:
    pool: Pool = AsyncConnectionPool(
        dsn,
        kwargs={"autocommit": True},
        min_size=1,
        max_size=max_size,
        open=False,
        # Checked at checkout: after a server restart or a killed backend the pool hands
        # out a fresh connection instead of a dead one.
        check=AsyncConnectionPool.check_connection,
        timeout=timeout,
        name=f"histcore {describe_dsn(dsn)}",
    )
    try:
        await pool.open(wait=True, timeout=timeout)
    except BaseException as exc:
        await pool.close()
        if isinstance(exc, (PoolTimeout, psycopg.Error)):
            raise SessionError(
                f"cannot connect to PostgreSQL at {describe_dsn(dsn)} within {timeout:g}s: {exc}"
            ) from exc
        raise
    return pool


async def shared_pool(dsn: str, *, max_size: int = 10, timeout: float = 30.0) -> Pool:
    """The connection pool for ``dsn`` shared by everything in the running event loop.

    Opened on first use with ``max_size`` connections at most (later calls get the
    same pool, whatever they pass). ``close_pools()`` closes it.
    """
    if not isinstance(dsn, str) or not dsn:
        raise TypeError(f"dsn must be a non-empty str, not {dsn!r}")
    pools = _pools_of_running_loop()
    task = pools.opening.get(dsn)
    if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
        task = asyncio.ensure_future(_open_pool(dsn, max_size, timeout))
        pools.opening[dsn] = task
    pool = await asyncio.shield(task)
    if pool.closed:  # closed by its owner meanwhile: open a new one
        del pools.opening[dsn]
        return await shared_pool(dsn, max_size=max_size, timeout=timeout)
    return pool


async def close_pools() -> None:
    """Close every shared pool of the running event loop (sessions reopen them on use)."""
    pools = _pools_of_running_loop()
    tasks = list(pools.opening.values())
    pools.opening.clear()
    for task in tasks:
        try:
            pool = await task
        except Exception:  # it never opened: nothing to close
            continue
        await pool.close()
