"""``install(guard=True)`` with the real SDK: every model input breaks no rule.

Histories damaged the way the SDK's reported bugs damage them are written through the
SDK's own ``SQLiteSession``; then a turn runs with ``Runner.run`` and
``Runner.run_streamed``, plain and guarded. The guarded model inputs must break no
model-input rule and keep every user message in order; the store must stay as it was;
and a generated differential test holds the guard's input to ``repair_input`` of the
plain SDK's input with the stored history.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunConfig,
    RunContextWrapper,
    Runner,
    SQLiteSession,
    function_tool,
    output_guardrail,
)
from agents.exceptions import OutputGuardrailTripwireTriggered
from agents.memory import SessionSettings
from agents.run_config import CallModelData, ModelInputData
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import histcore.openai_agents as accelerator
from histcore.engine import items as engine_items
from histcore.engine.vocabulary import CALL_TO_OUTPUT_TYPE
from histcore.items import input_problems, repair_input
from histcore.openai_agents._guard import GuardCounts, make_guarded_dedupe, unfit
from histcore.openai_agents._guard_link import GuardLink
from histcore.openai_agents._replacements import make_deduplicate
from histcore.openai_agents.testing import SDKScriptedModel
from tests.support.examples import examples


@function_tool
def lookup(city: str) -> str:
    return f"sunny in {city}"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str, item_id: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(call_id: str, kind: str = "function_call", item_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": kind, "call_id": call_id, "status": "completed"}
    if kind == "function_call":
        item.update(name="lookup", arguments='{"city": "Oslo"}')
    if item_id is not None:
        item["id"] = item_id
    return item


def output(call_id: str, kind: str = "function_call_output") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": "sunny"}


def reasoning(item_id: str) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning", "summary": []}


def clean_start() -> list[dict[str, Any]]:
    return [user("hi"), said("hello", "msg_a")]


#: name -> (stored history, session settings or None). Each breaks a rule as stored.
SHAPES: dict[str, list[dict[str, Any]]] = {
    **{
        f"output_without_call[{kind}]": [*clean_start(), output("lost", out), said("ok", "msg_b")]
        for kind, out in CALL_TO_OUTPUT_TYPE.items()
    },
    "reasoning_without_item": [*clean_start(), reasoning("rs_x"), user("next")],
    "reasoning_run_at_end": [*clean_start(), reasoning("rs_y"), reasoning("rs_z")],
    "output_before_call": [user("hi"), output("c1"), call("c1", item_id="fc_1"), said("x", "m1")],
    "duplicate_ids": [user("hi"), said("one", "msg_same"), user("again"), said("two", "msg_same")],
    "lost_call_in_long_history": [
        *[item for n in range(40) for item in (user(f"q{n}"), said(f"a{n}", f"msg_{n}"))],
        output("gone"),
        said("done", "msg_end"),
    ],
}


def user_texts(items: list[Any]) -> list[Any]:
    return [i.get("content") for i in items if isinstance(i, dict) and i.get("role") == "user"]


@pytest.fixture
def guarded() -> Iterator[accelerator.Installation]:
    accelerator.uninstall()
    with accelerator.installed(guard=True) as installation:
        yield installation


def run_turn(
    db: Path,
    stored: list[dict[str, Any]] | None,
    *,
    streamed: bool,
    text: str = "Paris",
    run_config: RunConfig | None = None,
    settings_: SessionSettings | None = None,
) -> tuple[SDKScriptedModel, list[Any]]:
    """One turn on a session holding ``stored`` (written by the SDK): the model, and the
    stored rows before the turn."""

    async def main() -> list[Any]:
        session = SQLiteSession("s", db, session_settings=settings_)
        if stored is not None:
            await session.clear_session()
            await session.add_items(stored)
        whole = SQLiteSession("s", db)  # the whole store, whatever the window
        before = await whole.get_items()
        agent = Agent(name="a", model=model, tools=[lookup])
        if streamed:
            result = Runner.run_streamed(agent, text, session=session, run_config=run_config)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, text, session=session, run_config=run_config)
        after = await whole.get_items()
        assert after[: len(before)] == before, "the stored history changed"
        session.close()
        whole.close()
        return before

    model = SDKScriptedModel(placeholder_every=0)
    return model, asyncio.run(main())


def model_inputs(model: SDKScriptedModel) -> list[list[Any]]:
    return [json.loads(text) for text in model.inputs]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_damage_shape_is_repaired(
    shape: str, streamed: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stored = SHAPES[shape]
    plain, _ = run_turn(tmp_path / "plain.db", stored, streamed=streamed)
    # The SDK alone sends the damage on (or the shape is not damage at all).
    assert input_problems(model_inputs(plain)[0]), shape
    with accelerator.installed(guard=True) as installation:
        assert installation.guard is not None
        with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
            model, before = run_turn(tmp_path / "guarded.db", stored, streamed=streamed)
        counts = installation.guard
        assert counts.checked == len(model.inputs)
        assert counts.repaired >= 1
        assert counts.dropped >= 1
        assert sum(counts.rules.values()) >= 1
    sent = model_inputs(model)
    for items in sent:
        assert input_problems(items) == [], (shape, items)
    assert user_texts(sent[0]) == [*user_texts(before), "Paris"]
    warnings = [r for r in caplog.records if r.name == "histcore.openai_agents"]
    # Once per session and problem, however many of the turn's model inputs repeat it.
    assert len(model.inputs) >= 2
    assert len(warnings) == counts.warnings == 1
    message = warnings[0].getMessage()
    assert "session 's'" in message
    assert "histcore doctor --fix" in message
    assert str(tmp_path / "guarded.db") in message


def test_the_guard_drops_exactly_what_repair_input_drops(tmp_path: Path) -> None:
    stored = [*clean_start(), output("lost"), reasoning("rs_1"), said("x", "m1"), reasoning("rs_2")]
    plain, before = run_turn(tmp_path / "plain.db", stored, streamed=False)
    with accelerator.installed(guard=True):
        model, _ = run_turn(tmp_path / "guarded.db", stored, streamed=False)
    first = model_inputs(plain)[0]
    assert model_inputs(model)[0] == repair_input(first, history=before)


RUN_LOOP_STAND_IN = """
def maybe_filter_model_input(input):
    return input

def run_single_turn_streamed(input, session=None, server_conversation_tracker=None):
    return deduplicate_input_items_preferring_latest(maybe_filter_model_input(input))

def get_new_response(input, session=None, server_conversation_tracker=None):
    return deduplicate_input_items_preferring_latest(maybe_filter_model_input(input))

def elsewhere(input, session=None, server_conversation_tracker=None):
    return deduplicate_input_items_preferring_latest(input)
"""


def stand_in_run_loop(
    dedupe: Callable[[Sequence[Any]], list[Any]] | None = None,
    link: GuardLink | None = None,
) -> tuple[ModuleType, GuardCounts]:
    """A module shaped like the SDK's run loop (the two model-input callers and one
    other caller), with the guard bound over ``dedupe`` (default: the identity)."""
    module = ModuleType("run_loop_stand_in")
    exec(RUN_LOOP_STAND_IN, vars(module))
    assert unfit(module) is None
    counts = GuardCounts()
    vars(module)["deduplicate_input_items_preferring_latest"] = make_guarded_dedupe(
        dedupe or (lambda items: items), module, counts, link or GuardLink()
    )
    return module, counts


def test_a_clean_input_passes_as_the_same_list() -> None:
    module, counts = stand_in_run_loop()
    items = [user("hi"), reasoning("rs_1"), call("c1", item_id="fc_1"), output("c1")]
    members = list(map(id, items))
    assert module.get_new_response(items) is items
    assert module.run_single_turn_streamed(items) is items
    assert list(map(id, items)) == members
    assert (counts.checked, counts.repaired, counts.dropped) == (2, 0, 0)


def test_the_guard_counts_its_own_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    module, counts = stand_in_run_loop()
    assert counts.seconds == 0.0
    # (start, dedupe start, dedupe end, end) of each checked input
    ticks = iter([10.0, 10.1, 10.3, 10.35, 20.0, 20.05, 20.45, 20.5])
    monkeypatch.setattr("histcore.openai_agents._guard.time.perf_counter", lambda: next(ticks))
    module.get_new_response([user("hi")])  # clean
    module.elsewhere([user("hi")])  # not a model input: neither counted nor timed
    module.get_new_response([user("hi"), output("lost")])  # repaired
    assert counts.seconds == pytest.approx(0.15 + 0.1)
    assert counts.dedupe_seconds == pytest.approx(0.2 + 0.4)
    assert counts.checked == 2
    assert "seconds" not in repr(counts)  # the repr stays the same from run to run


def test_only_the_model_input_callers_are_guarded() -> None:
    module, counts = stand_in_run_loop()
    broken = [user("hi"), output("lost")]
    assert module.elsewhere(broken) is broken
    assert counts.checked == 0
    assert module.get_new_response(broken) == [user("hi")]
    assert (counts.checked, counts.repaired, counts.dropped) == (1, 1, 1)
    assert counts.rules == {"output_without_call": 1}


def test_server_managed_checks_only_what_is_sent() -> None:
    """Outputs whose call the server may hold stay; what the input alone shows goes."""
    module, counts = stand_in_run_loop()
    tracker = object()
    sent = [output("on_server"), reasoning("rs_end")]
    assert module.get_new_response(sent, server_conversation_tracker=tracker) == [sent[0]]
    assert counts.rules == {"reasoning_without_item": 1}


def test_pending_hosted_shell_calls_stay() -> None:
    module, _ = stand_in_run_loop()
    pending = {"type": "shell_call", "call_id": "sh1", "status": "in_progress", "id": "sh_1"}
    items = [user("run it"), pending]
    assert module.get_new_response(items) is items


def test_a_run_loop_of_another_shape_is_refused() -> None:
    module = ModuleType("other")
    exec("def run_single_turn_streamed(input):\n    return input\n", vars(module))
    reason = unfit(module)
    assert reason is not None
    assert "get_new_response" in reason or "dedupe" in reason


def test_a_run_loop_with_another_filter_caller_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # The guarded filter does not look at its caller: the guard installs only where the
    # two model-input callers are the run loop's only users of the filter.
    import agents.run_internal.run_loop as sdk_run_loop

    namespace: dict[str, Any] = {}
    exec("async def elsewhere(**kw):\n    return await maybe_filter_model_input(**kw)\n", namespace)
    function = namespace["elsewhere"]
    function.__module__ = sdk_run_loop.__name__
    monkeypatch.setattr(sdk_run_loop, "elsewhere", function, raising=False)
    accelerator.uninstall()
    try:
        with pytest.warns(RuntimeWarning, match="guard"):
            installation = accelerator.install(guard=True)
        assert installation.guard is None
        assert "elsewhere" in installation.skipped["guard"]
    finally:
        accelerator.uninstall()


def test_the_guard_reaches_the_dedupe_s_checking_pass_through_the_installation() -> None:
    import agents.run_internal.items as sdk_items

    accelerator.uninstall()
    try:
        accelerator.install(guard=True)
        installed = sdk_items.deduplicate_input_items_preferring_latest
        # An explicit link the installation holds, not an attribute on the function.
        assert "checked_dedupe" not in vars(installed)
        checked = accelerator._link.checked_of(installed)
        assert checked is not None
        items = [user("hi"), output("lost")]
        kept, problems = checked(items, None)
        assert kept == items
        assert [kind for _, kind, _ in problems] == ["output_without_call"]
    finally:
        accelerator.uninstall()
    assert accelerator._link.checked_of(installed) is None


def dropping_calls(history: list[Any], new: list[Any]) -> list[Any]:
    return [item for item in history if item.get("type") != "function_call"] + new


def filter_dropping_calls(data: CallModelData[Any]) -> ModelInputData:
    """Drops the stored call (the turn's own calls stay, so the run ends)."""
    items = [i for i in data.model_data.input if i.get("call_id") != "c0" or "output" in i]
    return ModelInputData(input=items, instructions=data.model_data.instructions)


HISTORY_WITH_CALLS = [
    user("weather?"),
    reasoning("rs_0"),
    call("c0", item_id="fc_0"),
    output("c0"),
    said("sunny", "msg_0"),
]

CONFIGS: dict[str, tuple[RunConfig | None, SessionSettings | None, list[Any]]] = {
    "session_input_callback": (
        RunConfig(session_input_callback=dropping_calls),
        None,
        HISTORY_WITH_CALLS,
    ),
    "call_model_input_filter": (
        RunConfig(call_model_input_filter=filter_dropping_calls),
        None,
        HISTORY_WITH_CALLS,
    ),
    # The window of the last 2 items starts at the output: its call is cut off.
    "window_cuts_a_call": (None, SessionSettings(limit=2), HISTORY_WITH_CALLS),
    # The window of the last 3 starts at the call: its reasoning item is cut off.
    "window_cuts_reasoning": (None, SessionSettings(limit=3), HISTORY_WITH_CALLS),
}


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_callbacks_filters_and_windows(
    case: str, streamed: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, window, stored = CONFIGS[case]
    plain, _ = run_turn(
        tmp_path / "p.db", stored, streamed=streamed, run_config=config, settings_=window
    )
    first = model_inputs(plain)[0]
    # The SDK prunes an output its window cut from its call by itself.
    broken = case != "window_cuts_a_call"
    assert bool(input_problems(first, history=stored)) is broken, case
    with accelerator.installed(guard=True) as installation:
        with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
            model, _ = run_turn(
                tmp_path / "g.db", stored, streamed=streamed, run_config=config, settings_=window
            )
        assert installation.guard is not None
        assert (installation.guard.repaired >= 1) is broken
    # The store is fine: the callback, filter or window broke the input, not the store.
    warnings = [r.getMessage() for r in caplog.records if r.name == "histcore.openai_agents"]
    assert len(warnings) == int(broken)
    assert all("The stored history is fine" in message for message in warnings)
    assert not any("doctor" in message for message in warnings)
    if not broken:
        assert model.inputs == plain.inputs
    for items in model_inputs(model):
        assert input_problems(items, history=stored) == [], (case, items)
        assert "Paris" in user_texts(items)


def test_approval_interruption_and_resume(tmp_path: Path) -> None:
    @function_tool(needs_approval=True)
    def delete_file(name: str) -> str:
        return f"deleted {name}"

    model = SDKScriptedModel(tool_name="delete_file", argument="name", placeholder_every=0)

    async def main() -> None:
        session = SQLiteSession("s", tmp_path / "db")
        await session.add_items(SHAPES["reasoning_without_item"])
        agent = Agent(name="a", model=model, tools=[delete_file])
        result = await Runner.run(agent, "notes.txt", session=session)
        assert result.interruptions, "the tool should wait for approval"
        state = result.to_state()
        for interruption in result.interruptions:
            state.approve(interruption)
        resumed = await Runner.run(agent, state, session=session)
        assert resumed.final_output
        session.close()

    with accelerator.installed(guard=True) as installation:
        asyncio.run(main())
        assert installation.guard is not None
        assert installation.guard.checked == len(model.inputs) >= 2
    for items in model_inputs(model):
        assert input_problems(items) == [], items


@output_guardrail
async def refuse_every_answer(
    context: RunContextWrapper[Any], agent: Agent[Any], answer: Any
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="refused", tripwire_triggered=True)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_approval_with_an_output_guardrail(streamed: bool, tmp_path: Path) -> None:
    """The shape of openai-agents-python #4827: the store holds an approved tool's output
    without its call; the next run waits for another approval, its resume ends in a
    tripped output guardrail, and the conversation goes on (to the next approval)."""

    @function_tool(needs_approval=True)
    def delete_file(name: str) -> str:
        return f"deleted {name}"

    model = SDKScriptedModel(tool_name="delete_file", argument="name", placeholder_every=0)
    stored = [*clean_start(), user("delete notes.txt"), output("approved_call")]

    async def run(agent: Agent[Any], given: Any, session: SQLiteSession) -> Any:
        if not streamed:
            return await Runner.run(agent, given, session=session)
        result = Runner.run_streamed(agent, given, session=session)
        async for _ in result.stream_events():
            pass
        return result

    async def main() -> list[Any]:
        session = SQLiteSession("s", tmp_path / "db")
        await session.add_items(stored)
        agent = Agent(
            name="a", model=model, tools=[delete_file], output_guardrails=[refuse_every_answer]
        )
        try:
            result = await run(agent, "then delete old.txt", session)
            assert result.interruptions, "the tool should wait for approval"
            state = result.to_state()
            for interruption in result.interruptions:
                state.approve(interruption)
            with pytest.raises(OutputGuardrailTripwireTriggered):
                await run(agent, state, session)
            assert (await run(agent, "and now?", session)).interruptions
            return await session.get_items()
        finally:
            session.close()

    with accelerator.installed(guard=True) as installation:
        after = asyncio.run(main())
        assert installation.guard is not None
        assert installation.guard.checked == len(model.inputs) >= 3
        assert installation.guard.repaired == len(model.inputs)
    assert after[: len(stored)] == stored, "the guard wrote to the store"
    asked = ["hi", "delete notes.txt", "then delete old.txt", "and now?"]
    for items in model_inputs(model):
        assert input_problems(items) == [], items
        assert user_texts(items) == asked[: len(user_texts(items))]
    assert user_texts(model_inputs(model)[-1]) == asked


def test_server_managed_outputs_are_kept(tmp_path: Path) -> None:
    """With previous_response_id the server holds the call: its output is not dropped."""
    model = SDKScriptedModel(placeholder_every=0)
    stored_output = output("held_by_server")

    async def main() -> None:
        agent = Agent(name="a", model=model, tools=[lookup])
        await Runner.run(agent, [user("go"), stored_output], previous_response_id="resp_1")

    with accelerator.installed(guard=True) as installation:
        asyncio.run(main())
        assert installation.guard is not None
        assert installation.guard.repaired == 0
    assert model_inputs(model)[0][-1]["call_id"] == "held_by_server"


def test_without_guard_install_sends_what_the_sdk_sends(tmp_path: Path) -> None:
    stored = SHAPES["reasoning_without_item"]
    plain, _ = run_turn(tmp_path / "p.db", stored, streamed=False)
    with accelerator.installed() as installation:
        assert installation.guard is None
        fast, _ = run_turn(tmp_path / "f.db", stored, streamed=False)
    assert fast.inputs == plain.inputs


def test_guard_added_and_removed_by_the_context_manager() -> None:
    with accelerator.installed() as plain:
        assert plain.guard is None
        with accelerator.installed(guard=True) as guarded_:
            assert guarded_.guard is not None
            assert accelerator.installation() is guarded_
        current = accelerator.installation()
        assert current is not None
        assert current.guard is None
        assert current.replaced == plain.replaced
    assert not accelerator.is_installed()


# --- generated: the guard's input is repair_input of the plain SDK's -----------------

_IDS = st.sampled_from(["m1", "m2", "rs1", "fc1", None])


@st.composite
def damaged_histories(draw: Callable[..., Any]) -> list[dict[str, Any]]:
    pieces = st.one_of(
        st.builds(lambda n: user(f"u{n}"), st.integers(0, 3)),
        st.builds(lambda i: said("s", i or "msg"), _IDS),
        st.builds(lambda i: reasoning(i or "rs"), _IDS),
        st.builds(lambda c, i: call(c, item_id=i), st.sampled_from(["c1", "c2"]), _IDS),
        st.builds(output, st.sampled_from(["c1", "c2", "c3"])),
    )
    return list(draw(st.lists(pieces, min_size=1, max_size=12)))


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stored=damaged_histories())
# A stored reasoning run: allowed by the history, flagged by rule (f) on the input alone.
@example(stored=[reasoning("m1"), reasoning("m2"), said("s", "rs1")])
def test_generated_damage_matches_repair_input(
    stored: list[dict[str, Any]], tmp_path: Path
) -> None:
    db = tmp_path / "gen.db"
    plain, before = run_turn(db, stored, streamed=False)
    with accelerator.installed(guard=True):
        model, _ = run_turn(db, stored, streamed=False)
    assert model_inputs(model)[0] == repair_input(model_inputs(plain)[0], history=before)
    # Checked against the stored history, as the guard checks: without it, rule (f)
    # falls back to the input alone and flags a stored reasoning run the history allows.
    for items in model_inputs(model):
        assert input_problems(items, history=before) == []


def test_rule_e_of_a_kept_history_is_read_once(
    guarded: accelerator.Installation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns on one SDK ``SQLiteSession`` object: rule (e) of its history is kept with
    the session's kept history, each turn reading only the rows stored since the last,
    and the guard still repairs against all of it."""
    from histcore.openai_agents import _session_read

    reads: list[tuple[int, int, int]] = []  # (facts object, items read before, after)
    real = _session_read._History.stored_history

    def noting(history: Any, length: int) -> Any:
        before = 0 if history.stored is None else len(history.stored)
        stored = real(history, length)
        reads.append((id(stored), before, len(stored)))
        return stored

    monkeypatch.setattr(_session_read._History, "stored_history", noting)
    # m1 was stored right after rs_1: an input holding m1 without rs_1 breaks rule (e).
    stored = [user("hi"), reasoning("rs_1"), said("x", "m1")]
    models = [SDKScriptedModel(placeholder_every=0, id_prefix=f"t{turn}_") for turn in range(4)]

    def drop_reasoning(history: list[Any], new: list[Any]) -> list[Any]:
        return [item for item in history if item.get("type") != "reasoning"] + new

    async def main() -> list[int]:
        session = SQLiteSession("s", tmp_path / "kept.db")
        await session.add_items(stored)
        sizes = []
        for model, text in zip(models[:3], ("one", "two", "three"), strict=True):
            await Runner.run(Agent(name="a", model=model, tools=[lookup]), text, session=session)
            sizes.append(len(await session.get_items()))
        config = RunConfig(session_input_callback=drop_reasoning)
        agent = Agent(name="a", model=models[3], tools=[lookup])
        await Runner.run(agent, "four", session=session, run_config=config)
        session.close()
        return sizes

    sizes = asyncio.run(main())
    facts = {facts for facts, _, _ in reads}
    assert len(facts) == 1, "one facts object for the session's kept history"
    assert [(before, after) for _, before, after in reads[:3]] == [
        (0, len(stored)),
        (len(stored), sizes[0]),
        (sizes[0], sizes[1]),
    ]
    first = model_inputs(models[3])[0]
    assert [item.get("content") for item in first if item.get("role") == "user"] == [
        "hi",
        "one",
        "two",
        "three",
        "four",
    ]
    assert not any(item.get("id") == "m1" for item in first), "rule (e) still applies"
    assert guarded.guard.rules["item_without_reasoning"] >= 1


def test_kept_facts_never_cover_more_than_was_handed_out() -> None:
    from histcore.openai_agents._session_read import _History

    history = _History(("s", "messages", ""), [reasoning("rs_1"), said("x", "m1")], 2, 2, 0, 0)
    first = history.stored_history(1)
    assert first is not None
    assert len(first) == 1
    assert history.stored_history(2) is first
    assert len(first) == 2
    # Another thread's later read went further: the guard reads its own items instead.
    assert history.stored_history(1) is None


def _sdk_like_dedupe(items: Sequence[Any]) -> list[Any]:
    return list(engine_items.deduplicate_input_items_preferring_latest(items))


@given(items=damaged_histories())
@settings(max_examples=examples(100), deadline=None)
def test_histcore_dedupe_checks_in_its_own_pass(items: list[Any]) -> None:
    # Over histcore's dedupe the guard takes the kept items and their problems from one
    # engine call; over any other dedupe, it dedupes and then checks. Same answers.
    link = GuardLink()
    fused = make_deduplicate(_sdk_like_dedupe, True, link=link)
    checked = link.checked_of(fused)
    assert checked is not None
    calls: list[int] = []

    def counting(items: Sequence[Any], history: Any) -> Any:
        calls.append(len(items))
        return checked(items, history)

    link.record(fused, counting)
    results = []
    for dedupe in (fused, _sdk_like_dedupe):
        module, counts = stand_in_run_loop(dedupe, link)
        kept = module.get_new_response(list(items))
        results.append(([id(item) for item in kept], repr(counts)))
    assert results[0] == results[1]
    assert calls == [len(items)]


def test_the_guard_dedupes_itself_where_the_engine_declines() -> None:
    link = GuardLink()
    fused = make_deduplicate(_sdk_like_dedupe, True, link=link)
    module, counts = stand_in_run_loop(fused, link)

    class Text(str):
        pass

    items = [user("hi"), {"type": "function_call_output", "call_id": Text("lost")}]
    assert module.get_new_response(items) == items[:1]
    assert (counts.checked, counts.repaired, counts.dropped) == (1, 1, 1)


# --- a filter's input of any iterable type ------------------------------------------


def filter_returning(make: Callable[[list[Any]], Any]) -> Callable[..., ModelInputData]:
    """A ``call_model_input_filter`` handing back the input as ``make`` builds it."""

    def model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        return ModelInputData(input=make(items), instructions=data.model_data.instructions)

    return model_input_filter


ITERABLES: dict[str, Callable[[list[Any]], Any]] = {
    "tuple": tuple,
    "generator": lambda items: (item for item in items),
    "deque": deque,
}


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", sorted(ITERABLES))
def test_a_filter_returning_any_iterable_is_checked_as_its_list(
    kind: str, streamed: bool, tmp_path: Path
) -> None:
    """The SDK dedupes (and so the guard checked) only a list, but its model layer sends
    any iterable as a list: a tuple from the filter carried a stored orphan output to
    the model unchecked (``checked=0``)."""
    stored = SHAPES["output_without_call[function_call]"]
    listed = RunConfig(call_model_input_filter=filter_returning(list))
    other = RunConfig(call_model_input_filter=filter_returning(ITERABLES[kind]))
    with accelerator.installed(guard=True) as installation:
        as_list, _ = run_turn(tmp_path / "l.db", stored, streamed=streamed, run_config=listed)
        assert installation.guard is not None
        list_counts = repr(installation.guard)
    with accelerator.installed(guard=True) as installation:
        model, _ = run_turn(tmp_path / "t.db", stored, streamed=streamed, run_config=other)
        counts = installation.guard
        assert counts is not None
        assert counts.checked == counts.repaired == len(model.inputs) >= 2
        assert repr(counts) == list_counts
    assert model.inputs == as_list.inputs
    for items in model_inputs(model):
        assert input_problems(items) == [], items


# --- a dedupe rebound after install ---------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("how", ["replacing", "wrapping", "dict_write"])
def test_a_dedupe_rebound_after_install_is_still_guarded(
    how: str, streamed: bool, tmp_path: Path
) -> None:
    """Rebinding the run loop's dedupe after ``install(guard=True)`` turned the guard
    off silently: the model-input callers called the new function, and a wrapper of the
    guard called it from its own frame, which the guard took for another caller."""
    import agents.run_internal.items as sdk_items
    import agents.run_internal.run_loop as sdk_run_loop

    name = "deduplicate_input_items_preferring_latest"
    accelerator.uninstall()
    before = vars(sdk_run_loop)[name]
    calls: list[int] = []
    try:
        with accelerator.installed(guard=True) as installation:
            guard = vars(sdk_run_loop)[name]
            inner = (
                guard if how == "wrapping" else sdk_items.deduplicate_input_items_preferring_latest
            )

            def rebound(items: Sequence[Any]) -> list[Any]:
                calls.append(len(items))
                return inner(items)

            if how == "dict_write":
                vars(sdk_run_loop)[name] = rebound
            else:
                sdk_run_loop.deduplicate_input_items_preferring_latest = rebound
            model, _ = run_turn(
                tmp_path / "g.db", SHAPES["reasoning_without_item"], streamed=streamed
            )
            counts = installation.guard
            assert counts is not None
            # Each input checked once, by the guard now over the new binding.
            assert counts.checked == counts.repaired == len(calls) == len(model.inputs) >= 2
            assert vars(sdk_run_loop)[name].__wrapped__ is rebound
        # Uninstalled: the rebinding itself is bound again, as whoever made it left it.
        assert vars(sdk_run_loop)[name] is rebound
    finally:
        accelerator.uninstall()
        vars(sdk_run_loop)[name] = before
    for items in model_inputs(model):
        assert input_problems(items) == [], items


# --- what the warning names, and how often ---------------------------------------------


def doubling(data: CallModelData[Any]) -> ModelInputData:
    items = list(data.model_data.input)
    return ModelInputData(input=items + items, instructions=data.model_data.instructions)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_duplicate_made_by_the_filter_is_named_and_the_store_called_fine(
    streamed: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``items + items`` holds each object twice: the guard drops the later copy of the
    assistant message (rule c). It logged ``dropped 0 item(s) ... : .`` and counted no
    rule (kept items were told by ``id()``), and sent the user to the doctor."""
    config = RunConfig(call_model_input_filter=doubling)
    with accelerator.installed(guard=True) as installation:
        with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
            model, _ = run_turn(
                tmp_path / "d.db", clean_start(), streamed=streamed, run_config=config
            )
        counts = installation.guard
        assert counts is not None
    first = json.loads(model.inputs[0])
    assert [item.get("id") for item in first].count("msg_a") == 1
    assert counts.repaired == len(model.inputs) >= 2
    assert counts.dropped == sum(counts.rules.values()) >= counts.repaired
    assert counts.rules["duplicate_id"] >= counts.repaired
    warnings = [r.getMessage() for r in caplog.records if r.name == "histcore.openai_agents"]
    assert warnings[0].startswith(
        "histcore guard: dropped 1 item(s) from the model input of session 's' (the store "
        "is unchanged): input[4] message id='msg_a': duplicate_id (rule c). The stored "
        "history is fine"
    ), warnings[0]
    assert not any("doctor" in message for message in warnings)
    for items in model_inputs(model):
        assert input_problems(items) == [], items


def test_a_store_breaking_the_rule_names_the_doctor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The doctor is named when the stored history itself breaks the rule, not when only
    the filter's doubling does (the same turn, store damaged)."""
    config = RunConfig(call_model_input_filter=doubling)
    stored = SHAPES["duplicate_ids"]
    with accelerator.installed(guard=True):
        with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
            run_turn(tmp_path / "d.db", stored, streamed=False, run_config=config)
    warnings = [r.getMessage() for r in caplog.records if r.name == "histcore.openai_agents"]
    assert len(warnings) == 1
    assert "input[3] message id='msg_same': duplicate_id (rule c)" in warnings[0]
    assert "To repair the store: histcore doctor --fix" in warnings[0]


async def _turns(db: Path, session_id: str, model: SDKScriptedModel, texts: list[str]) -> None:
    session = SQLiteSession(session_id, db)
    agent = Agent(name="a", model=model, tools=[lookup])
    for text in texts:
        result = Runner.run_streamed(agent, text, session=session)
        async for _ in result.stream_events():
            pass
        await Runner.run(agent, text, session=session)
    session.close()


def test_one_warning_per_session_and_problem(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each turn with a tool call makes two model calls; on a damaged session each call
    logged the same WARNING, every turn. Now: once per session and problem, while the
    counts tell every repaired input."""
    db = tmp_path / "w.db"

    async def store(session_id: str, items: list[Any]) -> None:
        session = SQLiteSession(session_id, db)
        await session.add_items(items)
        session.close()

    asyncio.run(store("one", SHAPES["output_without_call[function_call]"]))
    asyncio.run(store("two", SHAPES["output_without_call[function_call]"]))
    model = SDKScriptedModel(placeholder_every=0)
    with accelerator.installed(guard=True) as installation:
        with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
            asyncio.run(_turns(db, "one", model, ["Paris", "Rome"]))
            asyncio.run(_turns(db, "one", model, ["Oslo"]))  # new session objects
            once = [r.getMessage() for r in caplog.records]
            asyncio.run(_turns(db, "two", model, ["Paris"]))
        counts = installation.guard
        assert counts is not None
    assert counts.repaired == counts.checked == len(model.inputs) == 16
    assert len(once) == 1, once
    assert "session 'one'" in once[0]
    warnings = [r.getMessage() for r in caplog.records if r.name == "histcore.openai_agents"]
    assert len(warnings) == counts.warnings == 2
    assert "session 'two'" in warnings[1]


def test_logged_problems_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from histcore.openai_agents import _guard_counts

    monkeypatch.setattr(_guard_counts, "LOGGED_LIMIT", 3)
    counts = GuardCounts()
    assert [counts._first_time([key]) for key in (0, 1, 0, 2, 3)] == [
        True,
        True,
        False,
        True,
        True,
    ]
    assert len(counts._logged) == 3
    assert counts._first_time([0]) is False  # met again at 2: kept, 1 was forgotten
    assert counts._first_time([1]) is True
    assert len(counts._logged) == 3
    assert counts.warnings == 5


def test_the_stand_in_logs_once_per_session_and_problem(caplog: pytest.LogCaptureFixture) -> None:
    module, counts = stand_in_run_loop()

    class Session:
        def __init__(self, session_id: str) -> None:
            self.session_id = session_id

    broken = [user("hi"), output("lost"), reasoning("rs_end")]
    with caplog.at_level(logging.WARNING, logger="histcore.openai_agents"):
        for session_id in ("a", "a", "b", "a"):
            module.get_new_response(list(broken), session=Session(session_id))
        module.get_new_response([user("hi"), output("other")], session=Session("a"))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == counts.warnings == 3
    assert (counts.checked, counts.repaired, counts.dropped) == (5, 5, 9)
    assert counts.rules == {"output_without_call": 5, "reasoning_without_item": 4}
    assert "call_id='other'" in messages[2]
    assert "call_id='lost'" not in messages[2]
