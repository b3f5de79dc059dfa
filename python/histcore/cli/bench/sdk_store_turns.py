"""``histcore bench --openai-agents`` per store kind: check, then time each mode.

For each kind of ``sdk_stores`` other than the SDK's ``SQLiteSession`` (which
``sdk_conversation`` times with its extra modes): a copy of the store per mode, a plain
and an installed turn on them that must send the same model input, give the same output
and leave the same items (read back by the kind's own session; histcore's
``PostgresSession`` against the plain ``SQLAlchemySession`` turn, or the plain SQLite one),
then each mode's rounds in a process of its own, the modes' rounds in turn. A mismatch
raises ``CorrectnessError``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TextIO

from histcore import openai_agents as accelerator
from histcore.cli.bench import sdk_stores
from histcore.cli.bench.sdk_postgres import Server
from histcore.cli.bench.sdk_stores import KINDS, Checked, Place, StoreKind
from histcore.cli.bench.sdk_turn import CorrectnessError, SDKScriptedModel, session_turn
from histcore.cli.bench.timing import Timing
from histcore.cli.bench.units import format_seconds, size_label

__all__ = ["CHECK_MESSAGE", "Reference", "StoreTurn", "skipped_kinds", "time_kind"]

CHECK_MESSAGE = "Lisbon and Oslo"


#: Per kind already timed at a size: its plain check turn, plain timing, and the plain
#: turn's and process's peak RSS.
Reference = tuple[Checked, Timing, "int | None", "int | None"]


@dataclass(frozen=True)
class StoreTurn:
    """One store kind's turn at one size: plain SDK and ``install()`` medians."""

    store: str
    size: int
    plain: Timing | None
    installed: Timing
    #: The kind whose plain turn ``plain`` is (its own, or the SDK store it replaces).
    plain_store: str
    #: The highest peak RSS in bytes of each mode's timed turns (``TimedMode``; None:
    #: not known), and of the process that ran them, its untimed turns included.
    plain_rss: int | None = None
    installed_rss: int | None = None
    plain_process_rss: int | None = None
    installed_process_rss: int | None = None

    @property
    def speedup(self) -> float | None:
        return None if self.plain is None else self.plain.median / self.installed.median

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "label": KINDS[self.store].label,
            "size": self.size,
            "plain": None if self.plain is None else self.plain.to_json(),
            "plain_store": self.plain_store,
            "installed": self.installed.to_json(),
            "speedup": self.speedup,
            "plain_peak_rss": self.plain_rss,
            "installed_peak_rss": self.installed_rss,
            "plain_process_peak_rss": self.plain_process_rss,
            "installed_process_peak_rss": self.installed_process_rss,
        }


def median_timing(values: Sequence[float]) -> Timing:
    return Timing(statistics.median(values), tuple(values), 1)


def skipped_kinds(kinds: Sequence[StoreKind], server: Server) -> dict[str, str]:
    """Why each kind that cannot run here is skipped."""
    skipped: dict[str, str] = {}
    for kind in kinds:
        reason = sdk_stores.missing(kind)
        if reason is None and kind.postgres and server.dsn is None:
            reason = f"no PostgreSQL: {server.reason}"
        if reason is not None:
            skipped[kind.name] = reason
    return skipped


def _places(
    kind: StoreKind,
    modes: Sequence[str],
    history: list[Any],
    workdir: str,
    server: Server,
    size: int,
) -> dict[str, Place]:
    """A filled copy of the store per mode."""
    if kind.postgres:
        places = {}
        for mode in modes:
            place = Place(dsn=server.dsn, schema=server.new_schema())
            sdk_stores.fill(kind, place, history)
            places[mode] = place
        return places
    source = os.path.join(workdir, f"{kind.name}-{size}.db")
    sdk_stores.fill(kind, Place(path=source), history)
    places = sdk_stores.file_copies(source, workdir, f"{kind.name}-{size}", modes)
    os.remove(source)
    return places


def check_turn(kind: StoreKind, place: Place, installed: bool) -> Checked:
    """The check turn on ``place``, plain or under ``install()``."""
    model = SDKScriptedModel()
    accelerator.uninstall()

    async def turn() -> str:
        async with sdk_stores.session_at(kind, place) as session:
            return await session_turn(session, CHECK_MESSAGE, model)

    with accelerator.installed() if installed else nullcontext():
        answer = asyncio.run(turn())
    items = json.dumps(sdk_stores.read_items(kind, place))
    return Checked(answer, list(model.inputs), items)


def _compare(kind: StoreKind, plain: Checked, installed: Checked, against: str) -> None:
    where = f"{KINDS[kind.name].label} with install()"
    if plain.answer != installed.answer:
        raise CorrectnessError(f"{where}: final output differs from the plain SDK's {against}")
    if plain.inputs != installed.inputs:
        raise CorrectnessError(f"{where}: the model received other input than {against}")
    if plain.items != installed.items:
        raise CorrectnessError(f"{where}: the session holds other items than {against}")


def time_kind(
    kind: StoreKind,
    size: int,
    history: list[Any],
    repeat: int,
    workdir: str,
    server: Server,
    references: dict[str, Reference],
    progress: TextIO,
) -> StoreTurn:
    """Check, then time ``kind`` at ``size``. ``references`` holds, per kind already run
    at this size, its plain check turn and plain timing (a kind with a ``baseline``
    compares with that kind's, else with the SDK's SQLite store's); this kind's plain
    ones are added."""
    against = kind.baseline if kind.baseline in references else "sqlite"
    modes = ("installed",) if kind.baseline is not None else ("plain", "installed")
    progress.write(f"  {kind.label}: filling {len(modes)} copies, checking\n")
    progress.flush()
    places = _places(kind, modes, history, workdir, server, size)
    try:
        installed_check = check_turn(kind, places["installed"], installed=True)
        if "plain" in places:
            plain_check = check_turn(kind, places["plain"], installed=False)
            _compare(kind, plain_check, installed_check, "on the same store")
        elif against in references:
            # Another store with the same history: the same answer, input and items.
            _compare(kind, references[against][0], installed_check, f"on {KINDS[against].label}")
        progress.write(f"  {kind.label}: {', '.join(modes)}: a process each, rounds in turn\n")
        progress.flush()
        timed = sdk_stores.time_modes(kind, places, repeat)
        timings: dict[str, Timing] = {}
        peaks: dict[str, tuple[int | None, int | None]] = {}
        for mode, rounds in timed.items():
            timings[mode] = median_timing([round_.seconds for round_ in rounds.rounds])
            peaks[mode] = (rounds.turn_peak_rss, rounds.peak_rss)
            progress.write(f"  {kind.label}, {mode}: {format_seconds(timings[mode].median)}\n")
    finally:
        accelerator.uninstall()
        sdk_stores.remove_copies(places)
    plain = timings.get("plain")
    plain_rss, plain_process_rss = peaks.get("plain", (None, None))
    if plain is not None:
        references[kind.name] = (plain_check, plain, plain_rss, plain_process_rss)
        plain_store = kind.name
    else:
        plain, plain_rss, plain_process_rss = (
            references[against][1:] if against in references else (None, None, None)
        )
        plain_store = against if plain is not None else kind.name
    turn = StoreTurn(
        kind.name,
        size,
        plain,
        timings["installed"],
        plain_store,
        plain_rss=plain_rss,
        installed_rss=peaks["installed"][0],
        plain_process_rss=plain_process_rss,
        installed_process_rss=peaks["installed"][1],
    )
    progress.write(
        f"  {kind.label} at {size_label(size)} items: "
        f"{'-' if turn.speedup is None else f'{turn.speedup:.1f}x'}\n"
    )
    return turn
