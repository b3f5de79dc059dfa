"""Hypothesis strategies and item builders shared by the engine tests.

Histories are drawn from small id pools so duplicated ids and call_ids are common, and
mix in the awkward values the engines must agree on: lone surrogates, huge integers,
NaN and -0.0, deep nesting, pydantic models and items that are not dicts at all. The
user-defined types at the end (subclasses of builtins that lie, keys equal to anything,
callbacks that raise or change what is being read) are the shapes of docs/design.md,
"User-defined types".
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from hypothesis import strategies as st
from pydantic import BaseModel

MAX_DEPTH = 256
# The engine functions that take one list of items.
ITEM_LIST_FUNCTIONS = (
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "content_keys",
    "drop_orphan_function_calls",
    "deep_copy_items",
)

CALL_TO_OUTPUT = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "tool_search_call": "tool_search_output",
    "program": "program_output",
}
CALL_TYPES = tuple(CALL_TO_OUTPUT)
OUTPUT_TYPES = tuple(CALL_TO_OUTPUT.values())
HOSTED_TYPES = (
    "hosted_tool_call",
    "file_search_call",
    "web_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_call",
    "mcp_approval_request",
    "mcp_approval_response",
)
# The SDK's input item vocabulary (plus a made-up type) as seen in stored histories.
SDK_TYPES = (*CALL_TYPES, *OUTPUT_TYPES, *HOSTED_TYPES, "message", "reasoning", "compaction")
FAKE_ID = "__fake_id__"
METADATA_KEYS = ("_agents_tool_description", "_agents_tool_title")
SHELL_STATUSES = (None, "in_progress", "completed", "incomplete")


# --- item builders for hand-written cases -------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str, arguments: str = "{}", **extra: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "f",
        "arguments": arguments,
        **extra,
    }


def output(call_id: str, text: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text, **extra}


def reasoning(item_id: str, text: str = "think") -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": text}]}


def program(call_id: str) -> dict[str, Any]:
    return {"type": "program", "call_id": call_id, "code": "run()"}


def owned_by(program_call_id: str) -> dict[str, Any]:
    return {"type": "program", "caller_id": program_call_id}


def nested_lists(levels: int) -> Any:
    """``levels`` nested lists: 1 -> [], 2 -> [[]], ..."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def positions(result: list[Any], items: list[Any]) -> list[int]:
    """Input position of every result element, by identity (each input object once)."""
    taken: set[int] = set()
    found: list[int] = []
    for element in result:
        for index, item in enumerate(items):
            if item is element and index not in taken:
                taken.add(index)
                found.append(index)
                break
        else:
            raise AssertionError(f"{element!r} is not one of the input objects")
    return found


# --- pydantic items ------------------------------------------------------------------


class FunctionCallModel(BaseModel):
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str = "f"
    arguments: str = "{}"
    id: str | None = None


class FunctionCallOutputModel(BaseModel):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str = "ok"


class MessageModel(BaseModel):
    role: str
    content: str
    id: str | None = None
    type: str | None = None


class ReasoningModel(BaseModel):
    type: Literal["reasoning"] = "reasoning"
    id: str
    summary: list[dict[str, str]] = []


# --- strategies ----------------------------------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ude00", "\ud83d\ude00"])
ANY_CHARACTERS = st.characters(codec=None, categories=None, exclude_categories=())
# Text with every code point, lone surrogates made frequent on purpose.
unicode_text = st.lists(st.one_of(ANY_CHARACTERS, SURROGATES), max_size=8).map("".join)
# Text a UTF-8 codec can encode (no lone surrogates).
encodable_text = st.text(max_size=8)

big_ints = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63, -(2**63), 2**64, -(2**63) - 1, 2**53 + 1, 10**30]),
    st.integers(),
)
any_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e-05, 0.0001, 1.5, 1e22, 5e-324, float("nan")]),
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """JSON-like values: dicts with str keys, lists, tuples and scalars."""
    scalars = st.one_of(st.none(), st.booleans(), big_ints, any_floats, unicode_text)
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(unicode_text, children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def plain_json(
    text: st.SearchStrategy[str], floats: st.SearchStrategy[float]
) -> st.SearchStrategy[Any]:
    """Values json.dumps encodes the way it decodes them: str keys, lists, no tuples."""
    scalars = st.one_of(st.none(), st.booleans(), big_ints, floats, text)
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)
        ),
        max_leaves=12,
    )


@st.composite
def deep_values(draw: st.DrawFn) -> tuple[int, Any]:
    """(container depth, value) for lists/tuples/dicts nested around MAX_DEPTH."""
    levels = draw(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3))
    value: Any = draw(st.sampled_from([[], {}, 1, "x"]))
    depth = levels + (1 if isinstance(value, (list, dict)) else 0)
    shapes = draw(st.lists(st.sampled_from("ldt"), min_size=levels, max_size=levels))
    for shape in shapes:
        value = [value] if shape == "l" else (value,) if shape == "t" else {"k": value}
    return depth, value


class _Unencodable:
    """A value with no JSON form: encoded as the JSON string of its str()."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __str__(self) -> str:
        return f"<unencodable {self.tag!r}>"

    def __repr__(self) -> str:
        return f"_Unencodable({self.tag!r})"


exotic_values = st.one_of(
    st.builds(_Unencodable, st.text(max_size=4)),
    st.frozensets(st.integers(0, 3), max_size=3),
    st.binary(max_size=4),
)


# Built once: constructing recursive strategies on every draw is slow.
_ITEM_PAYLOADS = st.one_of(json_values(max_leaves=4), exotic_values)
_SDK_PAYLOADS = st.one_of(st.none(), st.integers(0, 3), encodable_text)


def _item_dict(
    draw: st.DrawFn, types: tuple[str, ...], value: st.SearchStrategy[Any], sdk_shaped: bool
) -> dict[str, Any]:
    item: dict[str, Any] = {}
    kind = draw(st.sampled_from(types))
    if draw(st.integers(0, 9)) or sdk_shaped:
        item["type"] = kind
    if kind == "message" or (not sdk_shaped and draw(st.integers(0, 6)) == 0):
        item["role"] = draw(st.sampled_from(["user", "assistant", "system", None]))
    if draw(st.booleans()):
        item["call_id"] = draw(st.sampled_from(["c0", "c1", "c2", "c3"]))
    if draw(st.integers(0, 2)) == 0:
        item["id"] = draw(st.sampled_from(["i0", "i1", "i2", FAKE_ID]))
    if kind == "mcp_approval_response" or draw(st.integers(0, 9)) == 0:
        item["approval_request_id"] = draw(st.sampled_from(["a0", "a1"]))
    if kind == "shell_call" and draw(st.booleans()):
        item["status"] = draw(st.sampled_from(SHELL_STATUSES))
    if draw(st.integers(0, 3)) == 0:
        item["caller"] = {"type": "program", "caller_id": draw(st.sampled_from(["c0", "c1"]))}
    if draw(st.integers(0, 5)) == 0:
        item[draw(st.sampled_from(METADATA_KEYS))] = "meta"
    if not sdk_shaped and draw(st.integers(0, 9)) == 0:
        # Wrong-typed identifiers must be ignored, not crash.
        item[draw(st.sampled_from(["call_id", "id", "type", "role"]))] = draw(
            st.one_of(st.integers(-2, 2), st.none(), st.lists(st.integers(), max_size=2))
        )
    item["payload"] = draw(value)
    return item


@st.composite
def history_items(draw: st.DrawFn, *, with_models: bool = True, junk: bool = True) -> Any:
    """One item of an engine-level history (dicts, models, junk)."""
    choice = draw(st.integers(0, 19))
    if junk and choice == 0:
        return draw(
            st.one_of(
                st.none(),
                st.integers(),
                st.text(max_size=3),
                st.lists(st.integers(), max_size=2),
                st.just(("a",)),
            )
        )
    if with_models and choice == 1:
        call_id = draw(st.sampled_from(["c0", "c1", "c2"]))
        return draw(
            st.sampled_from(
                [
                    FunctionCallModel(call_id=call_id),
                    FunctionCallModel(type="function_call", call_id=call_id),
                    FunctionCallOutputModel(type="function_call_output", call_id=call_id),
                    MessageModel(role="user", content="hi"),
                    ReasoningModel(type="reasoning", id="i0"),
                ]
            )
        )
    return _item_dict(draw, SDK_TYPES, _ITEM_PAYLOADS, sdk_shaped=False)


def histories(
    *, with_models: bool = True, junk: bool = True, max_size: int = 14
) -> st.SearchStrategy[list[Any]]:
    return st.lists(history_items(with_models=with_models, junk=junk), max_size=max_size)


@st.composite
def sdk_items(draw: st.DrawFn) -> dict[str, Any]:
    """Dicts shaped like the SDK's stored input items (str types from its vocabulary)."""
    kind = draw(st.sampled_from(SDK_TYPES))
    if kind == "tool_search_call" or kind == "tool_search_output":
        # Anonymous tool searches: no call_id, or an explicit null.
        anonymous = draw(st.integers(0, 2))
        item: dict[str, Any] = {"type": kind}
        if anonymous == 1:
            item["call_id"] = None
        elif anonymous == 2:
            item["call_id"] = draw(st.sampled_from(["c0", "c1"]))
        return item
    return _item_dict(draw, (kind,), _SDK_PAYLOADS, sdk_shaped=True)


def sdk_histories(max_size: int = 14) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(sdk_items(), max_size=max_size)


@st.composite
def call_output_sequences(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Calls, outputs, reasoning and messages over a few call ids, in random order.

    Each example uses one or two call types and two call ids, so calls meet their
    outputs (and their duplicates) often.
    """
    kinds = draw(st.lists(st.sampled_from(CALL_TYPES), min_size=1, max_size=2, unique=True))
    items: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 16))):
        what = draw(
            st.sampled_from(["call", "call", "output", "output", "reasoning", "message", "hosted"])
        )
        kind = draw(st.sampled_from(kinds))
        call_id = draw(st.sampled_from(["c0", "c1"]))
        version = draw(st.integers(0, 3))
        if what == "call":
            items.append({"type": kind, "call_id": call_id, "v": version})
        elif what == "output":
            items.append({"type": CALL_TO_OUTPUT[kind], "call_id": call_id, "v": version})
        elif what == "reasoning":
            items.append(
                {"type": "reasoning", "id": draw(st.sampled_from(["r0", "r1"])), "v": version}
            )
        elif what == "hosted":
            items.append(
                {"type": "web_search_call", "id": draw(st.sampled_from(["w0", "w1"])), "v": version}
            )
        else:
            items.append({"role": "user", "content": str(version)})
    return items


@st.composite
def callback_rounds(draw: st.DrawFn) -> tuple[list[Any], list[Any], list[Any]]:
    """(history, new_items, combined) as a session input callback could return them.

    ``combined`` mixes the very history/new objects, deep copies of them (content
    reconstructions) and items the callback made up.
    """
    history = draw(histories(max_size=6))
    new_items = draw(histories(max_size=5))
    combined: list[Any] = []
    for _ in range(draw(st.integers(0, 12))):
        source = draw(st.sampled_from(["history", "new", "copy", "made_up"]))
        pool = history if source == "history" else new_items
        if source in ("history", "new") and pool:
            combined.append(draw(st.sampled_from(pool)))
        elif source == "copy" and (history or new_items):
            combined.append(copy.deepcopy(draw(st.sampled_from(history + new_items))))
        else:
            combined.append(draw(history_items()))
    return history, new_items, combined


# --- user-defined types (docs/design.md, "User-defined types") -----------------------


class Journal:
    """Records the callbacks the engines run on the user-defined types below (only while
    recording), so two engines are compared on what they called, not only on results."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.recording = False

    def note(self, event: str) -> None:
        if self.recording:
            self.events.append(event)

    @contextmanager
    def record(self) -> Iterator[list[str]]:
        self.events = []
        self.recording = True
        try:
            yield self.events
        finally:
            self.recording = False


JOURNAL = Journal()
note = JOURNAL.note


class LyingDict(dict[Any, Any]):
    """A dict subclass whose reading methods all disagree with what it holds (``items``
    gives lists, not pairs)."""

    def items(self) -> Any:
        note("LyingDict.items")
        return [["type", "lie"], ["call_id", "lie"]]

    def keys(self) -> Any:
        note("LyingDict.keys")
        return ["lie"]

    def values(self) -> Any:
        note("LyingDict.values")
        return ["lie"]

    def get(self, key: Any, default: Any = None) -> Any:
        note(f"LyingDict.get({key!r})")
        return "lie"

    def __getitem__(self, key: Any) -> Any:
        note(f"LyingDict[{key!r}]")
        return "lie"

    def __contains__(self, key: object) -> bool:
        note(f"LyingDict.__contains__({key!r})")
        return True

    def __iter__(self) -> Iterator[Any]:
        note("LyingDict.__iter__")
        return iter(["lie"])

    def __len__(self) -> int:
        note("LyingDict.__len__")
        return 0

    def copy(self) -> Any:
        note("LyingDict.copy")
        return {"lie": "lie"}


class LyingList(list[Any]):
    """A list subclass whose length and iteration lie (empty, reversed)."""

    def __len__(self) -> int:
        note("LyingList.__len__")
        return 0

    def __iter__(self) -> Iterator[Any]:
        note("LyingList.__iter__")
        members: list[Any] = list.copy(self)
        return iter(members[::-1])

    def __getitem__(self, index: Any) -> Any:
        note(f"LyingList[{index!r}]")
        return list.__getitem__(self, index)

    def __bool__(self) -> bool:
        note("LyingList.__bool__")
        return True


class LyingTuple(tuple[Any, ...]):
    """A tuple subclass whose length and iteration lie (seven items, reversed)."""

    def __len__(self) -> int:
        note("LyingTuple.__len__")
        return 7

    def __iter__(self) -> Iterator[Any]:
        note("LyingTuple.__iter__")
        members: list[Any] = list(tuple.__iter__(self))
        return iter(members[::-1])


class ClaimingStr(str):
    """A str whose equality, hash, length, str(), format() and encode() are not its
    text's: equal to everything, hashed as 0, empty by ``len`` and false."""

    def __eq__(self, other: object) -> bool:
        note(f"ClaimingStr({str.__str__(self)!r}).__eq__")
        return True

    def __ne__(self, other: object) -> bool:
        note(f"ClaimingStr({str.__str__(self)!r}).__ne__")
        return False

    def __hash__(self) -> int:
        note(f"ClaimingStr({str.__str__(self)!r}).__hash__")
        return 0

    def __len__(self) -> int:
        note(f"ClaimingStr({str.__str__(self)!r}).__len__")
        return 0

    def __bool__(self) -> bool:
        note(f"ClaimingStr({str.__str__(self)!r}).__bool__")
        return False

    def __str__(self) -> str:
        note(f"ClaimingStr({str.__str__(self)!r}).__str__")
        return "claimed"

    def __format__(self, spec: str) -> str:
        note(f"ClaimingStr({str.__str__(self)!r}).__format__")
        return "formatted"

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        note(f"ClaimingStr({str.__str__(self)!r}).encode")
        return b"1" * 20

    def __repr__(self) -> str:
        return f"ClaimingStr({str.__repr__(self)})"


class ClaimingBytes(bytes):
    """Bytes whose ``translate`` (and so any scan through it) lies."""

    def translate(self, *args: Any, **kwargs: Any) -> bytes:
        note("ClaimingBytes.translate")
        return b"0" * 20


class AlwaysEqual:
    """A key or value equal to everything; hashed like the str ``hash_as`` when given
    (so it meets that key in a dict lookup), else by its tag."""

    def __init__(self, tag: str, hash_as: str | None = None) -> None:
        self.tag = tag
        self.hash_as = hash_as

    def __eq__(self, other: object) -> bool:
        note(f"AlwaysEqual({self.tag!r}).__eq__")
        return True

    def __ne__(self, other: object) -> bool:
        note(f"AlwaysEqual({self.tag!r}).__ne__")
        return False

    def __hash__(self) -> int:
        note(f"AlwaysEqual({self.tag!r}).__hash__")
        return hash(self.hash_as if self.hash_as is not None else ("AlwaysEqual", self.tag))

    def __str__(self) -> str:
        note(f"AlwaysEqual({self.tag!r}).__str__")
        return f"<always {self.tag}>"

    def __repr__(self) -> str:
        return f"AlwaysEqual({self.tag!r})"


class RaisingKey:
    """A dict key hashed like the str ``hash_as`` that raises when compared, so a lookup
    of ``hash_as`` raises."""

    def __init__(self, hash_as: str) -> None:
        self.hash_as = hash_as

    def __eq__(self, other: object) -> bool:
        note(f"RaisingKey({self.hash_as!r}).__eq__")
        raise KeyError(f"RaisingKey({self.hash_as!r}) cannot be compared")

    def __hash__(self) -> int:
        return hash(self.hash_as)

    def __str__(self) -> str:
        return f"<raising {self.hash_as}>"

    def __repr__(self) -> str:
        return f"RaisingKey({self.hash_as!r})"


class GetRaises:
    """An item whose attribute lookups raise something other than AttributeError (which
    ``hasattr`` and ``getattr`` with a default let through)."""

    def __getattr__(self, name: str) -> Any:
        note(f"GetRaises.{name}")
        raise LookupError(f"GetRaises has no {name}")

    def __repr__(self) -> str:
        return "GetRaises()"


class DumpRaises:
    """A model whose ``model_dump`` raises."""

    def model_dump(self, **kwargs: Any) -> Any:
        note("DumpRaises.model_dump")
        raise ValueError("DumpRaises.model_dump failed")

    def __repr__(self) -> str:
        return "DumpRaises()"


class CountingIndex(int):
    """An int position whose comparisons, hash and ``__index__`` are its own."""

    def __lt__(self, other: Any) -> bool:
        note("CountingIndex.__lt__")
        return False

    def __le__(self, other: Any) -> bool:
        note("CountingIndex.__le__")
        return False

    def __gt__(self, other: Any) -> bool:
        note("CountingIndex.__gt__")
        return False

    def __ge__(self, other: Any) -> bool:
        note("CountingIndex.__ge__")
        return False

    def __index__(self) -> int:
        note("CountingIndex.__index__")
        return 0

    __hash__ = int.__hash__


class Effect:
    """A value or model that runs ``effect`` when the engines call back into it:
    ``model_dump`` (returning ``payload``), ``__str__``, ``__eq__``/``__hash__`` as a dict
    key hashed like ``hash_as``, or ``__deepcopy__``."""

    def __init__(
        self,
        effect: Callable[[], None],
        *,
        payload: Any = None,
        hash_as: str | None = None,
        tag: str = "effect",
    ) -> None:
        self.effect = effect
        self.payload = payload
        self.hash_as = hash_as
        self.tag = tag

    def model_dump(self, **kwargs: Any) -> Any:
        note(f"Effect({self.tag}).model_dump")
        self.effect()
        return self.payload

    def __str__(self) -> str:
        note(f"Effect({self.tag}).__str__")
        self.effect()
        return f"<effect {self.tag}>"

    def __eq__(self, other: object) -> bool:
        note(f"Effect({self.tag}).__eq__")
        self.effect()
        return False

    def __hash__(self) -> int:
        return hash(self.hash_as if self.hash_as is not None else ("Effect", self.tag))

    def __deepcopy__(self, memo: Any) -> Any:
        note(f"Effect({self.tag}).__deepcopy__")
        self.effect()
        return f"<copy of {self.tag}>"

    def __repr__(self) -> str:
        return f"Effect({self.tag!r})"


def once(effect: Callable[[], None]) -> Callable[[], None]:
    """``effect``, run the first time only (so a callback cannot loop forever)."""
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            effect()

    return run


class LyingIterable:
    """An iterable (not a list) whose ``__len__`` lies."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[Any]:
        note("LyingIterable.__iter__")
        return iter(self.items)

    def __len__(self) -> int:
        note("LyingIterable.__len__")
        return 3


class DynamicModel:
    """A model whose ``model_dump`` is found through ``__getattr__`` (each lookup noted)."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def __getattr__(self, name: str) -> Any:
        note(f"DynamicModel.{name}")
        if name != "model_dump":
            raise AttributeError(name)
        return lambda **kwargs: self.payload


def _lying_dict(entries: dict[Any, Any]) -> LyingDict:
    made = LyingDict()
    for key, value in entries.items():
        dict.__setitem__(made, key, value)
    return made


# Values of a user-defined type that change nothing when the engines call them.
user_type_scalars = st.one_of(
    st.sampled_from((*SDK_TYPES, "", "_agents_tool_title")).map(ClaimingStr),
    st.sampled_from(["t", "type", "_agents_tool_title"]).map(AlwaysEqual),
    st.binary(max_size=3).map(ClaimingBytes),
)


def _user_type_value(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3).map(LyingList),
        st.lists(children, max_size=3).map(LyingTuple),
        st.dictionaries(st.sampled_from(["type", "call_id", "x"]), children, max_size=3).map(
            _lying_dict
        ),
    )


user_type_values = st.recursive(
    st.one_of(user_type_scalars, st.integers(-2, 2), encodable_text),
    _user_type_value,
    max_leaves=6,
)
_KEY_NAMES = ("type", "call_id", "id", "role", "status", "caller", *METADATA_KEYS)
# Keys that are not plain str: equal to everything, met in lookups, or claiming texts.
user_type_keys = st.one_of(
    st.sampled_from(_KEY_NAMES).map(ClaimingStr),
    st.builds(AlwaysEqual, st.just("k"), st.one_of(st.none(), st.sampled_from(_KEY_NAMES))),
)


_SDK_ITEMS = sdk_items()


@st.composite
def user_type_items(draw: st.DrawFn) -> Any:
    """An SDK-shaped item whose fields, keys or container hold user-defined types."""
    item: dict[Any, Any] = draw(_SDK_ITEMS)
    if "type" in item and draw(st.integers(0, 2)) == 0:
        item["type"] = ClaimingStr(item["type"])
    for field in ("call_id", "id", "status"):
        if isinstance(item.get(field), str) and draw(st.integers(0, 3)) == 0:
            item[field] = ClaimingStr(item[field])
    caller = item.get("caller")
    if isinstance(caller, dict) and draw(st.booleans()):
        caller = dict(caller, type=draw(st.sampled_from([ClaimingStr("program"), "program"])))
        item["caller"] = _lying_dict(caller) if draw(st.booleans()) else caller
    for _ in range(draw(st.integers(0, 2))):
        item[draw(user_type_keys)] = draw(user_type_values)
    if draw(st.integers(0, 3)) == 0:
        item["payload"] = draw(user_type_values)
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return _lying_dict(item)
    if shape == 1:
        return draw(user_type_values)
    return item


# Built once: constructing strategies on every draw is slow.
_USER_TYPE_ITEMS = st.one_of(user_type_items(), history_items())


@st.composite
def user_type_histories(draw: st.DrawFn, max_size: int = 10) -> Any:
    """Lists of such items, now and then with an item that raises (one whose attribute
    lookup raises, one whose model_dump raises, a dict whose ``type`` lookup raises) and
    now and then as a lying list or tuple subclass themselves."""
    items = draw(st.lists(_USER_TYPE_ITEMS, max_size=max_size))
    for _ in range(draw(st.integers(0, 4)) // 3):
        raiser = draw(st.sampled_from(["get", "dump", "key"]))
        made = (
            GetRaises()
            if raiser == "get"
            else DumpRaises()
            if raiser == "dump"
            else {RaisingKey("type"): 1}
        )
        items.insert(draw(st.integers(0, len(items))), made)
    shape = draw(st.integers(0, 5))
    if shape == 0:
        return LyingList(items)
    if shape == 1:
        return LyingTuple(items)
    return items


_EFFECT_FIELDS = ("type", "call_id", "status", "role", "added")
_EFFECT_VALUES = ("function_call", "function_call_output", "reasoning", "shell_call", "c0", None)


def _effect_action(
    items: list[Any], action: str, target: int, field: str, value: Any, template: Any
) -> Callable[[], None]:
    def run() -> None:
        if not items and action != "append":
            return
        at = target % len(items) if items else 0
        if action == "set field" and isinstance(items[at], dict):
            items[at][field] = value
        elif action == "delete field" and isinstance(items[at], dict):
            items[at].pop(field, None)
        elif action == "append":
            items.append(copy.deepcopy(template))
        elif action == "pop":
            items.pop()
        elif action == "replace":
            items[at] = copy.deepcopy(template)

    return run


@st.composite
def effect_recipes(draw: st.DrawFn) -> Callable[[], list[Any]]:
    """A builder of fresh SDK-shaped lists holding callbacks that change the list or its
    items while the engines read them: a ``model_dump``, the ``__eq__`` of a key met in
    a field lookup, the ``__str__`` of a key or value, a ``__deepcopy__`` (each runs its
    change once). Build one list per engine: the callbacks change it."""
    templates = draw(sdk_histories(max_size=6))
    effects = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["model_dump", "key met in a lookup", "key", "value"]),
                st.sampled_from(["set field", "delete field", "append", "pop", "replace"]),
                st.integers(0, 9),
                st.integers(0, 9),
                st.sampled_from(_EFFECT_FIELDS),
                st.sampled_from(_EFFECT_VALUES),
            ),
            min_size=1,
            max_size=3,
        )
    )
    spare = draw(_SDK_ITEMS)

    def build() -> list[Any]:
        items: list[Any] = copy.deepcopy(templates)
        for tag, (where, action, host, target, field, value) in enumerate(effects):
            effect = once(_effect_action(items, action, target, field, value, spare))
            position = host % (len(items) + 1)
            host_item = items[position] if position < len(items) else None
            if where == "model_dump" or not isinstance(host_item, dict):
                made = Effect(effect, payload=copy.deepcopy(spare), tag=f"dump {tag}")
                items.insert(position, made)
            elif where == "key met in a lookup":
                host_item[Effect(effect, hash_as=field, tag=f"lookup {tag}")] = 1
            elif where == "key":
                host_item[Effect(effect, tag=f"key {tag}")] = 1
            else:
                host_item["payload"] = [1, Effect(effect, tag=f"value {tag}"), {"k": 2}]
        return items

    return build
