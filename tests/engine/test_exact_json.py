"""Integers beyond 64 bits and non-finite floats survive every JSON round trip.

orjson reads an integer beyond 64 bits as a float (dropping digits) and writes NaN as
``null``; the standard library, which the Agents SDK uses, keeps both. Stored history,
RunState checkpoints and tool arguments must not lose them either.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.engine import exact_json
from histcore.runner.agent import Agent
from histcore.runner.run import Runner
from histcore.runner.run_state import RunState
from histcore.runner.tool import function_tool, tool_output_text
from histcore.sessions import SQLiteSession
from histcore.sessions._codec import decode_id_rows, decode_row, encode_items_utf8
from histcore.testing import ScriptedModel, function_call, text_message, user_message
from tests.support.examples import examples
from tests.support.pg import BACKENDS, backends

BIG = 2**70 + 3  # not a float: 2**70 itself would compare equal to one
# The edges of what orjson reads exactly: u64 max, i64 min; one past each is not.
EDGES = [2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -(10**19) + 1, 10**40, -(10**40)]


def big_item() -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "done",
        "numbers": EDGES,
        "nested": {"wei": BIG, "list": [1, -BIG, 1.5, 10**18]},
    }


def assert_exact(value: Any, expected: Any) -> None:
    """Equal, with ints still ints (``1e19 == 10**19`` would hide a float)."""
    assert value == expected
    assert json.dumps(value) == json.dumps(expected)


# --- the engine's scan --------------------------------------------------------------


def test_candidates_need_nineteen_digits_in_a_row(engine: ModuleType) -> None:
    texts = [
        b'{"n": 922337203685477580}',  # 18 digits: fits i64
        b'{"n": -9223372036854775809}',  # 19 digits
        '{"n": 12345678901234567890}',  # str, 20 digits
        '{"id": "msg_1234567890123456789"}',  # a long run inside a string counts too
        "日本語 1234567890 1234567890",  # runs broken by a space
        "é" * 7 + "1" * 19,  # the run after multi-byte text
        "\ud800" + "9" * 25,  # a lone surrogate before the run
        b"",
    ]
    assert engine.long_integer_candidates(texts) == [1, 2, 3, 5, 6]


@pytest.mark.parametrize("offset", range(0, 40))
def test_runs_crossing_block_boundaries(engine: ModuleType, offset: int) -> None:
    for length in (16, 18, 19, 20, 33, 40):
        text = b"x" * offset + b"7" * length + b"]"
        assert engine.long_integer_candidates([text]) == ([0] if length >= 19 else [])


def test_candidates_reject_what_is_not_text(engine: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"^texts\[1\] must be str or bytes, not int$"):
        engine.long_integer_candidates([b"1", 5])
    with pytest.raises(TypeError, match=r"^texts\[0\] must be str or bytes, not bytearray$"):
        engine.long_integer_candidates([bytearray(b"1")])
    with pytest.raises(TypeError, match=r"^texts must be a list of items, not str$"):
        engine.long_integer_candidates("12345678901234567890")
    assert engine.long_integer_candidates(iter([b"1" * 19])) == [0]


TEXT_ALPHABET = '0123456789a -"é日😀\ud800'


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=TEXT_ALPHABET, max_size=120),
            st.binary(max_size=120),
            st.lists(st.sampled_from([b"1", b"9", b"0", b"x", b"\xc3\xa9"]), max_size=120).map(
                b"".join
            ),
        ),
        max_size=8,
    )
)
def test_rust_and_pure_scans_agree(
    pure: ModuleType, core: ModuleType, texts: list[str | bytes]
) -> None:
    expected = [
        position
        for position, text in enumerate(texts)
        if any(
            len(run) >= 19
            for run in (text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
            .translate(bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256)))
            .split(b" ")
        )
    ]
    assert pure.long_integer_candidates(texts) == expected
    assert core.long_integer_candidates(texts) == expected


# --- stored rows ------------------------------------------------------------------


def test_encoded_rows_decode_exactly() -> None:
    item = big_item()
    [text] = encode_items_utf8([item])
    assert orjson.loads(text)["nested"]["wei"] != BIG  # plain orjson drops digits
    assert_exact(decode_row(text), item)
    assert_exact(decode_row(text.decode()), item)


def test_decode_id_rows_mixes_exact_plain_and_corrupt_rows() -> None:
    plain = {"type": "message", "role": "user", "content": "hi"}
    rows: list[tuple[int, Any]] = [
        (1, orjson.dumps(plain)),
        (2, json.dumps(big_item()).encode()),
        (3, b'{"n": 123456789012345678901'),  # truncated: corrupt, and a candidate
        (4, json.dumps({"nan": float("nan"), "n": -BIG})),  # the SDK writes NaN tokens
    ]
    ids, items, corrupt = decode_id_rows(rows)
    assert ids == [1, 2, 4]
    assert_exact(items[0], plain)
    assert_exact(items[1], big_item())
    assert items[2]["n"] == -BIG
    assert isinstance(items[2]["n"], int)
    assert math.isnan(items[2]["nan"])
    assert [row_id for row_id, _ in corrupt] == [3]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_sessions_keep_big_integers(backend: str, tmp_path: Path) -> None:
    async with backends(backend, tmp_path) as made:
        session = made.session("big")
        await session.add_items([user_message("count"), big_item()])
        assert_exact((await session.get_items())[1], big_item())
        # A second session object reads the store afresh.
        assert_exact((await made.session("big").get_items())[1], big_item())
        assert_exact(await session.pop_item(), big_item())


def test_rows_the_sdk_wrote_read_back_exactly(tmp_path: Path) -> None:
    memory = pytest.importorskip("agents.memory")
    path = tmp_path / "sdk.db"
    sdk = memory.SQLiteSession("s", str(path))
    asyncio.run(sdk.add_items([big_item()]))
    sdk.close()
    with SQLiteSession("s", path) as ours:
        assert_exact(asyncio.run(ours.get_items()), [big_item()])


# --- RunState and tools ---------------------------------------------------------------


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


def test_run_state_round_trips_big_integers() -> None:
    # (Non-finite floats are refused by RunState with an error naming the field.)
    model = ScriptedModel([[text_message("ok")]])
    agent = Agent("counter", model=model)
    state = Runner.run_sync(agent, [user_message("go"), big_item()]).to_state()
    text = state.to_string()
    loaded = RunState.from_string(agent, text)
    assert_exact(loaded.to_json()["original_input"][1], big_item())
    assert_exact(RunState.from_string(agent, text.encode()).to_json(), loaded.to_json())


def test_tool_arguments_and_outputs_keep_big_integers() -> None:
    assert add.parse_arguments(json.dumps({"a": BIG, "b": -(10**30)})) == {
        "a": BIG,
        "b": -(10**30),
    }
    assert tool_output_text({"n": BIG}) == json.dumps({"n": BIG})
    assert tool_output_text([BIG, 1]) == f"[{BIG}, 1]"


def test_tool_runs_with_exact_big_arguments() -> None:
    model = ScriptedModel(
        [[function_call("add", {"a": BIG, "b": 1}, "c1")], [text_message("done")]]
    )
    result = Runner.run_sync(Agent("adder", model=model, tools=[add]), "add them")
    outputs = [item for item in result.new_items if item.get("type") == "function_call_output"]
    assert outputs[0]["output"] == str(BIG + 1)


# --- the shared helpers -------------------------------------------------------------


def test_loads_refuses_non_finite_tokens_on_both_paths() -> None:
    with pytest.raises(ValueError):
        exact_json.loads_strict("[NaN]")
    with pytest.raises(ValueError, match="NaN"):
        exact_json.loads_strict("[NaN, 12345678901234567890]")
    with pytest.raises(TypeError, match="JSON text must be str or bytes, not int"):
        exact_json.loads_strict(5)  # type: ignore[arg-type]
    assert exact_json.loads_strict(bytearray(b"[12345678901234567890]")) == [12345678901234567890]


def test_dumps_keeps_what_orjson_would_change() -> None:
    assert exact_json.dumps({"n": BIG}) == json.dumps({"n": BIG}).encode()
    assert exact_json.dumps([float("nan")]) == b"[NaN]"
    assert exact_json.dumps({"text": "null"}) == orjson.dumps({"text": "null"})
    with pytest.raises(TypeError):
        exact_json.dumps({"x": object()})
