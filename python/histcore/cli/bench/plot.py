"""``histcore bench --plot``: time against history size, log-log, as a PNG or SVG file.

:func:`draw` takes the JSON documents the command writes, so a script can redraw runs::

    import json
    from histcore.cli.bench import plot

    with open("bench.json") as engine, open("sdk.json") as sdk:
        plot.draw("bench.svg", engine=json.load(engine), sdk=json.load(sdk))

Panels: each engine function (Rust engine, pure twin, the SDK's equivalent) and an
``--openai-agents`` document's SDK turn per mode and store kind; :func:`store_figure`
draws a ``--store`` document's curves. matplotlib is optional (``histcore[plot]``),
imported only here, on the Agg canvas (never pyplot).
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from histcore.cli.bench.units import format_seconds

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import Formatter

__all__ = ["FORMATS", "draw", "draw_store", "figure", "store_figure"]

#: The file formats ``draw`` writes, by file name suffix.
FORMATS = {".png": "png", ".svg": "svg"}
_COLUMNS = 3
_PANEL_SIZE = (4.4, 3.4)  # inches
# (label, colour, marker, line style) per series.
_ENGINE_SERIES = {
    "rust": ("histcore (Rust)", "#d62728", "o", "-"),
    "python": ("histcore (pure Python)", "#ff7f0e", "s", "-"),
    "sdk": ("OpenAI Agents SDK", "#1f77b4", "^", "--"),
}
_TURN_SERIES = {
    "plain": ("plain SDK", "#1f77b4", "^", "--"),
    "installed": ("with install()", "#d62728", "o", "-"),
    "new_session": ("with install(), new session object", "#ff7f0e", "s", "-."),
    "guarded": ("with install(guard=True)", "#9467bd", "d", ":"),
}

Points = list[tuple[int, float]]
Panel = tuple[str, dict[str, Points], Mapping[str, tuple[str, str, str, str]]]


def _engine_panels(engine: Mapping[str, Any]) -> list[Panel]:
    """One panel per function on the realistic history, in the order the run listed them."""
    series: dict[str, dict[str, Points]] = {}
    for case in engine.get("cases", []):
        if case.get("shape", "history") != "history":
            continue
        lines = series.setdefault(str(case["function"]), {})
        for implementation, timing in case.get("timings", {}).items():
            if implementation in _ENGINE_SERIES:
                point = (int(case["size"]), float(timing["median_s"]))
                lines.setdefault(implementation, []).append(point)
    return [(function, lines, _ENGINE_SERIES) for function, lines in series.items()]


def _turn_panels(sdk: Mapping[str, Any]) -> list[Panel]:
    panels: list[Panel] = []
    for key, title in (
        ("turns", "SDK turn, in one process"),
        ("first_turns", "SDK turn, first of a fresh process"),
    ):
        lines: dict[str, Points] = {}
        for turn in sdk.get(key, []):
            for mode in _TURN_SERIES:
                timing = turn.get(mode)
                if timing is not None:
                    point = (int(turn["size"]), float(timing["median_s"]))
                    lines.setdefault(mode, []).append(point)
        if lines:
            panels.append((title, lines, _TURN_SERIES))
    store_panel = _store_panel(sdk)
    return panels + ([store_panel] if store_panel is not None else [])


# Colours of the store kinds, in the order the bench runs them.
_STORE_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#7f7f7f")


def _store_panel(sdk: Mapping[str, Any]) -> Panel | None:
    """The turn on each store kind: installed solid, plain SDK dashed, a colour each."""
    lines: dict[str, Points] = {}
    styles: dict[str, tuple[str, str, str, str]] = {}
    colours: dict[str, str] = {}
    for turn in sdk.get("stores", []):
        store = str(turn["store"])
        colour = colours.setdefault(store, _STORE_COLOURS[len(colours) % len(_STORE_COLOURS)])
        label = str(turn.get("label", store)).split(",")[0]
        for mode, suffix, marker, style in (
            ("installed", "install()", "o", "-"),
            ("plain", "plain", "^", "--"),
        ):
            timing = turn.get(mode)
            # A plain column measured on another store is that store's line.
            if timing is None or (mode == "plain" and turn.get("plain_store", store) != store):
                continue
            key = f"{store}:{mode}"
            styles.setdefault(key, (f"{label}, {suffix}", colour, marker, style))
            lines.setdefault(key, []).append((int(turn["size"]), float(timing["median_s"])))
    return ("SDK turn per store kind", lines, styles) if lines else None


def _seconds_formatter() -> Formatter:
    """Log-axis tick labels in s, ms, us or ns, on the ticks matplotlib would label."""
    from matplotlib.ticker import LogFormatter

    class Seconds(LogFormatter):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return format_seconds(x) if x > 0 and super().__call__(x, pos) else ""

    return Seconds()


def _draw_panel(axes: Axes, panel: Panel) -> None:
    title, lines, styles = panel
    for name, (label, colour, marker, style) in styles.items():
        points = sorted(lines.get(name, []))
        if not points:
            continue
        sizes, seconds = zip(*points, strict=True)
        axes.plot(sizes, seconds, label=label, color=colour, marker=marker, linestyle=style)
    axes.set_xscale("log")
    axes.set_yscale("log")
    # Times as a reader says them (600 ms, 4 s), not as powers of ten (6x10^-1).
    axes.yaxis.set_major_formatter(_seconds_formatter())
    axes.yaxis.set_minor_formatter(_seconds_formatter())
    axes.set_title(title, fontsize=10)
    axes.set_xlabel("history size (items)", fontsize=8)
    axes.set_ylabel("median time", fontsize=8)
    axes.tick_params(which="both", labelsize=7)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=7)


def _title(documents: Sequence[Mapping[str, Any]]) -> str:
    environment: Mapping[str, Any] = next(
        (doc["environment"] for doc in documents if isinstance(doc.get("environment"), dict)),
        {},
    )
    machine = environment.get("machine") or {}
    parts = [f"histcore {environment.get('histcore', '?')} benchmark"]
    if machine:
        parts.append(f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} CPUs")
    if environment.get("python"):
        parts.append(f"Python {environment['python']}")
    if environment.get("openai_agents"):
        parts.append(f"openai-agents {environment['openai_agents']}")
    if environment.get("date"):
        parts.append(str(environment["date"]))
    return " - ".join(parts)


def draw(
    path: str, *, engine: dict[str, Any] | None = None, sdk: dict[str, Any] | None = None
) -> None:
    """Draw the results to ``path`` (``.png`` or ``.svg``), time against size, log-log.

    ``engine`` is the document ``histcore bench --json`` writes, ``sdk`` the one
    ``histcore bench --openai-agents --json`` writes; give either or both. Raises
    ValueError for another suffix or when there is nothing to draw, ImportError
    without matplotlib.
    """
    figure(engine=engine, sdk=sdk).savefig(path, format=_format_of(path))


def figure(*, engine: dict[str, Any] | None = None, sdk: dict[str, Any] | None = None) -> Figure:
    """The figure :func:`draw` saves (on an Agg canvas), for a caller to inspect or save."""
    panels = (_engine_panels(engine) if engine else []) + (_turn_panels(sdk) if sdk else [])
    if not panels:
        raise ValueError("nothing to draw: no timings in the given results")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = min(_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    drawn = Figure(figsize=(_PANEL_SIZE[0] * columns, _PANEL_SIZE[1] * rows + 0.6))
    FigureCanvasAgg(drawn)
    grid = drawn.subplots(rows, columns, squeeze=False)
    for index, axes in enumerate(grid.flat):
        if index < len(panels):
            _draw_panel(axes, panels[index])
        else:
            axes.set_visible(False)
    drawn.suptitle(_title([doc for doc in (engine, sdk) if doc]), fontsize=10)
    drawn.tight_layout()
    return drawn


def _format_of(path: str) -> str:
    file_format = FORMATS.get(os.path.splitext(path)[1].lower())
    if file_format is None:
        raise ValueError(f"cannot draw {path!r}: the file name must end in .png or .svg")
    return file_format


def draw_store(path: str, store: dict[str, Any]) -> None:
    """Draw :func:`store_figure` of ``store`` to ``path`` (``.png`` or ``.svg``)."""
    file_format = _format_of(path)
    store_figure(store).savefig(path, format=file_format)


_SESSION_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def store_figure(store: dict[str, Any]) -> Figure:
    """ms per turn against item count, one plain (dashed) and one installed (solid) line
    per session, from the document ``histcore bench --store --json`` writes. Raises
    ValueError when no session has a curve."""
    curves = [
        (str(s["session_id"]), s["curve"]) for s in store.get("sessions", []) if s.get("curve")
    ]
    if not curves:
        raise ValueError("nothing to draw: no session has a growth curve")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    drawn = Figure(figsize=(_PANEL_SIZE[0] * 1.6, _PANEL_SIZE[1] * 1.4 + 0.6))
    FigureCanvasAgg(drawn)
    axes = drawn.subplots()
    for index, (session_id, curve) in enumerate(curves):
        colour = _SESSION_COLOURS[index % len(_SESSION_COLOURS)]
        sizes = [int(point["items"]) for point in curve]
        for mode, marker, style, label in (
            ("plain", "^", "--", "plain SDK"),
            ("installed", "o", "-", "with install()"),
        ):
            seconds = [float(point[mode]["turn"]["median_s"]) for point in curve]
            axes.plot(
                sizes,
                seconds,
                label=f"{session_id}: {label}",
                color=colour,
                marker=marker,
                linestyle=style,
                markersize=3,
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(_seconds_formatter())
    axes.yaxis.set_minor_formatter(_seconds_formatter())
    axes.set_title("history handling per turn, each session as it grew", fontsize=10)
    axes.set_xlabel("session size (items)", fontsize=8)
    axes.set_ylabel("median time per turn", fontsize=8)
    axes.tick_params(which="both", labelsize=7)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=7)
    # One panel is narrower than the stamp line: wrapped.
    drawn.suptitle(textwrap.fill(_title([store]), 90), fontsize=9)
    drawn.tight_layout()
    return drawn
