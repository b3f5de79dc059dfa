"""``keep_replaced=True`` on every backend: what ``replace_suffix``, ``pop_item`` and
``clear_session`` remove is archived and ``transcript()`` returns it, while
``get_items()`` and ``revision()`` answer as without the option."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.sessions import MemorySession, SQLiteSession
from histcore.sessions.transcript import TranscriptEntry
from tests.support.examples import examples
from tests.support.pg import BACKENDS, Backends, backends, require_pg


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def entries(transcript: list[TranscriptEntry]) -> list[tuple[str, int | None, int | None]]:
    return [(e.item["content"], e.stored_revision, e.removed_revision) for e in transcript]


@pytest.fixture(params=BACKENDS)
async def made(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


async def test_the_transcript_says_what_replaced_what(made: Backends) -> None:
    session = made.session("t", keep_replaced=True)
    await session.add_items([user("a"), user("b")])  # revision 1
    assert await session.replace_suffix(1, [user("c")], expected_revision=1)  # 2
    assert await session.pop_item() == user("c")  # 3
    await session.add_items([user("d")])  # 4
    await session.add_items([user("e")], op_id="op")  # 5
    await session.add_items([user("e")], op_id="op")  # a retry: nothing
    await session.clear_session()  # 6
    await session.add_items([user("f")])  # 7
    transcript = await session.transcript()  # type: ignore[attr-defined]
    assert entries(transcript) == [
        ("a", 1, 6),
        ("b", 1, 2),
        ("c", 2, 3),  # b's replacement: stored by the revision that removed b
        ("d", 4, 6),
        ("e", 5, 6),
        ("f", 7, None),
    ]
    assert [e.item for e in transcript if e.live] == await session.get_items() == [user("f")]
    assert await session.revision() == 7


async def test_a_second_session_object_reads_the_same_transcript(made: Backends) -> None:
    if not made.durable:
        pytest.skip("memory sessions share nothing")
    one = made.session("t", keep_replaced=True)
    await one.add_items([user("a"), user("b")])
    await one.pop_item()
    two = made.session("t", keep_replaced=True)
    assert entries(await two.transcript()) == [("a", 1, None), ("b", 1, 2)]  # type: ignore[attr-defined]


async def test_the_transcript_needs_the_option(made: Backends) -> None:
    session = made.session("t")
    with pytest.raises(ValueError, match="keep_replaced=True"):
        await session.transcript()  # type: ignore[attr-defined]


@pytest.mark.parametrize("keep", [1, "yes", None])
def test_keep_replaced_must_be_a_bool(keep: Any, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="keep_replaced must be a bool"):
        MemorySession(keep_replaced=keep)
    with pytest.raises(TypeError, match="keep_replaced must be a bool"):
        SQLiteSession("s", tmp_path / "x.db", keep_replaced=keep)


async def test_the_sdk_session_still_reads_and_writes_the_file(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    path = tmp_path / "shared.db"
    with SQLiteSession("s", path, keep_replaced=True) as ours:
        await ours.add_items([user("a"), user("b")])
        await ours.pop_item()
        theirs = agents.SQLiteSession("s", str(path))
        try:
            assert await theirs.get_items() == [user("a")]
            await theirs.add_items([user("c")])  # not noted: another program's write
        finally:
            theirs.close()
        assert entries(await ours.transcript()) == [("a", 1, None), ("b", 1, 2), ("c", None, None)]
    # The SDK's tables are as the SDK makes them.
    plain = tmp_path / "plain.db"
    sdk = agents.SQLiteSession("s", str(plain))
    await sdk.add_items([user("a")])
    sdk.close()

    def schema(file: Path) -> list[Any]:
        with sqlite3.connect(file) as conn:
            return conn.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE name LIKE '%agent%' ORDER BY name"
            ).fetchall()

    assert schema(path) == schema(plain)


# --- against a plain session ------------------------------------------------------------

_operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3)),
        st.tuples(st.just("pop"), st.just(0)),
        st.tuples(st.just("clear"), st.just(0)),
        st.tuples(st.just("replace"), st.integers(0, 6), st.integers(0, 3)),
        st.tuples(st.just("stale"), st.integers(0, 6), st.integers(0, 3)),
    ),
    max_size=12,
)


async def _step(session: Any, operation: tuple[Any, ...], counter: int) -> Any:
    kind = operation[0]
    if kind == "add":
        batch = [user(f"a{counter}.{n}") for n in range(operation[1])]
        return await session.add_items(batch)
    if kind == "pop":
        return await session.pop_item()
    if kind == "clear":
        return await session.clear_session()
    start, count = operation[1], operation[2]
    batch = [user(f"r{counter}.{n}") for n in range(count)]
    revision = await session.revision() + (kind == "stale")
    start = min(start, len(await session.get_items()))
    return await session.replace_suffix(start, batch, expected_revision=revision)


async def _against_plain(made: Backends, operations: list[Any]) -> None:
    name = f"k{uuid.uuid4().hex[:8]}"
    kept = made.session(name, keep_replaced=True)
    plain = made.session(f"{name}p")
    stored: list[str] = []  # every item ever stored
    for counter, operation in enumerate(operations):
        before = await plain.get_items()
        assert await _step(kept, operation, counter) == await _step(plain, operation, counter)
        assert await kept.get_items() == await plain.get_items()
        assert await kept.revision() == await plain.revision()
        now = await plain.get_items()
        stored += [item["content"] for item in now if item not in before]
    transcript = await kept.transcript()
    assert sorted(e.item["content"] for e in transcript) == sorted(stored)
    assert [e.item for e in transcript if e.live] == await kept.get_items()
    revision = await kept.revision()
    for entry in transcript:
        assert entry.stored_revision is not None
        assert entry.stored_revision <= revision
        if entry.removed_revision is not None:
            assert entry.stored_revision < entry.removed_revision <= revision


@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(operations=_operations)
def test_a_kept_session_reads_as_a_plain_one(backend: str, operations: list[Any]) -> None:
    if backend == "postgres":
        require_pg()

    async def run() -> None:
        with tempfile.TemporaryDirectory() as directory:
            async with backends(backend, Path(directory)) as made:
                await _against_plain(made, operations)

    asyncio.run(run())
