"""``repair_input``'s later rounds, followed incrementally, against the plain loop.

The repair drops the units holding a problem, and a drop can uncover a new problem (a
program call whose issued items all went loses its exemption; an item whose reasoning
went lacks it), so the rule is: drop, check the whole list again, until nothing fixable
is left. Both engines follow the rounds after the first incrementally, to stay linear on
chains. Here the loop itself, written from the rule, is the oracle: on lists drawn from
a small alphabet of items (few call ids, programs issuing programs, repeated ids), where
repairs of two and three rounds are common.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from histcore.engine.pure import input_rules
from histcore.items import LOST_OUTPUT_TEXT as LOST
from tests.support.examples import examples
from tests.support.strategies import positions

PROGRAMS = 4  # call ids p0-p3 are programs' ...
SHELL = 4  # ... p4 a shell call's (pending or not), p5 and p6 function calls'


_CALL_TYPES = {pair: "program" for pair in range(PROGRAMS)} | {SHELL: "shell_call"}
_ITEMS = {
    0: {"type": "item_reference"},
    1: {"type": "reasoning"},
    2: {"type": "reasoning"},
    7: {"role": "user", "content": "q"},
    8: {"type": "message", "role": "assistant"},
}


def _item(kind: int, pair: int, pending: bool, item_id: int | None, caller: int | None) -> Any:
    """One item of the alphabet: ``kind`` 0-8 picks other, reasoning (twice as likely),
    call, output (both twice as likely), user, or a produced message."""
    call_type = _CALL_TYPES.get(pair, "function_call")
    if kind in (3, 4):
        item: dict[str, Any] = {"type": call_type, "call_id": f"p{pair}"}
        if pair == SHELL:
            item["status"] = "in_progress" if pending else "completed"
    elif kind in (5, 6):
        item = {"type": f"{call_type}_output", "call_id": f"p{pair}"}
    else:
        item = dict(_ITEMS[kind])
    if item_id is not None:
        item["id"] = f"i{item_id}"
    if caller is not None:
        item["caller"] = {"type": "program", "caller_id": f"p{caller}"}
    return item


def _random_list(rng: random.Random, longest: int) -> list[Any]:
    return [
        _item(
            rng.randrange(9),
            rng.randrange(7),
            rng.randrange(2) == 0,
            rng.randrange(6) if rng.randrange(2) == 0 else None,
            rng.randrange(PROGRAMS) if rng.randrange(3) == 0 else None,
        )
        for _ in range(rng.randrange(longest + 1))
    ]


alphabet_items = st.builds(
    _item,
    st.integers(0, 8),
    st.integers(0, 6),
    st.booleans(),
    st.none() | st.integers(0, 5),
    st.none() | st.integers(0, PROGRAMS - 1),
)


def loop_repair(items: list[Any], history: list[Any] | None) -> tuple[list[Any], int]:
    """The rule as written: drop every unit holding a fixable problem (never a user
    message), check the whole list again, until none is left; and how many rounds."""
    stored = input_rules._read_history(history)
    current = list(items)
    for round_count in range(len(items) + 1):
        facts = input_rules._Facts(current)
        lost = input_rules._lost_successors(facts, stored._successor)
        problems = input_rules._fixable(facts, input_rules._problems(facts, stored._required, lost))
        if not problems:
            return current, round_count
        roots = input_rules.repair_unit_roots(current, history=stored)
        broken = {roots[position] for position, _, _ in problems}
        current = [
            item
            for position, item in enumerate(current)
            if facts.kinds[position] == input_rules._USER or roots[position] not in broken
        ]
    raise AssertionError("every round drops at least one item")


def test_incremental_rounds_match_the_loop(engine: ModuleType) -> None:
    rng = random.Random(0x9E3779B9)
    rounds_seen = [0, 0, 0, 0]
    for _ in range(4000):
        items = _random_list(rng, 14)
        history = _random_list(rng, 10) if rng.randrange(2) == 0 else None
        expected, round_count = loop_repair(items, history)
        rounds_seen[min(round_count, 3)] += 1
        repaired = engine.repair_input(items, history=history)
        assert positions(repaired, items) == positions(expected, items), (items, history)
    # The cases cover repairs of more than one round (counts for this seed).
    assert rounds_seen[2] > 50, rounds_seen
    assert rounds_seen[3] > 5, rounds_seen


@settings(max_examples=examples(300), deadline=None)
@given(
    items=st.lists(alphabet_items, max_size=16),
    history=st.none() | st.lists(alphabet_items, max_size=10),
)
def test_incremental_rounds_match_the_loop_on_drawn_lists(
    engine: ModuleType, items: list[Any], history: list[Any] | None
) -> None:
    expected, _ = loop_repair(items, history)
    assert positions(engine.repair_input(items, history=history), items) == positions(
        expected, items
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    items=st.lists(alphabet_items, max_size=16),
    history=st.none() | st.lists(alphabet_items, max_size=10),
)
def test_synthesize_is_the_loop_after_the_marked_outputs(
    pure: ModuleType, core: ModuleType, items: list[Any], history: list[Any] | None
) -> None:
    # "synthesize" first puts an output after each function call lacking one (not a
    # trailing call awaiting approval), then repairs as "drop": the engines agree, and
    # what comes back breaks no rule but a duplicate id between user messages.
    dangling = {
        position
        for position, kind, _ in input_rules.input_problems(items, history=history)
        if kind == "call_without_output"
    }
    augmented: list[Any] = []
    for position, item in enumerate(items):
        augmented.append(item)
        if position in dangling and item.get("type") == "function_call":
            augmented.append(
                {"type": "function_call_output", "call_id": item["call_id"], "output": LOST}
            )
    expected, _ = loop_repair(augmented, history)
    repaired = core.repair_input(items, history=history, dangling="synthesize")
    assert repaired == pure.repair_input(items, history=history, dangling="synthesize")
    assert repaired == expected
    left = pure.input_problems(repaired, history=history)
    assert all(repaired[position].get("role") == "user" for position, _, _ in left)


def test_a_long_chain_of_programs_goes_whole(engine: ModuleType) -> None:
    # Program k issues program k + 1's call, the last one an orphan call: each round of
    # the loop would drop one program (n rounds over n items); the engines make one pass.
    length = 3000
    items: list[Any] = [{"type": "program", "call_id": "p0"}]
    for k in range(1, length):
        items.append(
            {"type": "program", "call_id": f"p{k}"}
            | {"caller": {"type": "program", "caller_id": f"p{k - 1}"}}
        )
    items.append(
        {"type": "function_call", "call_id": "orphan"}
        | {"caller": {"type": "program", "caller_id": f"p{length - 1}"}}
    )
    items.append({"role": "user", "content": "next"})
    assert [kind for _, kind, _ in engine.input_problems(items)] == ["call_without_output"]
    assert engine.repair_input(items) == [items[-1]]


def test_an_item_whose_reasoning_went_goes_next_and_then_its_program(engine: ModuleType) -> None:
    # History: the output was stored right after reasoning i0, so it needs i0 before it.
    history = [{"type": "reasoning", "id": "i0"}, {"type": "function_call_output", "id": "i1"}]
    owned = {"caller": {"type": "program", "caller_id": "p0"}}
    items = [
        {"type": "program", "call_id": "p0"},  # no output: exempt while it issued a later item
        {"type": "function_call", "call_id": "c1"} | owned,
        {"type": "reasoning", "id": "i0"},  # round 1: no item of its own after it
        {"type": "function_call_output", "call_id": "c1", "id": "i1"} | owned,  # round 2
        {"role": "user", "content": "next"},
    ]
    expected, rounds = loop_repair(items, history)
    assert rounds == 3  # then the program, whose issued items all went
    assert expected == [items[-1]]
    assert engine.repair_input(items, history=history) == expected
