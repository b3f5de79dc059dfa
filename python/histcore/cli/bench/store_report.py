"""The report of ``histcore bench --store/--dsn``: the table (``render``) and the
``--json`` document (``to_json``, format ``FORMAT``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histcore.cli.bench.report import header
from histcore.cli.bench.store_curve import Point, Storage
from histcore.cli.bench.store_plan import NEW_MESSAGE, PASSES, TURN_MESSAGE
from histcore.cli.bench.store_timing import Pair, SessionResult, StoreResult
from histcore.cli.bench.timing import Timing
from histcore.cli.bench.units import format_seconds

__all__ = ["FORMAT", "render", "to_json"]

FORMAT = "histcore-bench-store/1"


# --- report -----------------------------------------------------------------------------


def _seconds(timing: Timing | None) -> str:
    return "-" if timing is None else format_seconds(timing.median)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def _columns(result: StoreResult) -> list[tuple[str, str, int, Callable[[SessionResult], str]]]:
    """(group, name, width, cell) of every column after the session id and size."""
    columns: list[tuple[str, str, int, Callable[[SessionResult], str]]] = [
        ("read (fresh, full)", "histcore", 9, lambda s: _seconds(s.read.histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.read.other)),
        ("", "speedup", 7, lambda s: _ratio(s.read.speedup)),
        ("re-read", "cached", 9, lambda s: _seconds(s.reread)),
        ("prepare_input", "histcore", 9, lambda s: _seconds(s.prepare.histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.prepare.other)),
        ("", "speedup", 7, lambda s: _ratio(s.prepare.speedup)),
        ("engine passes", "histcore", 9, lambda s: _seconds(s.passes_total().histcore)),
        ("", "SDK", 9, lambda s: _seconds(s.passes_total().other)),
        ("", "speedup", 7, lambda s: _ratio(s.passes_total().speedup)),
    ]
    if result.plan.turn:
        columns += [
            ("SDK turn", "plain", 9, lambda s: _seconds(s.turn.other if s.turn else None)),
            ("", "installed", 9, lambda s: _seconds(s.turn.histcore if s.turn else None)),
            ("", "speedup", 7, lambda s: _ratio(s.turn.speedup if s.turn else None)),
        ]
    return columns


def _short(session_id: str, width: int) -> str:
    return session_id if len(session_id) <= width else session_id[: width - 3] + "..."


def _table(result: StoreResult) -> list[str]:
    width = min(max([7, *(len(s.session_id) for s in result.sessions)]), 32)
    columns = _columns(result)
    groups = f"{'':<{width}}  {'':>7}"
    names = f"{'session':<{width}}  {'items':>7}"
    for group, name, size, _ in columns:
        groups += f"  {group:<{size}}" if group else f"  {'':<{size}}"
        names += f"  {name:>{size}}"
    lines = [groups.rstrip(), names]
    for session in result.sessions:
        line = f"{_short(session.session_id, width):<{width}}  {session.items:>7}"
        line += "".join(f"  {cell(session):>{size}}" for _, _, size, cell in columns)
        lines.append(line)
    return lines


def _legend(result: StoreResult) -> list[str]:
    plan = result.plan
    sdk_read = (
        "the SDK's SQLiteSession.get_items on a private copy of the session's rows"
        if plan.kind == "sqlite"
        else "none (the SDK's SQLite session cannot read a PostgreSQL store)"
    )
    lines = [
        "read: every call reads and decodes all the session's rows (histcore: "
        f"cache_history=False); SDK: {sdk_read}",
        "re-read: histcore's default session reading again, nothing new (its history cache)",
        f"prepare_input: prepare_input_with_session({NEW_MESSAGE!r}), no callback, read "
        "included, nothing persisted",
        f"engine passes: {', '.join(PASSES)} (summed; each in --json)",
    ]
    if plan.turn:
        lines.append(
            f"SDK turn: Runner.run({TURN_MESSAGE!r}), scripted model, on a copy of the session; "
            "plain against install(), results checked identical"
        )
    if not plan.sdk:
        lines.append("SDK columns empty: openai-agents is not installed (or --no-reference)")
    return lines


_NOISE = "~"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def _curve_ratio(point: Point, phase: str) -> str:
    ratio = point.ratio(phase)
    text = "-" if ratio is None else f"{ratio:.1f}x"
    return _NOISE + text if point.within_noise(phase) else text


def _curve(session: SessionResult) -> list[str]:
    """The session as it grew: ms per turn plain, installed and guarded, and the phases."""
    lines = [
        f"session {session.session_id!r} as it grew (ms per turn; {_NOISE} within noise):",
        f"  {'items':>8}  {'plain':>9}  {'installed':>9}  {'ratio':>7}  {'guarded':>9}"
        f"  {'read':>9}  {'read inst':>9}  {'ratio':>7}  {'prepare':>9}  {'prep inst':>9}",
    ]
    for point in session.curve:
        plain, fast = point.plain, point.installed
        lines.append(
            f"  {point.items:>8,}  {_ms(plain['turn'].median):>9}  {_ms(fast['turn'].median):>9}"
            f"  {_curve_ratio(point, 'turn'):>7}  {_guarded(point):>9}"
            f"  {_ms(plain['read'].median):>9}"
            f"  {_ms(fast['read'].median):>9}  {_curve_ratio(point, 'read'):>7}"
            f"  {_ms(point.prepare('plain')):>9}  {_ms(point.prepare('installed')):>9}"
        )
    return lines


def _guarded(point: Point) -> str:
    """The guarded turn; ``~`` when within noise of the installed one, ``*`` when the
    guard repaired the model input."""
    if point.guarded is None:
        return "-"
    text = _ms(point.guarded["turn"].median) + ("*" if point.guard_repaired else "")
    return text if point.guard_cost() is not None else _NOISE + text


def _bytes(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


def _storage(storage: Storage) -> list[str]:
    per_item = "-" if storage.per_item is None else _bytes(storage.per_item)
    tables = ", ".join(f"{name} {_bytes(size)}" for name, size in storage.tables.items())
    wal = "" if storage.wal is None else f"; WAL file {_bytes(storage.wal)}"
    return [
        f"storage ({storage.method}): {_bytes(storage.total)} in all, {storage.rows:,} stored "
        f"rows, {per_item} per row{wal}",
        *([f"  per table (indexes included): {tables}"] if tables else []),
    ]


def _curve_legend(result: StoreResult) -> list[str]:
    if not result.plan.sdk:
        return [
            "no growth curve: it times the SDK's SQLiteSession (openai-agents not installed, "
            "or --no-reference)"
        ]
    return [
        "as it grew: each size a private SQLite copy of the session's first items; plain = "
        "the SDK's SQLiteSession, installed = under histcore.openai_agents.install(), "
        f"guarded = under install(guard=True) ({_NOISE} within noise of installed, * the "
        "guard repaired the model input; its check before each model call, in the run "
        "loop, is not part of a turn here); turn = "
        f"prepare_input_with_session({NEW_MESSAGE!r}) with its read, read = get_items, "
        "prepare = turn - read; the same session object turn after turn, nothing new between "
        f"turns; medians; {_NOISE} = the samples' min-max ranges overlap (within noise)",
    ]


def render(result: StoreResult) -> str:
    plan = result.plan
    kind = "SQLite" if plan.kind == "sqlite" else "PostgreSQL"
    lines = header(result.environment, "benchmark of stored sessions")
    lines += [
        f"store: {result.name} ({kind}, read-only; tables {plan.tables.sessions}, "
        f"{plan.tables.messages}); {len(result.sessions)} session(s)",
        f"engine: {result.environment.backend}; medians of up to {plan.repeat} samples",
        *[f"note: {note}" for note in result.notes],
        "",
        *_table(result),
        "",
        *_legend(result),
    ]
    for session in result.sessions:
        lines += [f"note: session {session.session_id!r}: {note}" for note in session.notes]
    for session in result.sessions:
        if session.curve:
            lines += ["", *_curve(session)]
    lines += ["", *_curve_legend(result)]
    if result.storage is not None:
        lines += ["", *_storage(result.storage)]
    verdicts = [s for s in result.sessions if s.verdict is not None]
    if verdicts:
        lines.append("")
        lines += [f"verdict: session {s.session_id!r}: {s.verdict}" for s in verdicts]
    return "\n".join(lines)


def _pair_json(pair: Pair, other: str = "sdk") -> dict[str, Any]:
    return {
        "histcore": None if pair.histcore is None else pair.histcore.to_json(),
        other: None if pair.other is None else pair.other.to_json(),
        "speedup": pair.speedup,
    }


def _session_json(session: SessionResult) -> dict[str, Any]:
    turn = None
    if session.turn is not None:
        turn = {
            "plain": session.turn.other.to_json() if session.turn.other else None,
            "installed": session.turn.histcore.to_json() if session.turn.histcore else None,
            "speedup": session.turn.speedup,
        }
    return {
        "session_id": session.session_id,
        "items": session.items,
        "rows": session.rows,
        "read": {**_pair_json(session.read), "fresh_full_read": True},
        "reread_cached": {"histcore": None if session.reread is None else session.reread.to_json()},
        "prepare_input": {
            **_pair_json(session.prepare),
            "model_input_items": (
                None
                if session.prepare_inputs is None
                else dict(zip(("histcore", "sdk"), session.prepare_inputs, strict=True))
            ),
        },
        "passes": {name: _pair_json(pair) for name, pair in session.passes.items()},
        "passes_total": _pair_json(session.passes_total()),
        "turn": turn,
        "skipped_rows": [
            {"row_id": row_id, "problem": problem} for row_id, problem in session.skipped
        ],
        "notes": list(session.notes),
        "curve": [point.to_json() for point in session.curve],
        "verdict": session.verdict,
    }


def to_json(result: StoreResult) -> dict[str, Any]:
    plan = result.plan
    return {
        "format": FORMAT,
        "environment": result.environment.to_json(),
        "store": {
            "kind": plan.kind,
            "name": result.name,
            "sessions_table": plan.tables.sessions,
            "messages_table": plan.tables.messages,
            "notes": list(result.notes),
            "storage": None if result.storage is None else result.storage.to_json(),
        },
        "settings": {
            "repeat": plan.repeat,
            "sdk": plan.sdk,
            "openai_agents_turn": plan.turn,
            "passes": list(PASSES),
            "new_message": NEW_MESSAGE,
            "turn_message": TURN_MESSAGE if plan.turn else None,
        },
        "sessions": [_session_json(session) for session in result.sessions],
    }
