"""The PostgreSQL sessions' shared connection pools: one per DSN and event loop.

A psycopg pool belongs to the event loop it was opened in, so the pools are kept per
running loop (forgotten once the loop is closed or gone). Concurrent first uses of one
DSN wait for the same opening task.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from histcore.exceptions import SessionError

__all__ = ["CONNECT_TIMEOUT", "Pool", "close_pools", "describe_dsn", "shared_pool"]

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


def _connection_options(dsn: str, timeout: float) -> dict[str, Any]:
    """Options of every connection: autocommit, and libpq's ``connect_timeout`` (whole
    seconds, at least 2 as libpq counts them) unless the DSN names its own."""
    options: dict[str, Any] = {"autocommit": True}
    try:
        given = "connect_timeout" in conninfo_to_dict(dsn)
    except psycopg.Error:
        given = False  # psycopg says what is wrong with the DSN when connecting
    if not given:
        options["connect_timeout"] = max(2, math.ceil(timeout))
    return options


def _one_line(exc: BaseException) -> str:
    """An error as one line (libpq adds hints on lines of their own)."""
    return " ".join(part.strip() for part in str(exc).splitlines() if part.strip())


async def _probe(dsn: str, options: dict[str, Any], timeout: float) -> None:
    """Connect once before the pool does: a server that is down or unreachable is one
    clear error within ``timeout`` seconds, not a pool retrying (and logging a warning
    per attempt) until its own timeout."""
    try:
        connection = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(dsn, **options), timeout
        )
    except (psycopg.Error, OSError, asyncio.TimeoutError) as exc:
        reason = _one_line(exc) or "no answer"
        raise SessionError(
            f"cannot connect to PostgreSQL at {describe_dsn(dsn)} within {timeout:g}s: {reason}"
        ) from None
    await connection.close()


async def _open_pool(dsn: str, max_size: int, timeout: float) -> Pool:
    options = _connection_options(dsn, timeout)
    await _probe(dsn, options, timeout)
    pool: Pool = AsyncConnectionPool(
        dsn,
        kwargs=options,
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
                f"cannot connect to PostgreSQL at {describe_dsn(dsn)} within {timeout:g}s: "
                f"{_one_line(exc)}"
            ) from exc
        raise
    return pool


#: Seconds to wait for the server by default.
CONNECT_TIMEOUT = 5.0


async def shared_pool(dsn: str, *, max_size: int = 10, timeout: float = CONNECT_TIMEOUT) -> Pool:
    """The connection pool for ``dsn`` shared by everything in the running event loop.

    Opened on first use with ``max_size`` connections at most (later calls get the
    same pool, whatever they pass); a server that does not accept a connection within
    ``timeout`` seconds is a one-line SessionError. ``close_pools()`` closes it.
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
