"""Write/read round trips of odd values on every store (memory, SQLite, PostgreSQL).

Generated items mix lone surrogates, nesting near the limit, values JSON has no type
for (datetime, UUID, Enum members, sets, bytes, ...), dict keys that are not str, big
integers, NaN, infinities and -0.0. Every batch either is accepted and reads back equal
to what was written (NaN-aware, types included; tuples read back as lists), or is
refused with TypeError/ValueError and leaves the store as it was; which of the two is
predicted independently by ``expected`` below, and must match. The counts of each
outcome per store are printed at the end of the module.
"""

from __future__ import annotations

import collections
import decimal
import enum
import math
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histcore.items import MAX_DEPTH
from histcore.sessions import SessionABC
from tests.support.examples import examples
from tests.support.odd_values import NOW, Color, Level, Mode, Point
from tests.support.pg import BACKENDS, Backends, backends, unique

# --- the values ------------------------------------------------------------------------


class Note(pydantic.BaseModel):
    text: str


STRINGS = st.one_of(
    st.text(max_size=6),
    st.text(st.characters(categories=["Cs", "Ll", "Nd", "Po"]), max_size=6),
    st.sampled_from(
        [
            "",
            "\ud800",
            "a\udfffb",
            "\udbff\udc00",  # a surrogate pair as two characters
            "\udc00\ud800",
            "\x00",
            'nul \x00 quote " back \\ é 日本 😀',
            "[{" * 300,
            "NaN",
            "Infinity",
            "1" * 25,
        ]
    ),
)
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from(
        [
            2**63 - 1,
            2**63,
            2**64,
            -(2**63) - 1,
            10**30,
            0.0,
            -0.0,
            math.nan,
            math.inf,
            -math.inf,
            5e-324,
            1.7976931348623157e308,
        ]
    ),
)
# Values stored as something else by a careless encoder, and values no JSON holds.
NOT_JSON = st.sampled_from(
    [
        NOW,
        NOW.date(),
        NOW.time(),
        uuid.UUID(int=3),
        Color.RED,
        Color.ONE,
        Point(1),
        {1, 2},
        frozenset(),
        b"bytes",
        bytearray(b"x"),
        decimal.Decimal("1.5"),
        complex(1, 2),
        object(),
    ]
)
# Values of a type JSON lacks that are written as their plain value, equal to them.
WRITTEN_AS_THEMSELVES = st.sampled_from([Level.HIGH, Mode.FAST, Note(text="model")])
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    NUMBERS,
    STRINGS,
    STRINGS,
    STRINGS,
    WRITTEN_AS_THEMSELVES,
    NOT_JSON,
)
KEYS = st.one_of(STRINGS, STRINGS, STRINGS, STRINGS, st.sampled_from([1, 0, 1.5, True, None]))
TREES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(KEYS, children, max_size=3),
    ),
    max_leaves=8,
)


def wrapped(value: Any, levels: int, kind: str) -> Any:
    for _ in range(levels):
        value = [value] if kind == "list" else (value,) if kind == "tuple" else {"k": value}
    return value


# Content nested so that the item (content at level 2) ends near MAX_DEPTH levels.
DEEP = st.builds(
    wrapped,
    st.one_of(LEAVES, st.just([]), st.just({})),
    st.integers(MAX_DEPTH - 5, MAX_DEPTH + 1),
    st.sampled_from(["list", "tuple", "dict"]),
)
ITEMS = st.fixed_dictionaries(
    {"role": st.just("user"), "content": st.one_of(TREES, TREES, DEEP)},
    optional={"extra": TREES},
)
BATCHES = st.lists(ITEMS, min_size=1, max_size=3)


# --- what must happen ----------------------------------------------------------------


class Refused(Exception):
    """The value cannot read back as written: the store must refuse it."""


_SURROGATE_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")


def _text(value: str) -> str:
    # Two characters that form a surrogate pair read back as the one character they
    # encode in JSON.
    if _SURROGATE_PAIR.search(value):
        raise Refused(value)
    return str.__str__(value)


def expected(value: Any, level: int = 1) -> Any:
    """What ``value`` at nesting ``level`` reads back as; Refused when it cannot."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return _text(value.value if isinstance(value, enum.Enum) else value)
    if isinstance(value, Note):
        return expected(value.model_dump(exclude_unset=True), level)
    if isinstance(value, (list, tuple, dict)):
        if level > MAX_DEPTH:
            raise Refused(f"{level} levels")
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise Refused("a key that is not a str")
            return {_text(key): expected(member, level + 1) for key, member in value.items()}
        return [expected(member, level + 1) for member in value]
    raise Refused(type(value).__name__)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout; NaN equals NaN, -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


# --- the round trips ------------------------------------------------------------------

#: (store, outcome) -> examples; outcomes other than the two below fail the test.
COUNTS: collections.Counter[tuple[str, str]] = collections.Counter()
ACCEPTED, REFUSED = "accepted and read back equal", "refused, store unchanged"


@pytest.fixture(scope="module", autouse=True)
def report_counts(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["round-trip fuzz:"]
    for name in BACKENDS:
        tried = sum(count for (store, _), count in COUNTS.items() if store == name)
        outcomes = ", ".join(
            f"{outcome}: {count}" for (store, outcome), count in COUNTS.items() if store == name
        )
        lines.append(f"  {name}: {tried} tried; {outcomes}")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n".join(lines))


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backends]:
    async with backends(request.param, tmp_path) as made:
        yield made


class Probe:
    """One session of a store, read through its own history cache and afresh by a
    second object on the same session (the same one in memory)."""

    def __init__(self, store: Backends) -> None:
        self.store = store
        self.session_id = unique("fuzz")
        self.session = store.session(self.session_id)
        # What the last example left stored (None: unknown, read it).
        self.known: list[Any] | None = None

    async def stored(self) -> list[Any]:
        first = await self.session.get_items()
        fresh: SessionABC = self.store.session(self.session_id)
        try:
            again = await fresh.get_items()
        finally:
            if fresh is not self.session:
                fresh.close()  # type: ignore[attr-defined]
        assert same(first, again), "a fresh reader disagrees with the session's cache"
        return first

    async def before(self) -> list[Any]:
        if self.known is None or len(self.known) > 24:
            await self.session.clear_session()
            self.known = []
        before, self.known = self.known, None
        return before


_probes: dict[int, Probe] = {}


def probe_for(store: Backends) -> Probe:
    if id(store) not in _probes:
        _probes.clear()
        _probes[id(store)] = Probe(store)
    return _probes[id(store)]


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(batch=BATCHES)
async def test_everything_accepted_reads_back_and_everything_refused_changes_nothing(
    store: Backends, batch: list[dict[str, Any]]
) -> None:
    probe = probe_for(store)
    before = await probe.before()
    try:
        written = [expected(item) for item in batch]
    except Refused:
        written = None
    try:
        await probe.session.add_items(batch)
    except (TypeError, ValueError) as exc:
        after = await probe.stored()
        if written is not None or not same(after, before):
            COUNTS[store.name, f"refused wrongly: {exc}"] += 1
        assert written is None, f"refused what reads back as written: {exc}"  # noqa: PT017
        assert same(after, before), "a refused batch changed the store"
        COUNTS[store.name, REFUSED] += 1
        probe.known = after
        return
    except Exception as exc:
        COUNTS[store.name, f"raised {type(exc).__name__}"] += 1
        raise
    after = await probe.stored()
    if written is None or not same(after, before + written):
        COUNTS[store.name, "accepted but read back otherwise"] += 1
    assert written is not None, "accepted what cannot read back as written"
    assert same(after, before + written), "read back otherwise than written"
    COUNTS[store.name, ACCEPTED] += 1
    probe.known = after
