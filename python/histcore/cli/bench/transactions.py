"""``histcore bench --transactions``: a compaction's atomic write against clear-and-rewrite.

On each store (memory, a SQLite file, PostgreSQL from ``--scratch-dsn`` or a throwaway
cluster) and size, a session of that many generated items; timed, the median of samples:

- ``replace_suffix``: a compaction's write as one transaction (the last ``REPLACED``
  items become ``SUMMARY`` items, checked against the revision read before);
- ``clear + add``: the same result over a store without that hook, as the SDK's
  ``OpenAIResponsesCompactionSession`` writes it (clear, then add all): not atomic;
- ``transcript``: ``transcript()`` of a ``keep_replaced=True`` session after such a
  replacement, beside ``get_items`` of the same session.

Every sample starts from the full session, restored (and read, as a compaction reads
before it writes) outside the clock. Details: docs/benchmarks.md, "History transactions".
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from histcore.cli.bench.units import format_seconds, size_label
from histcore.sessions import MemorySession, SQLiteSession
from histcore.testing_histories import generate_history

__all__ = [
    "DEFAULT_SIZES",
    "REPLACED",
    "SUMMARY",
    "StoreTiming",
    "render_transactions",
    "run_cli",
    "run_transactions",
]

#: items a timed compaction replaces at the end of the history, and how many it writes
REPLACED = 40
SUMMARY = 2
DEFAULT_SIZES = (1_000, 10_000, 100_000)


@dataclass(frozen=True)
class StoreTiming:
    """One store at one size: median seconds of each operation."""

    store: str
    size: int
    replace_suffix: float
    clear_and_add: float
    transcript: float
    get_items: float

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "size": self.size,
            "replace_suffix_s": self.replace_suffix,
            "clear_and_add_s": self.clear_and_add,
            "transcript_s": self.transcript,
            "get_items_s": self.get_items,
        }


def _summary(round_: int) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": f"summary {round_}.{part}"} for part in range(SUMMARY)]


async def _median(
    repeat: int, timed: Callable[[int], Awaitable[object]], restore: Callable[[], Awaitable[None]]
) -> float:
    samples = []
    for round_ in range(repeat):
        start = time.perf_counter()
        await timed(round_)
        samples.append(time.perf_counter() - start)
        await restore()
    return statistics.median(samples)


async def _time_store(
    store: str, make: Callable[[str, bool], Any], size: int, repeat: int
) -> StoreTiming:
    history = generate_history(size)
    start = size - REPLACED
    session = make(f"bench-{size}", False)
    await session.clear_session()
    await session.add_items(history)

    async def replace(round_: int) -> None:
        revision = await session.revision()
        if not await session.replace_suffix(start, _summary(round_), expected_revision=revision):
            raise RuntimeError(f"{store}: replace_suffix lost to no other writer")

    async def put_back_suffix() -> None:
        revision = await session.revision()
        await session.replace_suffix(start, history[start:], expected_revision=revision)
        await session.get_items()  # a compaction reads the history before it writes

    await session.get_items()

    async def rewrite(round_: int) -> None:
        await session.clear_session()
        await session.add_items([*history[:start], *_summary(round_)])

    async def put_back_all() -> None:
        await session.clear_session()
        await session.add_items(history)

    replace_s = await _median(repeat, replace, put_back_suffix)
    rewrite_s = await _median(repeat, rewrite, put_back_all)
    await session.clear_session()

    kept = make(f"bench-kept-{size}", True)
    await kept.clear_session()
    await kept.add_items(history)
    await kept.replace_suffix(start, _summary(0), expected_revision=await kept.revision())
    transcript = await kept.transcript()
    if len(transcript) != size + SUMMARY:
        raise RuntimeError(
            f"{store}: transcript holds {len(transcript)} items, not {size + SUMMARY}"
        )

    async def unchanged() -> None:
        return None

    transcript_s = await _median(repeat, lambda _: kept.transcript(), unchanged)
    get_items_s = await _median(repeat, lambda _: kept.get_items(), unchanged)
    await kept.clear_session()
    for opened in (session, kept):
        close = getattr(opened, "close", None)
        if close is not None:
            close()
    return StoreTiming(store, size, replace_s, rewrite_s, transcript_s, get_items_s)


def _stores(
    directory: str, dsn: str | None, prefix: str
) -> list[tuple[str, Callable[[str, bool], Any]]]:
    def memory(session_id: str, keep: bool) -> Any:
        return MemorySession(session_id, keep_replaced=keep)

    def sqlite(session_id: str, keep: bool) -> Any:
        return SQLiteSession(session_id, f"{directory}/transactions.db", keep_replaced=keep)

    stores: list[tuple[str, Callable[[str, bool], Any]]] = [("memory", memory), ("SQLite", sqlite)]
    if dsn is not None:
        from histcore.sessions.postgres import PostgresSession

        def postgres(session_id: str, keep: bool) -> Any:
            return PostgresSession(
                session_id,
                dsn,
                sessions_table=f"{prefix}_sessions",
                messages_table=f"{prefix}_messages",
                keep_replaced=keep,
            )

        stores.append(("PostgreSQL", postgres))
    return stores


async def _drop_tables(dsn: str, prefix: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        found = await conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename LIKE %s",
            (prefix + "\\_%",),
        )
        names = [name for (name,) in await found.fetchall()]
        if names:
            await conn.execute("DROP TABLE IF EXISTS " + ", ".join(names) + " CASCADE")


def run_transactions(
    sizes: Sequence[int], repeat: int, directory: str, dsn: str | None, progress: TextIO
) -> list[StoreTiming]:
    """Time every store at every size (``directory`` holds the SQLite file)."""
    small = [size for size in sizes if size < REPLACED]
    if small:
        raise ValueError(f"--transactions needs sizes of at least {REPLACED} items, not {small[0]}")

    # PostgreSQL tables of this run alone, dropped at its end (the archive is never
    # pruned, so a later run would find this one's items in its transcripts).
    prefix = f"histcore_bench_{uuid.uuid4().hex[:12]}"

    async def run() -> list[StoreTiming]:
        results = []
        try:
            for store, make in _stores(directory, dsn, prefix):
                for size in sizes:
                    progress.write(f"{store}, {size_label(size)} items\n")
                    results.append(await _time_store(store, make, size, repeat))
        finally:
            if dsn is not None:
                from histcore.sessions.postgres import close_pools

                await close_pools()
                await _drop_tables(dsn, prefix)
        return results

    return asyncio.run(run())


def render_transactions(results: Sequence[StoreTiming]) -> str:
    """The results as a Markdown table, with what each column times."""
    lines = [
        f"History transactions: a compaction replacing the last {REPLACED} items by "
        f"{SUMMARY}, and the transcript read (median of the samples).",
        "",
        "| store | items | replace_suffix | clear + add | ratio | transcript | get_items |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for timing in results:
        ratio = timing.clear_and_add / timing.replace_suffix if timing.replace_suffix else 0.0
        lines.append(
            f"| {timing.store} | {size_label(timing.size)} | "
            f"{format_seconds(timing.replace_suffix)} | {format_seconds(timing.clear_and_add)} | "
            f"{ratio:.1f}x | {format_seconds(timing.transcript)} | "
            f"{format_seconds(timing.get_items)} |"
        )
    lines.append("")
    lines.append(
        "ratio: clear + add (a compaction over a store without the hook, not atomic) over "
        "replace_suffix (atomic, checked against the revision)."
    )
    return "\n".join(lines) + "\n"


def run_cli(
    sizes: Sequence[int], repeat: int, scratch_dsn: str | None, json_path: str | None
) -> int:
    """``histcore bench --transactions``: time, print the table; the exit status."""
    import json
    import sys
    import tempfile

    from histcore.cli.bench.sdk_postgres import postgres_server

    with tempfile.TemporaryDirectory(prefix="histcore-bench-") as directory:
        with postgres_server(scratch_dsn, wanted=True) as server:
            if server.dsn is None:
                print(f"histcore bench: PostgreSQL not timed: {server.reason}", file=sys.stderr)
            results = run_transactions(sizes, repeat, directory, server.dsn, sys.stderr)
    print(render_transactions(results), end="")
    if json_path is not None:
        try:
            with open(json_path, "w", encoding="utf-8") as out:
                json.dump({"transactions": [timing.to_json() for timing in results]}, out, indent=2)
                out.write("\n")
        except OSError as exc:
            print(
                f"histcore bench: error: could not write --json {json_path!r}: {exc}",
                file=sys.stderr,
            )
            return 1
    return 0
