"""``histcore bench --openai-agents``: SDK conversation turns over large sessions.

For each session size (``DEFAULT_SIZES`` unless given) it times one turn of the SDK's own
``Runner`` (a scripted model that calls a function tool, then answers; a file
``SQLiteSession``; a ``session_input_callback``) plain, under ``install()`` and under
``install(guard=True)``, each mode in a process of its own on its own copy of the store
(the modes' rounds in turn), and the same turn as the first of a fresh Python process
(imports and ``install()`` before the clock starts); then plain and installed on the
other store kinds (``sdk_stores``, ``sdk_store_turns``).

Rule: correctness first. A plain and an installed turn must leave identical sessions,
send identical model inputs and give the same output; the guarded turn must send
``repair_input`` of the plain turn's input; a mismatch raises ``CorrectnessError``. The
command line imports this module (and so the SDK) only for ``--openai-agents``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, cast

from agents import SQLiteSession
from agents.items import TResponseInputItem

from histcore import BACKEND
from histcore import openai_agents as accelerator
from histcore.cli.bench.environment import Environment
from histcore.cli.bench.report import header
from histcore.cli.bench.sdk_stores import KINDS, Checked
from histcore.cli.bench.sdk_turn import (
    SESSION_ID,
    CorrectnessError,
    conversation_agent,
    keep_history,
    quiet_guard,
    run_turn,
)
from histcore.cli.bench.signals import run_process
from histcore.cli.bench.timing import Timing
from histcore.cli.bench.units import format_seconds, size_label
from histcore.items import repair_input
from histcore.openai_agents._versions import sdk_version
from histcore.openai_agents.testing import SDKScriptedModel
from histcore.testing_histories import generate_history

if TYPE_CHECKING:
    from histcore.cli.bench.sdk_store_turns import Reference

__all__ = [
    "DEFAULT_SIZES",
    "FORMAT",
    "CorrectnessError",
    "SDKScriptedModel",
    "SdkBenchResult",
    "TurnTiming",
    "build_store",
    "conversation_agent",
    "keep_history",
    "render",
    "run_benchmark",
    "run_cli",
    "run_turn",
    "time_first_turns",
    "to_json",
]

DEFAULT_SIZES = (10_000, 100_000)
FORMAT = "histcore-bench-openai-agents/8"


def build_store(path: str, size: int, seed: int = 0) -> None:
    """An SDK SQLite store at ``path`` holding ``size`` generated history items."""

    # A history the Responses API accepts once deduped (no refreshed reasoning items):
    # each guarded turn then costs the check alone, as on a healthy store.
    history = generate_history(size, seed, refresh_reasoning=False)

    async def fill() -> None:
        session = SQLiteSession(SESSION_ID, path)
        try:
            await session.add_items(cast(list[TResponseInputItem], history))
        finally:
            session.close()

    asyncio.run(fill())


async def _stored_items(path: str) -> list[Any]:
    session = SQLiteSession(SESSION_ID, path)
    try:
        return await session.get_items()
    finally:
        session.close()


# --- results -----------------------------------------------------------------------


@dataclass(frozen=True)
class TurnTiming:
    size: int
    plain: Timing
    installed: Timing
    #: First turns only: the garbage collector's time inside the timed turns, plain
    #: and installed.
    collector: tuple[Timing, Timing] | None = None
    #: In-process turns only: installed with ``guard=True``.
    guarded: Timing | None = None
    #: In-process turns only: the guard's time within each guarded turn: its own seconds
    #: (``installation().guard.seconds``) and its model-input dedupes' seconds
    #: (``guard.dedupe_seconds``, the check read in the same pass).
    guard_time: Timing | None = None
    #: In-process turns only: the seconds of the run loop's model-input dedupes in each
    #: installed turn (timed by the bench around the SDK's binding).
    installed_dedupe: Timing | None = None
    #: In-process turns only: installed, through a new session object (a full read).
    new_session: Timing | None = None
    #: In-process turns only: each mode's highest timed-turn peak RSS in bytes, and its
    #: process's (``sdk_stores.TimedMode``).
    peak_rss: dict[str, int | None] | None = None
    process_peak_rss: dict[str, int | None] | None = None

    @property
    def speedup(self) -> float:
        return self.plain.median / self.installed.median

    @property
    def new_session_speedup(self) -> float | None:
        if self.new_session is None:
            return None
        return self.plain.median / self.new_session.median

    @property
    def guard_check(self) -> float | None:
        """The guard's seconds in a guarded turn beyond what an installed turn spends in
        the same dedupes: the least guard time less the least installed dedupe time.

        Measured inside the turns, not as the difference of two turns' medians: that
        difference moves by more than the guard costs from one run to the next. Least
        times, because interruptions only add: at 10^5 items a collection of the cyclic
        garbage collector that falls inside one dedupe adds more than the check costs."""
        if self.guard_time is None or self.installed_dedupe is None:
            return None
        return min(self.guard_time.samples) - min(self.installed_dedupe.samples)

    @property
    def guard_cost(self) -> float | None:
        """The guard's cost: ``guard_check`` over the installed turn (median)."""
        check = self.guard_check
        return None if check is None else check / self.installed.median


@dataclass
class SdkBenchResult:
    environment: Environment
    repeat: int = 1
    turns: list[TurnTiming] = field(default_factory=list)
    first_turns: list[TurnTiming] = field(default_factory=list)
    replaced: tuple[str, ...] = ()
    #: Per store kind and size: plain and installed (``sdk_store_turns.StoreTurn``).
    stores: list[Any] = field(default_factory=list)
    #: The store kinds asked for that could not run, and why.
    skipped: dict[str, str] = field(default_factory=dict)


# --- correctness, then timing ------------------------------------------------------


def _check_turn_pair(store: str, workdir: str, message: str) -> Checked:
    """Plain, installed and guarded turns on copies of ``store`` agree; the plain one."""
    plain_path = os.path.join(workdir, "plain.db")
    fast_path = os.path.join(workdir, "installed.db")
    guarded_path = os.path.join(workdir, "guarded.db")
    for path in (plain_path, fast_path, guarded_path):
        shutil.copyfile(store, path)
    stored = asyncio.run(_stored_items(store))
    plain_model, fast_model, guarded_model = (SDKScriptedModel() for _ in range(3))
    accelerator.uninstall()
    plain_answer = asyncio.run(run_turn(plain_path, message, plain_model))
    with accelerator.installed():
        fast_answer = asyncio.run(run_turn(fast_path, message, fast_model))
    if plain_answer != fast_answer:
        raise CorrectnessError(f"final output differs: {plain_answer!r} != {fast_answer!r}")
    if plain_model.inputs != fast_model.inputs:
        raise CorrectnessError("the model received different input with install()")
    plain_items = asyncio.run(_stored_items(plain_path))
    fast_items = asyncio.run(_stored_items(fast_path))
    if json.dumps(plain_items) != json.dumps(fast_items):
        raise CorrectnessError("the session holds different items with install()")
    # The guard sends what repair_input makes of the SDK's input (the SDK's dedupe can
    # move a refreshed duplicate away from its reasoning item: rule (e)).
    with quiet_guard(), accelerator.installed(guard=True):
        asyncio.run(run_turn(guarded_path, message, guarded_model))
    expected = repair_input(json.loads(plain_model.inputs[0]), history=stored)
    if json.loads(guarded_model.inputs[0]) != expected:
        raise CorrectnessError("install(guard=True) sent other than repair_input of the SDK's")
    for path in (plain_path, fast_path, guarded_path):
        os.remove(path)
    return Checked(plain_answer, list(plain_model.inputs), json.dumps(plain_items))


#: The in-process modes: the SDK, install(), install() through a new session object
#: each turn, and install(guard=True).
MODES = ("plain", "installed", "new session", "guarded")


def _median_timing(values: list[float]) -> Timing:
    return Timing(statistics.median(values), tuple(values), 1)


def _time_turns(store: str, size: int, repeat: int, workdir: str, progress: TextIO) -> TurnTiming:
    """Each mode's ``repeat`` rounds in a process of its own, on its own copy of
    ``store``, the modes' rounds in turn (``sdk_stores.time_modes``: one session object,
    an untimed turn on it, then the timed ones)."""
    from histcore.cli.bench import sdk_stores

    progress.write(f"  {', '.join(MODES)}: a process each, their {repeat} round(s) in turn\n")
    progress.flush()
    places = sdk_stores.file_copies(store, workdir, "timed", MODES)
    try:
        timed = sdk_stores.time_modes(sdk_stores.KINDS["sqlite"], places, repeat)
    finally:
        sdk_stores.remove_copies(places)
    samples = {mode: [round_.seconds for round_ in timed[mode].rounds] for mode in MODES}
    for mode in MODES:
        progress.write(f"  {mode}: {format_seconds(statistics.median(samples[mode]))}\n")
    guard_times = [
        round_.guard_seconds + round_.dedupe_seconds for round_ in timed["guarded"].rounds
    ]
    installed_dedupes = [round_.dedupe_seconds for round_ in timed["installed"].rounds]
    peaks = {mode: timed[mode].turn_peak_rss for mode in MODES}
    process_peaks = {mode: timed[mode].peak_rss for mode in MODES}
    return TurnTiming(
        size,
        _median_timing(samples["plain"]),
        _median_timing(samples["installed"]),
        guarded=_median_timing(samples["guarded"]),
        guard_time=_median_timing(guard_times),
        installed_dedupe=_median_timing(installed_dedupes),
        new_session=_median_timing(samples["new session"]),
        peak_rss=peaks,
        process_peak_rss=process_peaks,
    )


# The first turn of a fresh process: the child imports everything and installs before
# it starts the clock, so only the turn itself (and what its first calls cost) counts.
# With "tracing-ready" it also builds the SDK's trace provider first. It prints the
# turn's seconds and the collector's seconds within them (gc.callbacks).
_FIRST_TURN = """
import asyncio, gc, sys, time
from histcore.cli.bench import sdk_conversation as bench
if sys.argv[3] == "tracing-ready":
    from agents.tracing import get_trace_provider
    get_trace_provider()
if sys.argv[2] == "installed":
    bench.accelerator.install()
collecting = [0.0, 0.0]
def collector(phase, info):
    if phase == "start":
        collecting[1] = time.perf_counter()
    else:
        collecting[0] += time.perf_counter() - collecting[1]
gc.callbacks.append(collector)
model = bench.SDKScriptedModel(record=False, id_prefix="first_")
start = time.perf_counter()
asyncio.run(bench.run_turn(sys.argv[1], "Paris and Rome, first turn", model))
elapsed = time.perf_counter() - start
gc.callbacks.remove(collector)
print(elapsed, collecting[0])
"""


def _first_turn(store: str, mode: str, workdir: str, tracing_ready: bool) -> tuple[float, float]:
    path = os.path.join(workdir, f"first-{mode}.db")
    shutil.copyfile(store, path)
    setup = "tracing-ready" if tracing_ready else "nothing-ready"
    try:
        completed = run_process([sys.executable, "-c", _FIRST_TURN, path, mode, setup])
    finally:
        os.remove(path)
    if completed.returncode != 0:
        raise CorrectnessError(
            f"the first {mode} turn in a fresh process failed:\n{completed.stderr}"
        )
    elapsed, collecting = completed.stdout.strip().splitlines()[-1].split()
    return float(elapsed), float(collecting)


def time_first_turns(
    store: str,
    size: int,
    repeat: int,
    workdir: str,
    progress: TextIO,
    *,
    tracing_ready: bool = False,
) -> TurnTiming:
    """The first turn of a fresh process on a copy of ``store``, plain and installed.

    ``tracing_ready`` builds the SDK's trace provider before the clock starts (every
    process's first ``Runner.run`` builds it, with or without histcore).
    """
    samples: dict[str, list[float]] = {"plain": [], "installed": []}
    collecting: dict[str, list[float]] = {"plain": [], "installed": []}
    what = "first turn, trace provider ready" if tracing_ready else "first turn of a fresh process"
    for round_ in range(repeat):
        for mode in ("plain", "installed"):
            progress.write(f"  {what} {round_ + 1}/{repeat} {mode}")
            progress.flush()
            elapsed, in_gc = _first_turn(store, mode, workdir, tracing_ready)
            samples[mode].append(elapsed)
            collecting[mode].append(in_gc)
            progress.write(f" {format_seconds(elapsed)}\n")

    return TurnTiming(
        size,
        _median_timing(samples["plain"]),
        _median_timing(samples["installed"]),
        (_median_timing(collecting["plain"]), _median_timing(collecting["installed"])),
    )


def run_benchmark(
    sizes: Sequence[int] = DEFAULT_SIZES,
    repeat: int = 3,
    progress: TextIO | None = None,
    workdir: str | None = None,
    stores: Sequence[str] = tuple(KINDS),
    scratch_dsn: str | None = None,
) -> SdkBenchResult:
    """Check, then time turns at each size, on each store kind of ``stores`` (PostgreSQL
    from ``scratch_dsn``, else a throwaway cluster when one can be started). Raises
    CorrectnessError."""
    from histcore.cli.bench import sdk_store_turns as store_turns
    from histcore.cli.bench.sdk_postgres import postgres_server

    out = progress if progress is not None else open(os.devnull, "w")
    profile = None
    if BACKEND == "rust":
        profile = str(importlib.import_module("histcore._core").build_profile)
    result = SdkBenchResult(Environment.current(profile, sdk_version()), repeat)
    result.replaced = accelerator.install().replaced
    accelerator.uninstall()
    kinds = [KINDS[name] for name in stores]
    wanted = any(kind.postgres for kind in kinds)
    with (
        tempfile.TemporaryDirectory(prefix="histcore-sdk-bench-", dir=workdir) as tmp,
        postgres_server(scratch_dsn, wanted) as server,
    ):
        result.skipped = store_turns.skipped_kinds(kinds, server)
        for name, reason in result.skipped.items():
            out.write(f"skipping {KINDS[name].label}: {reason}\n")
        others = [k for k in kinds if k.name != "sqlite" and k.name not in result.skipped]
        for size in sizes:
            references: dict[str, Reference] = {}
            if "sqlite" in stores:
                _sqlite_turns(result, size, repeat, tmp, out, references)
            history = generate_history(size, 0, refresh_reasoning=False) if others else []
            for kind in others:
                result.stores.append(
                    store_turns.time_kind(kind, size, history, repeat, tmp, server, references, out)
                )
    if progress is None:
        out.close()
    return result


def _sqlite_turns(
    result: SdkBenchResult,
    size: int,
    repeat: int,
    tmp: str,
    out: TextIO,
    references: dict[str, Reference],
) -> None:
    """The SDK's SQLiteSession at ``size``: every mode, and the first turns."""
    from histcore.cli.bench.sdk_store_turns import CHECK_MESSAGE, StoreTurn

    out.write(f"{size_label(size)} items: building the store\n")
    out.flush()
    store = os.path.join(tmp, f"store-{size}.db")
    build_store(store, size)
    out.write("  checking a plain and an installed turn give the same results\n")
    checked = _check_turn_pair(store, tmp, CHECK_MESSAGE)
    turn = _time_turns(store, size, repeat, tmp, out)
    result.turns.append(turn)
    peaks, process_peaks = turn.peak_rss or {}, turn.process_peak_rss or {}
    references["sqlite"] = (checked, turn.plain, peaks.get("plain"), process_peaks.get("plain"))
    result.stores.append(
        StoreTurn(
            "sqlite",
            size,
            turn.plain,
            turn.installed,
            "sqlite",
            plain_rss=peaks.get("plain"),
            installed_rss=peaks.get("installed"),
            plain_process_rss=process_peaks.get("plain"),
            installed_process_rss=process_peaks.get("installed"),
        )
    )
    result.first_turns.append(time_first_turns(store, size, repeat, tmp, out))
    os.remove(store)


# --- report ------------------------------------------------------------------------


def _turn_lines(title: str, turns: list[TurnTiming]) -> list[str]:
    guarded = any(turn.guarded is not None for turn in turns)
    fresh = any(turn.new_session is not None for turn in turns)
    extra = f"  {'new session':>11}  {'speedup':>7}" if fresh else ""
    extra += f"  {'with guard':>10}  {'guard check':>11}  {'cost':>6}" if guarded else ""
    lines = [
        title,
        f"{'session':>8}  {'plain SDK':>10}  {'installed':>10}  {'speedup':>7}{extra}",
    ]
    for turn in turns:
        more = ""
        if turn.new_session is not None and turn.new_session_speedup is not None:
            more += f"  {format_seconds(turn.new_session.median):>11}"
            more += f"  {turn.new_session_speedup:>6.1f}x"
        if turn.guarded is not None and turn.guard_check is not None:
            more += f"  {format_seconds(turn.guarded.median):>10}"
            more += f"  {format_seconds(turn.guard_check):>11}  {turn.guard_cost:>6.1%}"
        lines.append(
            f"{size_label(turn.size):>8}  {format_seconds(turn.plain.median):>10}  "
            f"{format_seconds(turn.installed.median):>10}  {turn.speedup:>6.1f}x{more}"
        )
    return lines


def render(result: SdkBenchResult) -> str:
    """The report: turns in one process, then the first turn of a fresh process."""
    lines = header(result.environment, "drop-in benchmark with the OpenAI Agents SDK")
    lines += [
        f"engine: {result.environment.backend}; median of {result.repeat} turns",
        "",
        "SDK conversation turn: Runner.run, SQLite session file, session_input_callback,",
        "one reasoning item + 2 function calls, then an answer; plain SDK against",
        "histcore.openai_agents.install() (and install(guard=True)). In one process the",
        "conversation keeps its session object across turns (installed, a turn reads",
        "only the rows added since the last); 'new session' opens one for the turn",
        "(a full read). 'guard check' is the guard's time within a guarded turn (its",
        "own, installation().guard.seconds, and its model-input dedupes, which read",
        "what the check needs in the same pass, guard.dedupe_seconds) less the same",
        "dedupes' time in an installed turn, least against least (interruptions only",
        "add); 'cost' is that over the installed turn (median).",
        "",
    ]
    title = "in one process (it has run turns before; a process per mode, the rounds in turn):"
    lines += _turn_lines(title, result.turns)
    if result.first_turns:
        title = "the first turn of a fresh process (imports and install() before the clock):"
        lines += ["", *_turn_lines(title, result.first_turns)]
    if result.stores or result.skipped:
        lines += ["", *_store_lines(result)]
    return "\n".join(lines)


def _store_lines(result: SdkBenchResult) -> list[str]:
    """The same turn per store kind, plain SDK against install()."""
    lines = [
        "per store kind (the same history; a process and a copy per mode, the rounds in turn):",
        f"{'store':<42}  {'session':>8}  {'plain SDK':>10}  {'installed':>10}  {'speedup':>7}"
        f"  {'turn peak RSS plain / installed':>31}",
    ]
    for turn in result.stores:
        label = KINDS[turn.store].label
        plain = "-" if turn.plain is None else format_seconds(turn.plain.median)
        speedup = "-" if turn.speedup is None else f"{turn.speedup:.1f}x"
        peaks = f"{_megabytes(turn.plain_rss)} / {_megabytes(turn.installed_rss)}"
        lines.append(
            f"{label:<42}  {size_label(turn.size):>8}  {plain:>10}  "
            f"{format_seconds(turn.installed.median):>10}  {speedup:>7}  {peaks:>31}"
        )
    for turn in result.stores:
        if turn.plain is not None and turn.plain_store != turn.store:
            lines.append(
                f"({KINDS[turn.store].label}: its plain SDK column is "
                f"{KINDS[turn.plain_store].label})"
            )
            break
    lines.append(
        "(turn peak RSS: the highest of a mode's timed turns, each from just before it; "
        "the JSON also gives each mode's process peak)"
    )
    lines += [f"skipped {KINDS[name].label}: {why}" for name, why in result.skipped.items()]
    return lines


def _megabytes(peak: int | None) -> str:
    return "-" if peak is None else f"{peak / 1e6:.1f} MB"


def _turn_json(turn: TurnTiming) -> dict[str, Any]:
    data: dict[str, Any] = {
        "size": turn.size,
        "plain": turn.plain.to_json(),
        "installed": turn.installed.to_json(),
        "speedup": turn.speedup,
    }
    if turn.collector is not None:
        data["plain_gc"], data["installed_gc"] = (timing.to_json() for timing in turn.collector)
    if turn.guarded is not None:
        data["guarded"] = turn.guarded.to_json()
    if turn.peak_rss is not None:
        data["peak_rss"] = dict(turn.peak_rss)
    if turn.process_peak_rss is not None:
        data["process_peak_rss"] = dict(turn.process_peak_rss)
    if turn.guard_time is not None and turn.installed_dedupe is not None:
        data["guard_time"] = turn.guard_time.to_json()
        data["installed_dedupe"] = turn.installed_dedupe.to_json()
        data["guard_check_s"] = turn.guard_check
        data["guard_cost"] = turn.guard_cost
    if turn.new_session is not None:
        data["new_session"] = turn.new_session.to_json()
        data["new_session_speedup"] = turn.new_session_speedup
    return data


def to_json(result: SdkBenchResult) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "environment": result.environment.to_json(),
        "backend": result.environment.backend,
        "build_profile": result.environment.build_profile,
        "settings": {
            "sizes": [turn.size for turn in result.turns],
            "repeat": result.repeat,
        },
        "replaced": list(result.replaced),
        "turns": [_turn_json(turn) for turn in result.turns],
        "first_turns": [_turn_json(turn) for turn in result.first_turns],
        "stores": [turn.to_json() for turn in result.stores],
        "stores_skipped": dict(result.skipped),
    }


def run_cli(
    sizes: Sequence[int] = DEFAULT_SIZES,
    repeat: int = 3,
    json_path: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    plot_path: str | None = None,
    stores: Sequence[str] = tuple(KINDS),
    scratch_dsn: str | None = None,
) -> int:
    """What ``histcore bench --openai-agents`` runs: 0 done, 1 a result differed."""
    from histcore.cli.bench.sdk_stores import ChildFailed

    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    try:
        result = run_benchmark(sizes, repeat, stderr, stores=stores, scratch_dsn=scratch_dsn)
    except (CorrectnessError, ChildFailed) as exc:
        stderr.write(f"histcore bench --openai-agents: error: {exc}\n")
        return 1
    stdout.write(render(result) + "\n")
    data = to_json(result)
    if json_path is not None:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        stderr.write(f"histcore bench: wrote {json_path}\n")
    if plot_path is not None:
        from histcore.cli.bench import plot

        plot.draw(plot_path, sdk=data)
        stderr.write(f"histcore bench: wrote {plot_path}\n")
    return 0
