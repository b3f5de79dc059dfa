"""EncryptedSession under install(): each token decrypted once, every read equal to the
SDK's own read at that moment (TTL expiry and clock skew included)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cryptography")
pytest.importorskip("agents")

from agents import SQLiteSession
from agents.extensions.memory.encrypt_session import EncryptedSession
from cryptography.fernet import Fernet, InvalidToken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import histcore.openai_agents as accelerator

accelerator.uninstall()
SDK_UNWRAP = EncryptedSession._unwrap_valid_items
KEY = Fernet.generate_key().decode("ascii")
OTHER_KEY = Fernet.generate_key().decode("ascii")


@pytest.fixture(autouse=True)
def uninstalled() -> Iterator[None]:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


class Clock:
    """time.time() under the test's control (Fernet reads it through Python too)."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Counting:
    """A cipher that counts its decryptions."""

    def __init__(self, cipher: Any) -> None:
        self.cipher = cipher
        self.decrypted = 0

    def decrypt(self, token: Any, ttl: Any = None) -> bytes:
        self.decrypted += 1
        return self.cipher.decrypt(token, ttl=ttl)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cipher, name)


def sdk_read(session: EncryptedSession, envelopes: list[Any]) -> list[Any]:
    """What the SDK's own code gives for these envelopes now, with nothing kept."""
    fresh = EncryptedSession(session.session_id, session.underlying_session, KEY, session.ttl)
    fresh.cipher = session.cipher
    return SDK_UNWRAP(fresh, envelopes)  # type: ignore[no-any-return]


def test_install_replaces_the_unwrap_and_uninstall_restores_it() -> None:
    installation = accelerator.install()
    name = "agents.extensions.memory.encrypt_session.EncryptedSession._unwrap_valid_items"
    assert name in installation.replaced
    assert EncryptedSession._unwrap_valid_items is not SDK_UNWRAP
    accelerator.uninstall()
    assert EncryptedSession._unwrap_valid_items is SDK_UNWRAP


def test_each_token_is_decrypted_once(tmp_path: Path) -> None:
    accelerator.install()

    async def main() -> tuple[int, int, list[Any]]:
        store = SQLiteSession("s", str(tmp_path / "enc.db"))
        session = EncryptedSession("s", store, KEY, ttl=3600)
        session.cipher = counting = Counting(session.cipher)
        await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(50)])
        first = await session.get_items()
        after_first = counting.decrypted
        await session.add_items([{"role": "user", "content": "new"}])
        second = await session.get_items()
        second[0]["content"] = "changed by the caller"
        third = await session.get_items()
        store.close()
        return after_first, counting.decrypted, [first, second, third]

    after_first, total, reads = asyncio.run(main())
    assert after_first == 50
    assert total == 51  # the second and third reads decrypted only the new token
    assert [item["content"] for item in reads[2]] == [f"m{i}" for i in range(50)] + ["new"]
    assert reads[0] == reads[2][:50]


def test_kept_tokens_expire_as_fernet_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = 1_800_000_000
    clock = Clock(start)
    monkeypatch.setattr(time, "time", clock)
    accelerator.install()

    async def main() -> list[list[str]]:
        store = SQLiteSession("s", str(tmp_path / "enc.db"))
        session = EncryptedSession("s", store, KEY, ttl=100)
        await session.add_items([{"role": "user", "content": "old"}])  # stamped start
        clock.now = start + 60
        await session.add_items([{"role": "user", "content": "young"}])  # start + 60
        seen = []
        # the TTL's edge, just past it, the skew's edge from both sides, no TTL
        for now, ttl in [
            (start + 100, 100),
            (start + 101, 100),
            (start - 1, 100),
            (start, 100),
            (start + 10**6, None),
        ]:
            clock.now, session.ttl = now, ttl  # type: ignore[assignment]
            read = await session.get_items()
            assert read == sdk_read(session, await store.get_items())
            seen.append([item["content"] for item in read])
        store.close()
        return seen

    both = ["old", "young"]
    assert asyncio.run(main()) == [both, ["young"], ["old"], both, both]


OPS = st.one_of(
    st.tuples(st.just("add"), st.lists(st.text(max_size=8), min_size=1, max_size=4)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("clear")),
    st.tuples(st.just("tick"), st.integers(-200, 200)),
    st.tuples(st.just("future"), st.integers(0, 200)),
    st.tuples(st.just("foreign")),
    st.tuples(st.just("plain")),
    st.tuples(st.just("broken")),
    st.tuples(st.just("ttl"), st.sampled_from([None, 30, 90.5, 600, True, -5, 2**63])),
    st.tuples(st.just("rekey")),
)


async def apply(op: tuple[Any, ...], session: EncryptedSession, store: Any, clock: Clock) -> None:
    kind = op[0]
    if kind == "add":
        await session.add_items([{"role": "user", "content": text} for text in op[1]])
    elif kind == "pop":
        try:
            await session.pop_item()
        except (InvalidToken, TypeError, OverflowError):
            # The SDK's pop (not replaced) refuses a token it cannot authenticate, and
            # raises on a ttl its cryptography release does not take.
            pass
    elif kind == "clear":
        await session.clear_session()
    elif kind == "tick":
        clock.now += op[1]
    elif kind == "future":
        token = session.cipher.encrypt_at_time(
            json.dumps({"role": "user", "content": "ahead"}).encode(), int(clock.now) + op[1]
        )
        await store.add_items([{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token.decode()}])
    elif kind == "foreign":
        await store.add_items([EncryptedSession("s", store, OTHER_KEY)._wrap({"content": "x"})])
    elif kind == "plain":
        await store.add_items([{"role": "user", "content": "not encrypted"}])
    elif kind == "broken":
        await store.add_items([{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "AAAA"}])
    elif kind == "ttl":
        session.ttl = op[1]
    elif kind == "rekey":
        session.cipher = Fernet(Fernet.generate_key())


async def outcome(read: Any) -> Any:
    """A read's items, or the type and text of what it raised."""
    try:
        return await read
    except Exception as error:
        return (type(error), str(error))


def outcome_of(function: Any, *arguments: Any) -> Any:
    try:
        return function(*arguments)
    except Exception as error:
        return (type(error), str(error))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(OPS, max_size=14))
def test_every_read_equals_the_sdks(
    ops: list[tuple[Any, ...]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_800_000_000.0)
    monkeypatch.setattr(time, "time", clock)
    accelerator.install()

    async def main() -> None:
        store = SQLiteSession("s", str(tmp_path / f"enc-{uuid.uuid4().hex}.db"))
        session = EncryptedSession("s", store, KEY, ttl=120)
        for op in ops:
            await apply(op, session, store, clock)
            envelopes = await store.get_items()
            read, expected = (
                await outcome(session.get_items()),
                outcome_of(sdk_read, session, envelopes),
            )
            assert read == expected, op
            if isinstance(read, list):
                for item in read:  # a caller's changes never reach the next read
                    if isinstance(item, dict):
                        item["content"] = "mutated"
            assert await outcome(session.get_items()) == expected
            limited = expected[-2:] if isinstance(expected, list) else expected
            assert await outcome(session.get_items(limit=2)) == limited
        store.close()

    asyncio.run(main())


def test_a_subclass_unwrap_gets_the_sdks_read(tmp_path: Path) -> None:
    calls: list[Any] = []

    class Audited(EncryptedSession):
        def _unwrap(self, item: Any) -> Any:
            calls.append(item)
            return super()._unwrap(item)

    accelerator.install()

    async def main() -> None:
        store = SQLiteSession("s", str(tmp_path / "enc.db"))
        session = Audited("s", store, KEY)
        await session.add_items([{"role": "user", "content": "a"}])
        await session.get_items()
        await session.get_items()
        store.close()

    asyncio.run(main())
    assert len(calls) == 2


def test_the_envelope_check_is_the_sdks(tmp_path: Path) -> None:
    """An envelope without ``kid`` whose payload was decrypted before is still skipped."""
    accelerator.install()

    async def main() -> list[Any]:
        store = SQLiteSession("s", str(tmp_path / "enc.db"))
        session = EncryptedSession("s", store, KEY)
        await session.add_items([{"role": "user", "content": "a"}])
        (envelope,) = await store.get_items()
        await session.get_items()
        partial = {key: value for key, value in envelope.items() if key != "kid"}
        result = session._unwrap_valid_items([envelope, partial])
        store.close()
        return result

    assert asyncio.run(main()) == [{"role": "user", "content": "a"}]


def test_tokens_no_longer_stored_are_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histcore.openai_agents import _encrypted_read

    monkeypatch.setattr(_encrypted_read, "_SLACK", 0)
    accelerator.install()

    async def main() -> list[int]:
        store = SQLiteSession("s", str(tmp_path / "enc.db"))
        session = EncryptedSession("s", store, KEY)
        session.cipher = counting = Counting(session.cipher)
        await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
        counts = [len(await session.get_items()), counting.decrypted]
        old = await store.get_items()
        await session.clear_session()
        await session.add_items([{"role": "user", "content": "new"}])
        counts += [len(await session.get_items()), counting.decrypted]
        await store.add_items(old)  # the old tokens again: forgotten, so decrypted again
        counts += [len(await session.get_items()), counting.decrypted]
        store.close()
        return counts

    assert asyncio.run(main()) == [5, 5, 1, 6, 6, 11]
