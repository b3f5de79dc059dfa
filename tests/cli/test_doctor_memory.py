"""``histcore doctor`` keeps no decoded item of a session: each row is decoded once,
to the few fields the rules read (``histcore.cli.doctor.facts``), and those stand-ins
answer every rule exactly as the items do, on either engine."""

from __future__ import annotations

import os
import random
import weakref
from typing import Any

import pytest

import histcore.items
from histcore.cli.doctor import check, read
from histcore.cli.doctor.facts import stand_in
from histcore.engine.pairing import pair_key, tool_role
from tests.cli.test_doctor import call, output, run_cli, user
from tests.cli.test_doctor_rules import make_store, stored


class _Tracked(dict[str, Any]):
    """A decoded item the test can watch die (a plain dict takes no weak reference)."""

    __slots__ = ("__weakref__",)


def test_no_decoded_item_is_alive_when_the_rules_run(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.path.join(tmp_path, "store.db")
    rows = [user("q"), call("c1"), output("c1"), call("c1", 2), output("c1", "y"), "[1]"]
    make_store(path, {"s": [*rows, output("lost")], "t": [user("x"), call("c2")]})
    decoded: list[weakref.ref[_Tracked]] = []
    real_decode, real_analyse = read.decode_json, check.analyse

    def tracked_decode(data: Any) -> Any:
        value = real_decode(data)
        if type(value) is dict:
            value = _Tracked(value)
            decoded.append(weakref.ref(value))
        return value

    def analyse_checked(found: Any) -> Any:
        assert [ref for ref in decoded if ref() is not None] == []
        return real_analyse(found)

    monkeypatch.setattr(read, "decode_json", tracked_decode)
    monkeypatch.setattr(check, "analyse", analyse_checked)
    code, out, err = run_cli(path, "--fix")
    assert (code, err) == (1, ""), out
    assert "fixed: 3 row(s) removed" in out
    assert len(decoded) == 8, "each item row decoded once, the repair's check included"


# --- stand-ins answer as the items do ---------------------------------------------------

_BY_P1 = {"type": "program", "caller_id": "p1"}
_POOL: list[dict[str, Any]] = [
    user("q"),
    {"role": "system", "content": "s", "id": "sys1"},
    {"type": "message", "role": "assistant", "id": "m1", "content": [{"type": "output_text"}]},
    {"type": "message", "role": ["odd"], "id": "m2"},
    {"type": "message", "role": 7, "id": "m3"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "reasoning", "id": "rs_2", "summary": [], "role": None},
    {"type": "reasoning", "id": ["not", "a", "str"]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc1"},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "m1"},
    {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    {"type": "function_call_output", "call_id": "c2", "output": {"nested": [1]}},
    {"type": "custom_tool_call", "call_id": "c3", "id": "__fake_id__"},
    {"type": "custom_tool_call_output", "call_id": "c3", "output": "x"},
    {"type": "program", "call_id": "p1", "id": "pr1"},
    {"type": "program_output", "call_id": "p1", "output": "done"},
    {"type": "web_search_call", "id": "ws1", "caller": _BY_P1},
    {"type": "shell_call", "call_id": "s1", "status": "in_progress", "caller": _BY_P1},
    {"type": "shell_call", "call_id": "s2", "caller": _BY_P1},
    {"type": "shell_call", "call_id": "s3", "status": {"odd": 1}, "caller": _BY_P1},
    {
        "type": "shell_call",
        "call_id": "s4",
        "status": True,
        "caller": {"type": "program", "caller_id": 5},
    },
    {"type": "shell_call", "call_id": "s5", "status": "completed", "caller": ["program"]},
    {"type": "shell_call", "call_id": "s6", "caller": {"type": "tool", "caller_id": "p1"}},
    {"type": "shell_call_output", "call_id": "s1", "output": []},
    {"type": ["function_call"], "call_id": "c9", "id": "t1"},
    {"type": 3, "id": "t2"},
    {"type": "mcp_approval_response", "id": "ar1", "approval_request_id": "q1"},
    {"type": "item_reference", "id": "rs_1"},
    {"type": "message", "role": "assistant", "id": 12.5},
]


def _answers(items: list[dict[str, Any]]) -> list[Any]:
    """What every rule the doctor applies says of ``items`` (objects as positions)."""
    position = {id(item): index for index, item in enumerate(items)}
    tools = [item for item in items if tool_role(item) is not None]
    return [
        histcore.items.input_problems(items),
        histcore.items.input_problems(items, history=items),
        histcore.items.input_problems(items[1:], history=items),
        [position[id(item)] for item in histcore.items.repair_input(items, history=items)],
        [position[id(item)] for item in histcore.items.repair_input(items[::2], history=items)],
        [(tool_role(item), pair_key(item)) for item in tools],
        histcore.items.dedupe_keys(tools),
        [
            position[id(item)]
            for item in histcore.items.deduplicate_input_items_preferring_latest(tools)
        ],
    ]


def test_stand_ins_answer_every_rule_as_the_items_do() -> None:
    chosen = random.Random(20261204)
    lists = [_POOL, _POOL[::-1]]
    lists += [chosen.choices(_POOL, k=chosen.randint(1, 14)) for _ in range(400)]
    for items in lists:
        items = [dict(item) for item in items]  # distinct objects, as decoded rows are
        assert _answers([stand_in(item) for item in items]) == _answers(items), items


def test_a_stand_in_keeps_only_what_the_rules_read() -> None:
    item = call("c1") | {"id": "fc_1", "caller": {"type": "program", "caller_id": "p", "x": 1}}
    assert stand_in(item) == {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c1",
        "caller": {"type": "program", "caller_id": "p"},
    }
    assert stand_in({"type": "message", "role": "user", "content": "x" * 1000}) == {
        "type": "message",
        "role": "user",
    }


def test_a_rewritten_row_takes_its_source_as_stored(tmp_path: Any) -> None:
    # The repair reads the data of the rows it copies under the write lock: TEXT stays
    # TEXT, BLOB stays BLOB, whatever was read while planning.
    path = os.path.join(tmp_path, "store.db")
    make_store(path, {"s": [user("q"), call("c1"), call("c1", 2), output("c1")]})
    before = stored(path, "s")
    code, out, _ = run_cli(path, "--fix")
    assert code == 0, out
    assert stored(path, "s") == [before[0], (before[1][0], before[2][1]), before[3]]
