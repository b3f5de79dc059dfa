"""Fidelity under patching: a rebinding the SDK's original would see, the installed
replacement sees too.

Each case applies one patch (a module global such as ``json`` or ``copy``, a helper
function, a constant changed in place, a standard library function), then calls the
helper through its SDK module once uninstalled and once installed, under the same
patch: results (or exceptions) must be equal, and the patch must have mattered.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import types
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install .[openai-agents])"
)

import agents.memory.sqlite_session as sdk_sqlite
import agents.run_internal.items as sdk_items
import agents.run_internal.session_persistence as sdk_session
import agents.run_state as sdk_run_state
import agents.util._json as sdk_json
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool

import histcore.openai_agents as accelerator
from histcore.openai_agents import _watch
from histcore.openai_agents.testing import SDKScriptedModel

Patch = Callable[[pytest.MonkeyPatch], None]


@pytest.fixture(autouse=True)
def uninstalled() -> Any:
    accelerator.uninstall()
    yield
    accelerator.uninstall()


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("returned", call())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


def under(patch: Patch | None, call: Callable[[], Any]) -> tuple[Any, ...]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        if patch is not None:
            patch(monkeypatch)
        return outcome(call)


def assert_same_under(patch: Patch, call: Callable[[], Any]) -> tuple[Any, ...]:
    """``call`` under ``patch``: the same outcome installed as uninstalled, and a
    different one from the unpatched SDK's (else the case would test nothing)."""
    unpatched = under(None, call)
    plain = under(patch, call)
    assert plain != unpatched, "the patch changes nothing: the case tests nothing"
    with accelerator.installed():
        installed = under(patch, call)
        # The patch is undone: histcore's own path again, with the SDK's result.
        assert under(None, call) == unpatched
    assert installed == plain
    return plain


# --- items -------------------------------------------------------------------------

MESSAGE = {"type": "message", "role": "user", "content": "hi", "id": "m1"}
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
DANGLING = {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"}
ITEMS = [MESSAGE, CALL, OUTPUT, DANGLING, dict(CALL)]


class LoudJson:
    """A ``json`` stand-in whose ``dumps`` marks its text."""

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    @staticmethod
    def dumps(value: Any, **kwargs: Any) -> str:
        return "loud:" + json.dumps(value, **kwargs)


def test_fingerprint_sees_a_rebound_module_json() -> None:
    assert_same_under(
        lambda mp: mp.setattr(sdk_items, "json", LoudJson()),
        lambda: [sdk_items.fingerprint_input_item(item) for item in ITEMS],
    )


def test_fingerprint_and_session_key_see_a_patched_json_dumps() -> None:
    real = json.dumps

    def dumps(value: Any, **kwargs: Any) -> str:
        return "patched:" + real(value, **kwargs)

    assert_same_under(
        lambda mp: mp.setattr(json, "dumps", dumps),
        lambda: (
            [sdk_items.fingerprint_input_item(item) for item in ITEMS],
            [sdk_session._session_item_key(item) for item in ITEMS],
        ),
    )


def test_dedupe_sees_a_failing_coercion_helper() -> None:
    def failing(item: Any) -> Any:
        raise RuntimeError("injected failure")

    result = assert_same_under(
        lambda mp: mp.setattr(sdk_items, "_coerce_to_dict", failing),
        lambda: (
            sdk_items.deduplicate_input_items(ITEMS),
            sdk_items.deduplicate_input_items_preferring_latest(ITEMS),
        ),
    )
    assert result[0] == "raised"
    assert result[1] is RuntimeError


def test_dedupe_key_sees_a_rebound_key_helper() -> None:
    # The dedupe functions look up _dedupe_key on each item: rebinding it must count.
    def key(item: Any) -> str | None:
        return "same"

    assert_same_under(
        lambda mp: mp.setattr(sdk_items, "_dedupe_key", key),
        lambda: [id(item) for item in sdk_items.deduplicate_input_items(ITEMS)],
    )


def test_orphan_pruning_sees_a_mapping_changed_in_place() -> None:
    # Without function_call in the map of calls to outputs, no call is an orphan.
    assert_same_under(
        lambda mp: mp.delitem(sdk_items._TOOL_CALL_TO_OUTPUT_TYPE, "function_call"),
        lambda: [id(item) for item in sdk_items.drop_orphan_function_calls(ITEMS)],
    )


def test_orphan_pruning_sees_a_rebound_helper() -> None:
    assert_same_under(
        lambda mp: mp.setattr(
            sdk_items, "_completed_call_ids_by_type", lambda items: {"function_call": {"c2"}}
        ),
        lambda: [id(item) for item in sdk_items.drop_orphan_function_calls(ITEMS)],
    )


def strip_more(item: Any) -> Any:
    stripped = dict(item)
    stripped.pop("id", None)
    return stripped


def test_normalisation_and_fingerprints_see_a_rebound_strip_function() -> None:
    assert_same_under(
        lambda mp: mp.setattr(sdk_items, "strip_internal_input_item_metadata", strip_more),
        lambda: (
            sdk_items.normalize_input_items_for_api(ITEMS),
            [sdk_items.fingerprint_input_item(item) for item in ITEMS],
        ),
    )


def test_ensure_format_sees_a_rebound_coercion() -> None:
    assert_same_under(
        lambda mp: mp.setattr(sdk_items, "_coerce_to_dict", lambda item: {"coerced": True}),
        lambda: [sdk_items.ensure_input_item_format(item) for item in ITEMS],
    )


# --- copies ------------------------------------------------------------------------


def test_to_dump_compatible_sees_a_rebound_internal_helper() -> None:
    assert_same_under(
        lambda mp: mp.setattr(sdk_json, "_to_dump_compatible_internal", lambda obj: ["swapped"]),
        lambda: sdk_json._to_dump_compatible(ITEMS),
    )


def counting_copy() -> tuple[types.SimpleNamespace, list[Any]]:
    seen: list[Any] = []

    def deepcopy(value: Any, memo: Any = None) -> Any:
        seen.append(value)
        return ["copied by the patch"]

    return types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy), seen


def test_clone_original_input_sees_a_rebound_copy_module() -> None:
    fake, seen = counting_copy()
    assert_same_under(
        lambda mp: mp.setattr(sdk_run_state, "copy", fake),
        lambda: sdk_run_state._clone_original_input(ITEMS),
    )
    assert len(seen) == 2  # plain and installed


def test_copies_see_a_patched_deepcopy() -> None:
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return ["deepcopy patched"]

    assert_same_under(
        lambda mp: mp.setattr(copy, "deepcopy", deepcopy),
        lambda: (
            sdk_run_state._clone_original_input(ITEMS),
            sdk_session.copy.deepcopy(ITEMS),
        ),
    )


def _filled_store(path: str) -> Callable[[], list[Any]]:
    """A store holding three items, and a reader of it through a fresh session."""

    async def fill() -> None:
        session = SQLiteSession("s", path)
        try:
            await session.add_items([MESSAGE, CALL, OUTPUT])  # type: ignore[list-item]
        finally:
            session.close()

    async def stored() -> list[Any]:
        session = SQLiteSession("s", path)
        try:
            return await session.get_items()
        finally:
            session.close()

    asyncio.run(fill())
    return lambda: asyncio.run(stored())


def _marking_loads(text: Any, **kwargs: Any) -> Any:
    value = json.JSONDecoder(**kwargs).decode(text)
    value["seen_by_patch"] = True
    return value


def test_sqlite_session_sees_a_patched_json_loads(tmp_path: Any) -> None:
    read = _filled_store(str(tmp_path / "store.db"))
    assert_same_under(lambda mp: mp.setattr(json, "loads", _marking_loads), read)


def test_sqlite_session_sees_its_json_loads_patched(tmp_path: Any) -> None:
    # Installed, the module's ``json`` is histcore's stand-in: the patch lands on it.
    read = _filled_store(str(tmp_path / "store.db"))
    assert_same_under(lambda mp: mp.setattr(sdk_sqlite.json, "loads", _marking_loads), read)
    with accelerator.installed():
        # monkeypatch's undo leaves the stand-in's bound method behind: still exact.
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sdk_sqlite.json, "loads", _marking_loads)
        assert sdk_sqlite.json.reads_exactly()


class MarkingJson:
    """A ``json`` stand-in whose ``loads`` marks what it reads."""

    JSONDecodeError = json.JSONDecodeError

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    loads = staticmethod(_marking_loads)


def test_sqlite_session_sees_a_rebound_module_json(tmp_path: Any) -> None:
    read = _filled_store(str(tmp_path / "store.db"))
    assert_same_under(lambda mp: mp.setattr(sdk_sqlite, "json", MarkingJson()), read)


def test_sqlite_session_sees_a_rebound_limit_helper(tmp_path: Any) -> None:
    read = _filled_store(str(tmp_path / "store.db"))
    assert_same_under(
        lambda mp: mp.setattr(sdk_sqlite, "resolve_session_limit", lambda limit, settings: 1),
        read,
    )


def test_sqlite_session_sees_a_row_factory_and_a_failing_connection(tmp_path: Any) -> None:
    read = _filled_store(str(tmp_path / "store.db"))
    real = SQLiteSession._get_connection

    def rows_as_lists(self: Any) -> Any:
        conn = real(self)
        conn.row_factory = lambda cursor, row: [*row, "extra"]
        return conn

    def failing(self: Any) -> Any:
        raise sqlite3.OperationalError("injected failure")

    # A row the SDK's loop cannot unpack raises there; the replacement must too.
    assert_same_under(lambda mp: mp.setattr(SQLiteSession, "_get_connection", rows_as_lists), read)
    assert_same_under(lambda mp: mp.setattr(SQLiteSession, "_get_connection", failing), read)


def test_sqlite_session_runs_the_sdks_statements(tmp_path: Any) -> None:
    read = _filled_store(str(tmp_path / "store.db"))
    real = SQLiteSession._get_connection

    def statements() -> list[str]:
        seen: list[str] = []

        def traced(self: Any) -> Any:
            conn = real(self)
            conn.set_trace_callback(seen.append)
            return conn

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(SQLiteSession, "_get_connection", traced)
            read()
        return seen

    plain = statements()
    assert any("SELECT message_data" in statement for statement in plain)
    with accelerator.installed():
        assert statements() == plain


# --- session input preparation -----------------------------------------------------


@function_tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"sunny in {city}"


def keep_history(history: list[Any], new_items: list[Any]) -> list[Any]:
    return history + new_items


def new_first_rebuilt(history: list[Any], new_items: list[Any]) -> list[Any]:
    """New items first, and every item a rebuilt copy: the SDK tells history from new
    items by their keys alone."""
    return [dict(item) for item in new_items] + [dict(item) for item in history]


def conversation(path: str, callback: Callable[..., Any] = keep_history) -> Callable[[], Any]:
    """Two turns on a fresh store at ``path``: what the model saw, what was stored."""

    async def run() -> Any:
        model = SDKScriptedModel()
        agent = Agent(name="assistant", model=model, tools=[lookup])
        config = RunConfig(session_input_callback=callback, tracing_disabled=True)
        session = SQLiteSession("s", path)
        try:
            await session.clear_session()
            outputs = []
            for message in ("Paris and Rome", "Oslo"):
                result = await Runner.run(agent, message, session=session, run_config=config)
                outputs.append(result.final_output)
            return outputs, model.inputs, await session.get_items()
        finally:
            session.close()

    return lambda: asyncio.run(run())


def test_session_preparation_sees_a_rebound_key_function(tmp_path: Any) -> None:
    calls: list[Any] = []
    original = sdk_session._session_item_key

    def key(item: Any, **kwargs: Any) -> str:
        calls.append(item)
        return "one key for all"  # the first items returned all look like history

    def patch(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(sdk_session, "_session_item_key", key)

    assert original is sdk_session._session_item_key
    assert_same_under(patch, conversation(str(tmp_path / "keys.db"), new_first_rebuilt))
    assert calls


def test_session_preparation_sees_a_failing_reference_map(tmp_path: Any) -> None:
    def failing(items: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected failure")

    result = assert_same_under(
        lambda mp: mp.setattr(sdk_session, "_build_reference_map", failing),
        conversation(str(tmp_path / "refs.db")),
    )
    assert result[1] is RuntimeError


def test_session_preparation_sees_a_rebound_deepcopy(tmp_path: Any) -> None:
    copies: list[int] = []

    def deepcopy(value: Any, memo: Any = None) -> Any:
        copies.append(len(value) if isinstance(value, list) else -1)
        return copy.deepcopy(value, memo)

    fake = types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)

    def patch(mp: pytest.MonkeyPatch) -> None:
        copies.clear()
        mp.setattr(sdk_session, "copy", fake)
        # Make the outcome depend on the patch: the copies are counted in the output.
        mp.setattr(sdk_session, "apply_reasoning_item_id_policy", counting_policy(copies))

    assert_same_under(patch, conversation(str(tmp_path / "copy.db")))


def counting_policy(copies: list[int]) -> Callable[..., Any]:
    original = sdk_session.apply_reasoning_item_id_policy

    def policy(items: Any, policy: Any) -> Any:
        result = original(items, policy)
        return [*result, {"role": "user", "content": f"copies so far: {len(copies)}"}]

    return policy


def test_session_preparation_sees_a_rebound_strip_function(tmp_path: Any) -> None:
    assert_same_under(
        lambda mp: mp.setattr(sdk_session, "strip_internal_input_item_metadata", strip_more),
        conversation(str(tmp_path / "strip.db")),
    )


# --- the watch itself --------------------------------------------------------------


def test_watches_are_armed_intact_after_install_and_disarmed_after_uninstall() -> None:
    installation = accelerator.install()
    assert installation.replaced
    watches = list(accelerator._watches)
    assert watches
    assert all(watch.intact() for watch in watches)
    held = sdk_items.deduplicate_input_items
    accelerator.uninstall()
    assert not any(watch.armed for watch in watches)
    # A replacement kept after uninstall() just runs the SDK's original.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sdk_items, "_coerce_to_dict", lambda item: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            held(ITEMS)


def test_watch_notices_rebinding_and_restoring() -> None:
    namespace: dict[str, Any] = {"helper": len, "table": {"a": 1}}
    watch = _watch.Watch([(namespace, "helper")], [(namespace, "table")])
    assert not watch.intact()  # unarmed
    watch.arm()
    assert watch.intact()
    namespace["helper"] = sum
    assert not watch.intact()
    namespace["helper"] = len
    assert watch.intact()
    namespace["table"]["b"] = 2
    assert not watch.intact()
    del namespace["table"]["b"]
    assert watch.intact()
    del namespace["helper"]
    assert not watch.intact()


def test_looked_up_follows_sdk_helpers_and_stdlib_attributes() -> None:
    names = _watch.Watch.over([sdk_items.fingerprint_input_item]).names()
    assert "agents.run_internal.items.json" in names
    assert "json.dumps" in names
    # Reached through strip_internal_input_item_metadata, in the same module.
    assert "agents.run_internal.items._coerce_to_dict" in names
    # typing constructs are not watched
    assert "agents.run_internal.items.cast" not in names
    session_names = _watch.Watch.over([sdk_session.prepare_input_with_session]).names()
    # Followed into items, where the helpers prepare_input_with_session calls live.
    assert "agents.run_internal.items._TOOL_CALL_TO_OUTPUT_TYPE" in session_names
    assert "copy.deepcopy" in session_names


# --- patches made through the SDK module's names reach the module itself -------------


def _callback_turn(tmp_path: Any) -> Callable[[], Any]:
    """A turn with a session callback (the SDK deep-copies the history for it): what the
    model was sent and what the store holds."""

    def turn() -> Any:
        model = SDKScriptedModel(placeholder_every=0)

        async def main() -> Any:
            session = SQLiteSession("s", str(tmp_path / f"t{len(calls)}.db"))
            await session.add_items([dict(MESSAGE), dict(CALL), dict(OUTPUT)])
            agent = Agent(name="a", model=model, tools=[lookup])
            config = RunConfig(session_input_callback=lambda old, new: [*old, *new])
            await Runner.run(agent, "Paris", session=session, run_config=config)
            stored = await session.get_items()
            session.close()
            return stored

        calls.append(1)
        return model.inputs, asyncio.run(main())

    calls: list[int] = []
    return turn


def _editing_deepcopy(seen: list[int]) -> Callable[..., Any]:
    real = copy.deepcopy

    def deepcopy(value: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(1)
        copied = real(value, *args, **kwargs)
        if isinstance(copied, list):
            for item in copied:
                if isinstance(item, dict) and item.get("role") == "user":
                    item["content"] = f"edited {item['content']}"
        return copied

    return deepcopy


@pytest.mark.parametrize("how", ["mock.patch", "monkeypatch"])
def test_deepcopy_patched_through_the_session_module(how: str, tmp_path: Any) -> None:
    """``mock.patch("...session_persistence.copy.deepcopy", f)`` patches ``copy`` itself,
    installed as plain: ``f`` runs, its edits reach the model input, and the patch undone
    leaves the real ``copy.deepcopy``."""
    from unittest import mock

    turn = _callback_turn(tmp_path)
    real = copy.deepcopy
    results = {}
    for installed in (False, True):
        seen: list[int] = []
        with accelerator.installed() if installed else _nothing():
            if how == "mock.patch":
                target = "agents.run_internal.session_persistence.copy.deepcopy"
                with mock.patch(target, _editing_deepcopy(seen)):
                    results[installed] = (turn(), len(seen) > 0)
            else:
                with pytest.MonkeyPatch.context() as mp:
                    mp.setattr(sdk_session.copy, "deepcopy", _editing_deepcopy(seen))
                    results[installed] = (turn(), len(seen) > 0)
            assert copy.deepcopy is real
            assert sdk_session.copy.deepcopy(ITEMS) == ITEMS
    assert results[False][1], "the patched deepcopy never ran: the case tests nothing"
    assert results[True] == results[False]


def test_json_dumps_assigned_through_the_sqlite_module(tmp_path: Any) -> None:
    """``sqlite_session.json.dumps = f`` rebinds the global function, installed as plain,
    and ``uninstall()`` does not drop it (the caller undoes it)."""
    real = json.dumps
    written: list[str] = []

    def dumps(value: Any, *args: Any, **kwargs: Any) -> str:
        text = real(value, *args, **kwargs)
        written.append(text)
        return text

    try:
        with accelerator.installed():
            sdk_sqlite.json.dumps = dumps
            assert json.dumps is dumps
            session = SQLiteSession("s", str(tmp_path / "j.db"))
            asyncio.run(session.add_items([dict(MESSAGE)]))
            session.close()
        assert json.dumps is dumps
        assert written
    finally:
        json.dumps = real


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
