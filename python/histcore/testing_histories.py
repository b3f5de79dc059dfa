"""Deterministic, realistic conversation histories for benchmarks and tests.

Items have the shapes the OpenAI Agents SDK stores: user messages, assistant messages,
reasoning items, and function calls each followed by their output. About 5% of the
items (``DUPLICATE_SHARE``) are *refreshed duplicates*: a later item repeating the id /
call_id of an earlier call, output or reasoning item with a changed value (what retries
and resumed runs produce). Texts are 50-2000 characters, some with non-ASCII text,
quotes and newlines, so encoders meet the escapes real transcripts need.

Two pathological shapes stress paths that are easy to make quadratic:
``pending_programs`` (many ``program`` calls that never got an output) and
``reasoning_run`` (a very long run of reasoning items before one orphan call). Every
generator returns exactly ``n`` items and depends only on ``n`` and ``seed``. Import
them from ``histcore.testing``, which re-exports every public name here.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from typing import Any

__all__ = [
    "DUPLICATE_SHARE",
    "MAX_TEXT",
    "MIN_TEXT",
    "generate_history",
    "pending_programs",
    "reasoning_run",
]

Item = dict[str, Any]

#: Share of a generated history that is refreshed duplicates of earlier items.
DUPLICATE_SHARE = 0.05
#: Bounds (in characters) of message, reasoning and tool-output texts.
MIN_TEXT = 50
MAX_TEXT = 2000
# Share of texts drawn from the non-ASCII corpus.
_NON_ASCII_SHARE = 0.1
# Every program_owner_every-th pending program issues an item of its own.
_PROGRAM_OWNER_EVERY = 50

_WORDS = (
    "the agent history session turn model tool call output reasoning message user "
    "assistant result query search file read write update delete create list table row "
    "column index value key error retry timeout request response stream token budget "
    "summary context window limit order latest earliest duplicate prune keep drop merge "
    "a an of to in on for with from by is are was be it this that we you they and or not "
    "returns found matches config path data report plan step next done because however"
).split()
_CODE_WORDS = ("x = f(y)", "return None", '{"ok": true}', "i += 1", "C:\\tmp\\log", "a/b/c.txt")
_NON_ASCII_WORDS = (
    "café naïve Zürich straße déjà-vu façade crème brûlée São Paulo Kraków "
    "日本語 東京 会議 データ 検索 Привет мир данные ошибка مرحبا سلام "
    "— … “quoted” ‘single’ € £ ° ± × → ✓ 😀 🚀 👍 🎉"
).split()
_TOOLS = ("search_docs", "read_file", "run_sql", "get_weather", "fetch_url", "calculator")


def _check_size(n: int, minimum: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < minimum:
        raise ValueError(f"n must be >= {minimum}, got {n}")


class _Texts:
    """Random slices of two fixed word corpora: cheap, varied, reproducible text."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._ascii = self._corpus(rng, list(_WORDS) * 8 + list(_CODE_WORDS), 1 << 16)
        self._non_ascii = self._corpus(rng, list(_WORDS) + list(_NON_ASCII_WORDS) * 2, 1 << 14)

    @staticmethod
    def _corpus(rng: random.Random, words: list[str], length: int) -> str:
        parts: list[str] = []
        size = 0
        while size < length + MAX_TEXT:
            word = rng.choice(words)
            roll = rng.random()
            # Sentence and paragraph breaks give encoders real escapes to do.
            sep = "\n\n" if roll < 0.01 else ". " if roll < 0.08 else " "
            parts.append(word + sep)
            size += len(word) + len(sep)
        return "".join(parts)

    def text(self, low: int = MIN_TEXT, high: int = MAX_TEXT) -> str:
        # Log-uniform length: mostly short texts with a long tail, as in transcripts.
        length = int(math.exp(self._rng.uniform(math.log(low), math.log(high + 1))))
        length = min(max(length, low), high)
        corpus = self._non_ascii if self._rng.random() < _NON_ASCII_SHARE else self._ascii
        start = self._rng.randrange(len(corpus) - length)
        return corpus[start : start + length]


class _Ids:
    """Unique ids: a counter keeps them unique, random bits make them look real."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._count = 0

    def __call__(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_{self._count:08x}{self._rng.getrandbits(64):016x}"


class _Maker:
    """Builds SDK-shaped items."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.texts = _Texts(rng)
        self.ids = _Ids(rng)

    def user(self) -> Item:
        return {"role": "user", "content": self.texts.text()}

    def assistant(self) -> Item:
        return {
            "type": "message",
            "role": "assistant",
            "id": self.ids("msg"),
            "status": "completed",
            "content": [{"type": "output_text", "text": self.texts.text(), "annotations": []}],
        }

    def reasoning(self) -> Item:
        return {
            "type": "reasoning",
            "id": self.ids("rs"),
            "summary": [{"type": "summary_text", "text": self.texts.text()}],
        }

    def arguments(self) -> str:
        args = {"query": self.texts.text(10, 200), "limit": self.rng.randint(1, 50)}
        return json.dumps(args, ensure_ascii=False)

    def call(self, call_id: str | None = None, **extra: Any) -> Item:
        return {
            "type": "function_call",
            "call_id": call_id or self.ids("call"),
            "name": self.rng.choice(_TOOLS),
            "arguments": self.arguments(),
            "id": self.ids("fc"),
            **extra,
        }

    def output(self, call_id: str) -> Item:
        return {"type": "function_call_output", "call_id": call_id, "output": self.texts.text()}

    def refreshed(self, item: Item) -> Item:
        """A copy of ``item`` (call, output or reasoning) with a changed value."""
        fresh = dict(item)
        while fresh == item:
            kind = item["type"]
            if kind == "function_call":
                fresh["arguments"] = self.arguments()
            elif kind == "function_call_output":
                fresh["output"] = self.texts.text()
            else:
                fresh["summary"] = [{"type": "summary_text", "text": self.texts.text()}]
        return fresh

    def turns(self) -> Iterator[list[Item]]:
        """Endless units of a conversation; a unit is never split by a duplicate."""
        while True:
            yield [self.user()]
            for _ in range(self.rng.randint(0, 3)):
                unit = [self.reasoning()] if self.rng.random() < 0.5 else []
                call = self.call()
                unit += [call, self.output(call["call_id"])]
                yield unit
            yield ([self.reasoning()] if self.rng.random() < 0.5 else []) + [self.assistant()]


def generate_history(n: int, seed: int = 0, *, refresh_reasoning: bool = True) -> list[Item]:
    """A realistic history of exactly ``n`` items, reproducible from ``seed``.

    Turns are: a user message, zero to three tool steps (an optional reasoning item,
    a function call, its output), an optional reasoning item and an assistant message.
    ``round(n * DUPLICATE_SHARE)`` refreshed duplicates of earlier calls, outputs and
    reasoning items are spread through it (fewer only when ``n`` is too small to have
    anything to repeat). A unit that no longer fits at the end becomes a single
    message, so every call is still followed by its output.

    With ``refresh_reasoning=False`` only calls and outputs are refreshed: the latest-
    value dedupe of such a history is an input the Responses API accepts, where a
    refreshed reasoning item moves away from the item it preceded (what a damaged
    store looks like to the guard).
    """
    _check_size(n, 0)
    rng = random.Random(seed)
    maker = _Maker(rng)
    duplicate_slots = sorted(rng.sample(range(n), round(n * DUPLICATE_SHARE)))
    items: list[Item] = []
    refreshable: list[Item] = []
    next_slot = 0
    owed = 0
    units = maker.turns()
    kinds = ("function_call", "function_call_output") + (
        ("reasoning",) if refresh_reasoning else ()
    )
    while len(items) < n:
        while next_slot < len(duplicate_slots) and duplicate_slots[next_slot] <= len(items):
            owed += 1
            next_slot += 1
        if owed and refreshable:
            items.append(maker.refreshed(rng.choice(refreshable)))
            owed -= 1
            continue
        unit = next(units)
        if len(unit) > n - len(items):
            unit = [maker.assistant()]
        for item in unit:
            if item.get("type") in kinds:
                refreshable.append(item)
        items.extend(unit)
    return items


def pending_programs(n: int, seed: int = 0) -> list[Item]:
    """A user message, then ``program`` calls that never got an output: exactly ``n`` items.

    Every 50th program issues one item of its own, alternately a hosted web search
    (which keeps its program alive) and a function call without output (which goes
    with its orphan program). Everything else is an orphan program.
    """
    _check_size(n, 1)
    maker = _Maker(random.Random(seed))
    items: list[Item] = [maker.user()]
    programs = 0
    while len(items) < n:
        call_id = maker.ids("call")
        items.append(
            {
                "type": "program",
                "id": maker.ids("prog"),
                "call_id": call_id,
                "code": f"const r = await tools.search({{q: {programs}}}); return r.length;",
                "fingerprint": maker.ids("fp"),
            }
        )
        programs += 1
        if programs % _PROGRAM_OWNER_EVERY or len(items) == n:
            continue
        caller = {"type": "program", "caller_id": call_id}
        if (programs // _PROGRAM_OWNER_EVERY) % 2:
            items.append(
                {
                    "type": "web_search_call",
                    "id": maker.ids("ws"),
                    "status": "completed",
                    "action": {"type": "search", "query": maker.texts.text(10, 80)},
                    "caller": caller,
                }
            )
        else:
            items.append(maker.call(caller=caller))
    return items


def reasoning_run(n: int, seed: int = 0) -> list[Item]:
    """A user message, ``n - 2`` consecutive reasoning items, then one orphan call.

    Dropping the orphan call must also drop the whole reasoning run before it.
    """
    _check_size(n, 2)
    maker = _Maker(random.Random(seed))
    items = [maker.user()]
    items.extend(maker.reasoning() for _ in range(n - 2))
    items.append(maker.call())
    return items
