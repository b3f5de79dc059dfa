"""Render the README's benchmark tables and picture from the committed benchmark JSON.

    python scripts/readme_tables.py            # rewrite README.md and docs/bench.svg in place
    python scripts/readme_tables.py --check    # exit 1 with a diff if README.md is stale

The numbers come only from files that ``histcore bench --json`` wrote and that are
committed under ``benches/results/`` (this script never times anything):

    benches/results/engine.json          histcore bench --json benches/results/engine.json
    benches/results/openai-agents.json   histcore bench --openai-agents
                                         --sizes 1000,10000,100000 --repeat 5
                                         --json benches/results/openai-agents.json
                                         (the stamp gives the sizes and rounds the
                                         file records)

Each table sits in README.md between two marker comments, ``<!-- bench:NAME:start -->``
and ``<!-- bench:NAME:end -->``, and everything between them is generated: a stamp line
(the command that wrote the JSON, and the commit, date, machine, CPython and
openai-agents release it records), then the table. Text outside the markers is left
alone. Only timing keys and the ``environment`` object of each file are read; a key
missing from either shows as "-" or "not recorded", and a file of a format this script
does not know stops it with an error (exit 2).

``--check`` compares text only: README.md against what the JSON renders (exit 1 and a
unified diff when they differ), and that the picture exists. The picture, docs/bench.svg,
is the SDK turn's panels of ``histcore.cli.bench.plot.draw`` (needs matplotlib), drawn
with a fixed hash salt and date, so that the same JSON draws the same file with the same
matplotlib.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The formats read: their timing keys and ``environment`` object are the same.
ENGINE_FORMATS = ("histcore-bench/1", "histcore-bench/2")
SDK_FORMATS = (
    "histcore-bench-openai-agents/5",
    "histcore-bench-openai-agents/6",
    "histcore-bench-openai-agents/7",
    "histcore-bench-openai-agents/8",
)
ENGINE_COMMAND = "histcore bench --json benches/results/engine.json"
SDK_COMMAND = (
    "histcore bench --openai-agents --sizes {sizes} --repeat {repeat} "
    "--json benches/results/openai-agents.json"
)
#: What the SDK command is written with when the file does not record its settings.
SDK_DEFAULTS = {"sizes": "1000,10000,100000", "repeat": "5"}
PICTURE = Path("docs/bench.svg")
#: The size the engine table is about (the largest in the file when it lacks this one).
ENGINE_SIZE = 100_000
#: The function the engine-by-size table follows.
MAIN_FUNCTION = "deduplicate_input_items_preferring_latest"

# What the SDK does instead, where the SDK helper is not a function of the same name.
_FUNCTION_LABELS = {
    "dedupe_key": "`dedupe_key`, called per item",
    "dedupe_keys": "`dedupe_keys` (all items)",
    "content_keys": "`content_keys` vs `json.dumps(sort_keys=True)` per item",
    "deep_copy_items": "`deep_copy_items` vs `copy.deepcopy`",
    "classify_callback_output": "`classify_callback_output` vs the SDK's frequency maps",
}
_SHAPE_LABELS = {
    "pending_programs": "pending `program` calls",
    "reasoning_run": "reasoning items, then an orphan call",
}


class ReadmeTablesError(Exception):
    """A problem with the inputs: a missing file or marker, an unknown format."""


# --- reading ------------------------------------------------------------------------


@dataclass(frozen=True)
class Results:
    """One benchmark JSON file, checked to be of the format expected."""

    path: Path
    data: dict[str, Any]
    command: str

    @property
    def environment(self) -> dict[str, Any]:
        environment = self.data.get("environment")
        # Files written before the environment object existed kept its keys at the top.
        return environment if isinstance(environment, dict) else self.data


def load(path: Path, expected: Sequence[str], command: str) -> Results:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadmeTablesError(f"{path}: missing; make it with: {command}") from None
    except json.JSONDecodeError as exc:
        raise ReadmeTablesError(f"{path}: not JSON ({exc})") from None
    found = data.get("format") if isinstance(data, dict) else None
    if found not in expected:
        known = " or ".join(map(repr, expected))
        raise ReadmeTablesError(
            f"{path}: unknown format {found!r}; scripts/readme_tables.py reads {known}. "
            "Regenerate the file with this checkout's histcore, or teach the script the format."
        )
    return Results(path, data, command)


def sdk_command(settings: object) -> str:
    """The command that wrote the SDK file, with the sizes and rounds it records."""
    values = dict(SDK_DEFAULTS)
    if isinstance(settings, dict):
        sizes, repeat = settings.get("sizes"), settings.get("repeat")
        if isinstance(sizes, list) and sizes and all(isinstance(size, int) for size in sizes):
            values["sizes"] = ",".join(str(size) for size in sizes)
        if isinstance(repeat, int):
            values["repeat"] = str(repeat)
    return SDK_COMMAND.format(**values)


def median(timing: object) -> float | None:
    """The median seconds of a ``Timing.to_json()`` object, None when absent."""
    value = timing.get("median_s") if isinstance(timing, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _first(environment: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = environment.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def _machine(environment: dict[str, Any]) -> str:
    machine = environment.get("machine")
    # Format 2 and 6: {"platform", "cpu", "cores"}; before: the same keys at the top.
    details = machine if isinstance(machine, dict) else environment
    system = _first(details, "platform") or _first(environment, "machine")
    cpu = _first(details, "cpu")
    cores = _first(details, "cores", "cpu_count", "cpus")
    details_text = ", ".join(part for part in (cpu, cores and f"{cores} cores") if part)
    system = system or "machine not recorded"
    return f"{system} ({details_text})" if details_text else system


def _python(environment: dict[str, Any]) -> str:
    version = _first(environment, "python") or "not recorded"
    if version.split(" ")[0].isalpha():  # "CPython 3.11.7"
        return version
    return f"{_first(environment, 'python_implementation') or 'CPython'} {version}"


def stamp(results: Results) -> str:
    """The line above a table: what made the numbers, where and when."""
    env = results.environment
    commit = (_first(env, "git_commit") or "not recorded")[:12]
    if env.get("git_dirty") is True:
        commit += " (with uncommitted changes)"
    date = _first(env, "date") or "not recorded"
    if re.match(r"\d{4}-\d{2}-\d{2}T", date):
        date = date[:10]
    histcore = _first(env, "histcore") or "not recorded"
    sdk = _first(env, "openai_agents") or "not installed"
    return (
        f"<sub>From `{results.command}`, one run: histcore {histcore}, commit {commit}, "
        f"{date}, {_machine(env)}, {_python(env)}, openai-agents {sdk}.</sub>"
    )


# --- formatting ---------------------------------------------------------------------


def seconds(value: float | None) -> str:
    """Three significant digits in the largest unit that keeps the number >= 1."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "-"
    return f"{numerator / denominator:.1f}x"


def size_label(size: int) -> str:
    text = str(size)
    if size >= 10 and text == "1" + "0" * (len(text) - 1):
        return f"10^{len(text) - 1}"
    return text


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table, the first column left-aligned and the others right-aligned."""
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|---|" + "---:|" * (len(headers) - 1))
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# --- the tables ---------------------------------------------------------------------


def _cases(engine: Results) -> list[dict[str, Any]]:
    cases = engine.data.get("cases")
    return [case for case in cases if isinstance(case, dict)] if isinstance(cases, list) else []


def _timing(case: dict[str, Any], implementation: str) -> float | None:
    timings = case.get("timings")
    return median(timings.get(implementation)) if isinstance(timings, dict) else None


def _engine_size(cases: list[dict[str, Any]]) -> int:
    sizes = {case.get("size") for case in cases if isinstance(case.get("size"), int)}
    if not sizes:
        raise ReadmeTablesError("the engine benchmark file holds no cases")
    return ENGINE_SIZE if ENGINE_SIZE in sizes else max(s for s in sizes if s is not None)


def _sdk_cell(case: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    sdk = _timing(case, "sdk")
    if sdk is not None:
        return seconds(sdk)
    # The SDK's helper is quadratic on this shape, so the bench ran it only on fewer items.
    smaller = [
        other
        for other in cases
        if (other.get("function"), other.get("shape")) == (case.get("function"), case.get("shape"))
        and _timing(other, "sdk") is not None
    ]
    if not smaller:
        return "no SDK helper" if case.get("shape") == "history" else "-"
    largest = max(smaller, key=lambda other: int(other.get("size", 0)))
    return f"quadratic: {seconds(_timing(largest, 'sdk'))} at {size_label(largest['size'])}"


def _function_label(case: dict[str, Any], size: int) -> str:
    function = str(case.get("function"))
    label = _FUNCTION_LABELS.get(function, f"`{function}`")
    shape = str(case.get("shape", "history"))
    if shape == "history":
        return label
    return f"{label}, {size_label(size)} {_SHAPE_LABELS.get(shape, shape)}"


def engine_table(engine: Results) -> list[str]:
    """(a) Every function on the generated history at 10^5 items, and the shapes where
    the SDK's helper is quadratic."""
    cases = _cases(engine)
    size = _engine_size(cases)
    rows = []
    for case in cases:
        if case.get("size") != size:
            continue
        quadratic = case.get("shape") != "history" and _timing(case, "sdk") is None
        if case.get("shape") != "history" and not (
            quadratic and _sdk_cell(case, cases).startswith("quadratic")
        ):
            continue
        rust, sdk = _timing(case, "rust"), _timing(case, "sdk")
        rows.append(
            [
                _function_label(case, size),
                seconds(rust),
                seconds(_timing(case, "python")),
                _sdk_cell(case, cases),
                ratio(sdk, rust),
            ]
        )
    headers = [
        f"function, {size_label(size)} items",
        "histcore (Rust)",
        "pure twin",
        "openai-agents",
        "SDK / Rust",
    ]
    return [stamp(engine), "", *table(headers, rows)]


def engine_sizes_table(engine: Results) -> list[str]:
    """(b) The main function at every size: time, time per item and the ratio."""
    rows = []
    for case in sorted(_cases(engine), key=lambda case: int(case.get("size", 0))):
        if case.get("function") != MAIN_FUNCTION or case.get("shape") != "history":
            continue
        rust, sdk = _timing(case, "rust"), _timing(case, "sdk")
        size = int(case["size"])
        rows.append(
            [
                size_label(size),
                seconds(rust),
                "-" if rust is None else f"{rust / size * 1e9:.0f} ns",
                seconds(_timing(case, "python")),
                seconds(sdk),
                ratio(sdk, rust),
            ]
        )
    headers = [
        f"`{MAIN_FUNCTION}`, items",
        "histcore (Rust)",
        "Rust per item",
        "pure twin",
        "openai-agents",
        "SDK / Rust",
    ]
    return [stamp(engine), "", *table(headers, rows)]


def _turns(sdk: Results, key: str) -> dict[int, dict[str, Any]]:
    turns = sdk.data.get(key)
    if not isinstance(turns, list):
        return {}
    return {turn["size"]: turn for turn in turns if isinstance(turn, dict) and "size" in turn}


def _store_rows(sdk: Results, size: int) -> list[list[str]]:
    """The other store kinds at ``size`` (``stores`` in the JSON; the SDK's SQLiteSession
    is the size's own row): plain SDK and install(), the other columns empty."""
    stores = sdk.data.get("stores")
    stores = [turn for turn in stores if isinstance(turn, dict)] if isinstance(stores, list) else []
    labels = {str(turn.get("store")): str(turn.get("label")) for turn in stores}
    rows = []
    for turn in stores:
        if turn.get("size") != size or turn.get("store") == "sqlite":
            continue
        plain, installed = median(turn.get("plain")), median(turn.get("installed"))
        label = str(turn.get("label", turn.get("store")))
        plain_store = turn.get("plain_store")
        if plain_store not in (None, turn.get("store")):
            against = labels.get(str(plain_store), str(plain_store)).split(",")[0]
            label += f" (against {against})"
        rows.append(
            [
                f"{size_label(size)} items, {label}",
                seconds(plain),
                seconds(installed),
                ratio(plain, installed),
                *["-"] * 5,
                peaks(turn.get("plain_peak_rss"), turn.get("installed_peak_rss")),
            ]
        )
    return rows


def peaks(plain: Any, installed: Any) -> str:
    """Two modes' peak RSS, in MB ("-" where the run did not measure it)."""
    if not isinstance(plain, int) or not isinstance(installed, int):
        return "-"
    return f"{plain / 1e6:.0f} / {installed / 1e6:.0f} MB"


def sdk_table(sdk: Results) -> list[str]:
    """(c) One SDK conversation turn per session size: plain, install(), guarded, and
    the first turn of a fresh process; then the same turn on each other store kind."""
    turns, first = _turns(sdk, "turns"), _turns(sdk, "first_turns")
    rows = []
    for size in sorted({*turns, *first}):
        turn, fresh = turns.get(size, {}), first.get(size, {})
        plain, installed = median(turn.get("plain")), median(turn.get("installed"))
        new_session = median(turn.get("new_session"))
        peak_rss = turn.get("peak_rss") if isinstance(turn.get("peak_rss"), dict) else {}
        fresh_plain, fresh_installed = median(fresh.get("plain")), median(fresh.get("installed"))
        # With other store kinds in the file, this row says which store it is.
        kind = ", SQLiteSession" if isinstance(sdk.data.get("stores"), list) else ""
        rows.append(
            [
                f"{size_label(size)} items{kind}",
                seconds(plain),
                seconds(installed),
                ratio(plain, installed),
                seconds(new_session),
                ratio(plain, new_session),
                seconds(median(turn.get("guarded"))),
                f"{seconds(fresh_plain)} -> {seconds(fresh_installed)}",
                ratio(fresh_plain, fresh_installed),
                peaks(peak_rss.get("plain"), peak_rss.get("installed")),
            ]
        )
        rows += _store_rows(sdk, size)
    headers = [
        "session",
        "openai-agents",
        "`install()`",
        "ratio",
        "`install()`, new session object",
        "ratio",
        "`install(guard=True)`",
        "first turn of a fresh process",
        "ratio",
        # Runs before timed turns had peaks of their own gave only the process's.
        "turn peak RSS plain / installed"
        if any("process_peak_rss" in turn for turn in turns.values())
        else "peak RSS plain / installed",
    ]
    skipped = sdk.data.get("stores_skipped")
    notes = []
    if isinstance(skipped, dict) and skipped:
        reasons = "; ".join(f"{name}: {why}" for name, why in skipped.items())
        notes = ["", f"<sub>Not timed in that run: {reasons}.</sub>"]
    return [stamp(sdk), "", *table(headers, rows), *notes]


# --- the README ---------------------------------------------------------------------

Renderer = Callable[[], list[str]]


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- bench:{re.escape(name)}:start -->\n)(.*?)(<!-- bench:{re.escape(name)}:end -->)",
        re.S,
    )


def render_text(text: str, blocks: dict[str, Renderer], where: str) -> str:
    """``text`` with every marked block replaced by what its renderer gives."""
    for name, renderer in blocks.items():
        matches = list(_block(name).finditer(text))
        if len(matches) != 1:
            raise ReadmeTablesError(
                f"{where}: expected one '<!-- bench:{name}:start -->' ... "
                f"'<!-- bench:{name}:end -->' pair of lines"
            )
        body = "\n".join(["", *renderer(), "", ""])
        text = text[: matches[0].start(2)] + body + text[matches[0].end(2) :]
    return text


def readme_blocks(engine: Results, sdk: Results) -> dict[str, Renderer]:
    return {
        "engine": lambda: engine_table(engine),
        "engine-sizes": lambda: engine_sizes_table(engine),
        "openai-agents": lambda: sdk_table(sdk),
    }


def draw_picture(path: Path, sdk: Results) -> None:
    """The picture: the SDK turn's panels of ``histcore bench --plot`` (needs matplotlib),
    drawn reproducibly: a fixed id salt and date, so that the same JSON draws the same
    SVG with the same matplotlib."""
    import matplotlib

    from histcore.cli.bench.plot import draw

    os.environ["SOURCE_DATE_EPOCH"] = "0"
    with matplotlib.rc_context({"svg.hashsalt": "histcore", "svg.fonttype": "none"}):
        draw(str(path), sdk=sdk.data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--results", type=Path, default=ROOT / "benches" / "results")
    parser.add_argument("--picture", type=Path, default=ROOT / PICTURE)
    args = parser.parse_args(argv)
    try:
        engine = load(args.results / "engine.json", ENGINE_FORMATS, ENGINE_COMMAND)
        sdk = load(
            args.results / "openai-agents.json", SDK_FORMATS, SDK_COMMAND.format(**SDK_DEFAULTS)
        )
        sdk = dataclasses.replace(sdk, command=sdk_command(sdk.data.get("settings")))
        current = args.readme.read_text(encoding="utf-8")
        rendered = render_text(current, readme_blocks(engine, sdk), str(args.readme))
    except (OSError, ReadmeTablesError) as exc:
        print(f"readme_tables.py: error: {exc}", file=sys.stderr)
        return 2
    if not args.check:
        args.readme.write_text(rendered, encoding="utf-8")
        draw_picture(args.picture, sdk)
        print(f"wrote {args.readme} and {args.picture}")
        return 0
    stale = current != rendered
    if stale:
        sys.stdout.writelines(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                rendered.splitlines(keepends=True),
                f"{args.readme} (as committed)",
                f"{args.readme} (rendered from {args.results})",
            )
        )
        print(
            "readme_tables.py: README.md differs from the committed benchmark JSON; "
            "run: python scripts/readme_tables.py",
            file=sys.stderr,
        )
    if not args.picture.is_file():
        print(f"readme_tables.py: {args.picture} is missing; run: python scripts/readme_tables.py")
        stale = True
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
