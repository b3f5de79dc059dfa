"""``histcore bench --store``: each session replayed as it grew (plain against
install()), a verdict per session, the store's storage sizes, and ``--plot``."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from histcore.cli.bench import store_curve
from histcore.cli.bench.store_curve import Point, curve_sizes, verdict
from histcore.cli.bench.timing import Timing
from tests.cli.test_bench_store import _pg_execute, error_of, fingerprint, run_cli, sdk_store
from tests.support.pg import require_pg, require_psycopg, unique

SIZES = {"alpha": 24, "beta": 5}


def small_sdk_store(path: Path) -> Path:
    return sdk_store(path, SIZES)


def page_bytes(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True)
    try:
        count = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        rows = conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0]
        return int(count * size), int(rows)
    finally:
        conn.close()


def test_sessions_are_replayed_as_they_grew_with_a_verdict_storage_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    path = small_sdk_store(tmp_path / "sdk.db")
    before = fingerprint(path)
    out_json, out_png = tmp_path / "out.json", tmp_path / "curve.png"
    code, out, err = run_cli(
        capsys,
        "--store",
        str(path),
        "--repeat",
        "1",
        "--json",
        str(out_json),
        "--plot",
        str(out_png),
    )
    assert code == 0, err
    # The store is untouched: same bytes, same mtime, no side files left.
    assert fingerprint(path) == before
    assert not any(os.path.exists(f"{path}{suffix}") for suffix in ("-wal", "-shm"))
    file_bytes, stored_rows = page_bytes(path)
    report = json.loads(out_json.read_text(encoding="utf-8"))
    for entry in report["sessions"]:
        curve = entry["curve"]
        sizes = [point["items"] for point in curve]
        assert sizes == sorted(set(sizes))
        assert sizes[-1] == SIZES[entry["session_id"]]
        assert len(sizes) == min(store_curve.POINTS, SIZES[entry["session_id"]])
        for point in curve:
            for mode in ("plain", "installed", "guarded"):
                for phase in ("read", "turn"):
                    # --json keeps every sample (at least CURVE_SAMPLES, for the noise check).
                    samples = point[mode][phase]["samples_s"]
                    assert len(samples) == store_curve.CURVE_SAMPLES
                    assert min(samples) > 0
            assert isinstance(point["within_noise"], bool)
            # The guard's cost: None when within noise of install(), else the difference.
            assert isinstance(point["guard_within_noise"], bool)
            assert (point["guard_cost_s"] is None) == point["guard_within_noise"]
            assert point["guard_repaired"] is False  # generated histories break no rule
        assert entry["verdict"]
        assert f"verdict: session {entry['session_id']!r}: {entry['verdict']}" in out
        assert f"session {entry['session_id']!r} as it grew" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("items"))
    assert header.split()[:5] == ["items", "plain", "installed", "ratio", "guarded"]
    assert "guarded = under install(guard=True)" in out
    # The verdict lines end the report, one per session.
    assert [line.split("'")[1] for line in out.strip().splitlines()[-2:]] == list(SIZES)
    storage = report["store"]["storage"]
    assert storage["method"] == "dbstat"
    assert storage["total_bytes"] == file_bytes == path.stat().st_size
    assert storage["stored_rows"] == stored_rows == sum(SIZES.values())
    assert storage["bytes_per_item"] == pytest.approx(file_bytes / stored_rows)
    assert storage["wal_bytes"] == 0
    tables = storage["tables_bytes"]
    assert tables["agent_messages"] > 0
    assert tables["agent_sessions"] > 0
    assert sum(tables.values()) == file_bytes  # dbstat counts every page
    assert "storage (dbstat):" in out
    # --plot drew a PNG.
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {out_png}" in err


def test_the_store_figure_has_a_plain_and_an_installed_line_per_session() -> None:
    pytest.importorskip("matplotlib")
    from histcore.cli.bench import plot

    def point(items: int, plain: float, installed: float) -> dict[str, Any]:
        return {
            "items": items,
            "plain": {"turn": {"median_s": plain}},
            "installed": {"turn": {"median_s": installed}},
        }

    document = {
        "environment": {"histcore": "0"},
        "sessions": [
            {"session_id": "a", "curve": [point(1, 1e-3, 5e-4), point(10, 1e-2, 1e-3)]},
            {"session_id": "b", "curve": [point(3, 2e-3, 1e-3)]},
            {"session_id": "empty", "curve": []},
        ],
    }
    lines = plot.store_figure(document).axes[0].get_lines()
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in lines}
    assert drawn == {
        "a: plain SDK": ([1, 10], [1e-3, 1e-2]),
        "a: with install()": ([1, 10], [5e-4, 1e-3]),
        "b: plain SDK": ([3], [2e-3]),
        "b: with install()": ([3], [1e-3]),
    }
    with pytest.raises(ValueError, match="no session has a growth curve"):
        plot.store_figure({"sessions": [{"session_id": "x", "curve": []}]})


def test_plot_with_store_needs_the_sdk_curve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    path = small_sdk_store(tmp_path / "sdk.db")
    err = error_of(
        capsys, "--store", str(path), "--no-reference", "--plot", str(tmp_path / "x.png")
    )
    assert "--plot with --store/--dsn draws the sessions' growth curves" in err
    err = error_of(capsys, "--store", str(path), "--plot", str(tmp_path / "nowhere" / "x.svg"))
    assert "--plot: directory" in err


def test_curve_sizes_spread_over_the_session() -> None:
    assert curve_sizes(0) == []
    assert curve_sizes(5) == [1, 2, 3, 4, 5]
    sizes = curve_sizes(4212)
    assert len(sizes) == 20
    assert sizes == sorted(set(sizes))
    assert sizes[-1] == 4212
    assert sizes[0] == 211


def _timing(*samples: float) -> Timing:
    return Timing(sorted(samples)[len(samples) // 2], samples, 1)


def _point(
    items: int,
    plain: tuple[float, ...],
    installed: tuple[float, ...],
    guarded: tuple[float, ...] | None = None,
) -> Point:
    read = _timing(1e-6, 1e-6, 1e-6)
    return Point(
        items,
        {"read": read, "turn": _timing(*plain)},
        {"read": read, "turn": _timing(*installed)},
        None if guarded is None else {"read": read, "turn": _timing(*guarded)},
    )


def test_the_verdict_names_the_gain_or_why_there_is_none() -> None:
    gain = _point(4212, (0.30, 0.31, 0.32), (0.027, 0.028, 0.029))
    assert verdict([_point(10, (1e-3,), (1e-3,)), gain]) == (
        "at 4,212 items a turn spends 310 ms in history handling; with install() 28 ms (11x)"
    )
    assert verdict([_point(50, (4e-4, 5e-4, 6e-4), (1e-4, 1e-4, 1e-4))]).endswith(
        "below 1 ms, nothing to gain here"
    )
    noisy = verdict([_point(900, (0.010, 0.012, 0.020), (0.008, 0.011, 0.013))])
    assert noisy.endswith("within noise, no measurable difference")
    assert verdict([_point(900, (0.010, 0.010, 0.010), (0.020, 0.020, 0.020))]).endswith(
        "(0.5x, slower)"
    )
    assert verdict([]) == "no items: nothing to time"


def test_the_verdict_says_what_the_guard_adds_when_measurable() -> None:
    plain, installed = (0.30, 0.31, 0.32), (0.027, 0.028, 0.029)
    gain = "at 4,212 items a turn spends 310 ms in history handling; with install() 28 ms (11x)"
    # The verdict stays plain against install(); the guard's cost follows it.
    guarded = _point(4212, plain, installed, (0.032, 0.033, 0.034))
    assert verdict([guarded]) == gain + "; the guard adds 5 ms"
    assert guarded.guard_cost() == pytest.approx(0.005)
    assert guarded.to_json()["guard_cost_s"] == pytest.approx(0.005)
    assert guarded.to_json()["guard_within_noise"] is False
    # Within noise of install(), or not timed: nothing said.
    noisy = _point(4212, plain, installed, (0.026, 0.0285, 0.030))
    assert verdict([noisy]) == gain
    assert noisy.guard_cost() is None
    assert noisy.to_json()["guard_within_noise"] is True
    assert verdict([_point(4212, plain, installed)]) == gain
    assert _point(4212, plain, installed).to_json()["guarded"] is None
    # A below-1-ms session still says what the guard adds.
    small = verdict([_point(50, (4e-4, 5e-4, 6e-4), (1e-4, 1e-4, 1e-4), (3e-4, 3e-4, 3e-4))])
    assert small.endswith("below 1 ms, nothing to gain here; the guard adds 200 us")


def test_postgres_storage_is_measured_per_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_psycopg()
    server = require_pg()
    pytest.importorskip("agents")
    from tests.cli.test_bench_store import _fill_postgres

    prefix = unique("bench_curve")
    tables = (f"{prefix}_sessions", f"{prefix}_messages")
    asyncio.run(_fill_postgres(server.dsn, tables, {"gamma": 4}))
    try:
        out_json = tmp_path / "out.json"
        code, out, err = run_cli(
            capsys,
            *("--dsn", server.dsn, "--sessions-table", tables[0], "--messages-table", tables[1]),
            *("--repeat", "1", "--json", str(out_json)),
        )
        assert code == 0, err
        report = json.loads(out_json.read_text(encoding="utf-8"))
        storage = report["store"]["storage"]
        assert storage["method"] == "pg_total_relation_size"
        sizes = {
            name: _pg_execute(server.dsn, f"SELECT pg_total_relation_size('{name}')")[0][0]
            for name in tables
        }
        assert {name: storage["tables_bytes"][name] for name in tables} == sizes
        assert all(size > 0 for size in sizes.values())
        # The database's other tables are not counted: only these and their side tables.
        assert all(name.startswith(prefix) for name in storage["tables_bytes"])
        assert storage["stored_rows"] == 4
        assert storage["wal_bytes"] is None
        assert [p["items"] for p in report["sessions"][0]["curve"]] == [1, 2, 3, 4]
        assert "verdict: session 'gamma':" in out
    finally:
        side = [f"{tables[0]}_{name}" for name in ("revisions", "op_ids", "archive", "writes")]
        _pg_execute(server.dsn, f"DROP TABLE IF EXISTS {', '.join([tables[1], *side, tables[0]])}")
