"""Helpers of scripts/sdk-suite.sh (standard library only, run by the base Python).

suite.py files LISTS_DIR VERSION SDK_DIR SELECTION   the test files to run, one per
    line; the listed entries this sdist holds go to SELECTION (--histcore-select)
suite.py write-list LISTS_DIR VERSION [--paths P,P...] TRACE...  merge trace files into
    the list; with --paths (the traced run covered only those test paths) the list's
    entries outside them are kept as they were
suite.py compare BASELINE.json OTHER.json --label NAME [--baseline-label NAME]
        [--within SELECTION] [--flaky FILE] [--repairs PATH]...
    print counts; exit 1 on a changed outcome that is neither a listed flaky test's nor,
    with --repairs (a guard run), one in a test during which the guard repaired a model
    input (those are printed with the rules that made it drop). --within: only the
    baseline's tests that SELECTION names (by id or by file) are compared
suite.py write-expected EXPECTED.json RUN.json RUN.json  the outcomes both plain runs
    agree on; the tests they disagree on are named and left out
suite.py whose EXPECTED.json RUN.json PLAIN_AGAIN.json CHANGED_IDS  for each test whose
    outcome changed from the kept one, whose change it is; exit 1 unless plain gives
    every run outcome again (then the kept outcomes are stale here, not histcore's)
suite.py paths LISTS_DIR VERSION COUNTS_DIR   print, per helper group install()
    replaced, the calls that took histcore's own path and the fallbacks (summed over
    every process's counts file); exit 1 when a replaced group has no call of its own,
    or no test in the version's list traced it
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

HEADER = """\
# Tests of the openai-agents {version} sdist that reach a helper histcore's install()
# replaces (found by instrumenting those helpers over the whole suite), by test id,
# each followed by a tab and the helper groups (histcore.openai_agents._table.GROUPS)
# it reached. scripts/sdk-suite.sh runs each of them plain and with install() and
# compares; a group no test reaches fails the run.
# Regenerate: scripts/sdk-suite.sh --regenerate-list {version}
"""

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "collect-error")

#: The tests known to change outcome in plain runs too (see the file's header).
FLAKY = Path(__file__).with_name("flaky.txt")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _entries(path: Path) -> list[tuple[str, frozenset[str]]]:
    """A list's (test id or file, groups) lines; ``#`` starts a comment line."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        nodeid, _, groups = line.partition("\t")
        entries.append((nodeid.strip(), frozenset(filter(None, groups.strip().split(",")))))
    return entries


def _read_list(path: Path) -> list[str]:
    return [nodeid for nodeid, _ in _entries(path)]


def list_for(lists: Path, version: str) -> tuple[Path, bool]:
    """The list of ``version``, or (warned) the newest one of the same minor release
    below it; exits when there is none."""
    exact = lists / f"{version}.txt"
    if exact.exists():
        return exact, True
    minor = _version_key(version)[:2]
    candidates = sorted(
        (
            path
            for path in lists.glob("*.txt")
            if _version_key(path.stem)[:2] == minor
            and _version_key(path.stem) <= _version_key(version)
        ),
        key=lambda path: _version_key(path.stem),
    )
    if not candidates:
        sys.exit(
            f"sdk-suite: no test list for openai-agents {version} in {lists}; "
            f"make one with: scripts/sdk-suite.sh --regenerate-list {version}"
        )
    return candidates[-1], False


def files(lists: Path, version: str, sdk_dir: Path, selection: Path) -> int:
    path, exact = list_for(lists, version)
    if not exact:
        print(
            f"sdk-suite: warning: no list for {version}, using {path.name} "
            f"(regenerate: scripts/sdk-suite.sh --regenerate-list {version})",
            file=sys.stderr,
        )
    listed = _read_list(path)
    present = [entry for entry in listed if (sdk_dir / entry.split("::", 1)[0]).is_file()]
    missing = sorted({entry.split("::", 1)[0] for entry in set(listed) - set(present)})
    if missing:
        print(
            f"sdk-suite: warning: {len(missing)} listed file(s) not in this sdist: "
            + ", ".join(missing),
            file=sys.stderr,
        )
    if not present:
        sys.exit(f"sdk-suite: none of the {len(listed)} entries of {path} is in the sdist")
    selection.write_text("".join(f"{entry}\n" for entry in present), encoding="utf-8")
    print("\n".join(sorted({entry.split("::", 1)[0] for entry in present})))
    return 0


def _under(nodeid: str, paths: tuple[str, ...]) -> bool:
    """Whether the test id ``nodeid`` lies in one of the test ``paths`` (files or dirs)."""
    file = nodeid.split("::", 1)[0]
    return any(file == p or file.startswith(p.rstrip("/") + "/") for p in paths)


def write_list(lists: Path, version: str, traces: list[Path], paths: tuple[str, ...] = ()) -> int:
    reached: dict[str, set[str]] = {}
    if paths:
        # A traced run over some paths: the rest of the list stays as the last whole run
        # found it.
        for nodeid, groups in _entries(lists / f"{version}.txt"):
            if not _under(nodeid, paths):
                reached[nodeid] = set(groups)
    for trace in traces:
        for nodeid, groups in _entries(trace):
            reached.setdefault(nodeid, set()).update(groups)
    if not reached:
        sys.exit("sdk-suite: the traced run reached no replaced helper: refusing an empty list")
    files = {entry.split("::", 1)[0] for entry in reached}
    lists.mkdir(parents=True, exist_ok=True)
    target = lists / f"{version}.txt"
    text = HEADER.format(version=version) + "".join(
        f"{nodeid}\t{','.join(sorted(groups))}\n" for nodeid, groups in sorted(reached.items())
    )
    target.write_text(text, encoding="utf-8")
    per_group = Counter(group for groups in reached.values() for group in groups)
    print(f"sdk-suite: wrote {len(reached)} test ids ({len(files)} files) to {target}")
    print("  tests per group: " + ", ".join(f"{g} {n}" for g, n in sorted(per_group.items())))
    return 0


# --- comparing outcomes ------------------------------------------------------------


def _load(path: Path) -> dict[str, str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        sys.exit(f"sdk-suite: {path} is not an outcome map")
    return {str(key): str(value) for key, value in data.items()}


def _counts(outcomes: dict[str, str]) -> str:
    counted = Counter(outcomes.values())
    parts = [f"{counted[name]} {name}" for name in OUTCOMES if counted[name]]
    return f"{len(outcomes)} tests: " + ", ".join(parts)


def read_flaky(path: Path) -> dict[str, str]:
    """``{test id: why}`` from the flaky list: ``id | reason: ... | evidence: ...`` lines,
    each with a reason and its evidence (anything else is refused)."""
    if not path.exists():
        return {}
    flaky: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(" | ")]
        fields = dict(part.split(":", 1) for part in parts[1:] if ":" in part)
        reason, evidence = fields.get("reason", "").strip(), fields.get("evidence", "").strip()
        if len(parts) != 3 or "::" not in parts[0] or not reason or not evidence:
            sys.exit(
                f"sdk-suite: {path}:{number}: expected 'TEST ID | reason: ... | evidence: ...'"
            )
        flaky[parts[0]] = f"{reason} ({evidence})"
    return flaky


def _repairs(paths: list[Path]) -> dict[str, dict[str, object]]:
    merged: dict[str, dict[str, object]] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            sys.exit(f"sdk-suite: {path} is not a repair map")
        merged.update(data)
    return merged


def _selected(outcomes: dict[str, str], selection: Path) -> dict[str, str]:
    """The outcomes of the tests a selection file names, by id or by file."""
    entries = set(_read_list(selection))
    return {
        nodeid: outcome
        for nodeid, outcome in outcomes.items()
        if nodeid in entries or nodeid.split("::", 1)[0] in entries
    }


def compare(
    plain_path: Path,
    other_path: Path,
    label: str,
    flaky_path: Path = FLAKY,
    repair_paths: list[Path] | None = None,
    baseline_label: str = "plain",
    within: Path | None = None,
) -> int:
    """0 when every test's outcome is the baseline's, or differs only where forgiven."""
    plain, other = _load(plain_path), _load(other_path)
    if within is not None:
        plain = _selected(plain, within)
    flaky = read_flaky(flaky_path)
    repairs = _repairs(repair_paths) if repair_paths is not None else {}
    width = max(len(baseline_label), len(label)) + 1
    print(f"  {baseline_label + ':':<{width}} {_counts(plain)}")
    print(f"  {label + ':':<{width}} {_counts(other)}")
    if not plain:
        print("  no test ran: nothing was compared")
        return 1
    changed = [
        (nodeid, plain.get(nodeid, "absent"), other.get(nodeid, "absent"))
        for nodeid in sorted(plain.keys() | other.keys())
        if plain.get(nodeid) != other.get(nodeid)
    ]
    failing = 0
    print(f"  changed outcomes ({label}): {len(changed)}")
    for nodeid, before, after in changed:
        repair = repairs.get(nodeid)
        if repair is not None:
            rules = repair.get("rules") or {}
            named = ", ".join(f"{kind} x{n}" for kind, n in dict(rules).items()) or "no rule"
            why = f"accepted: the guard repaired {repair.get('repaired')} input(s) ({named})"
        elif nodeid in flaky:
            why = f"forgiven: listed flaky, {flaky[nodeid]}"
        else:
            failing += 1
            why = "FAIL"
        print(f"    {nodeid}: {before} -> {after}  [{why}]")
    return 1 if failing else 0


def write_expected(target: Path, first: Path, second: Path) -> int:
    """Keep the plain outcomes two runs agree on; name the tests they disagree on."""
    one, two = _load(first), _load(second)
    if not one or not two:
        sys.exit("sdk-suite: a plain run recorded no outcome: refusing empty expectations")
    agreed = {nodeid: one[nodeid] for nodeid in sorted(one) if two.get(nodeid) == one[nodeid]}
    for nodeid in sorted(one.keys() | two.keys()):
        if one.get(nodeid) != two.get(nodeid):
            print(
                f"  left out, differs between two plain runs: {nodeid}: "
                f"{one.get(nodeid, 'absent')} / {two.get(nodeid, 'absent')}"
            )
    target.write_text(json.dumps(agreed, indent=0) + "\n", encoding="utf-8")
    print(f"sdk-suite: wrote {len(agreed)} plain outcomes to {target}: {_counts(agreed)}")
    return 0


def whose(expected_path: Path, changed_path: Path, again_path: Path, changed_ids: Path) -> int:
    """For each test whose run outcome differs from the kept one, say whose change it is.

    Plain gives the run's outcome again: not histcore's (the kept outcome is stale on
    this machine), forgiven and said. Plain gives the kept outcome: histcore's change.
    Plain gives a third outcome, or did not run the test: undecided. 1 unless every
    changed test is forgiven."""
    expected, changed, again = _load(expected_path), _load(changed_path), _load(again_path)
    ids = [line for line in changed_ids.read_text(encoding="utf-8").splitlines() if line]
    failing = 0
    for nodeid in ids:
        kept, ran = expected.get(nodeid, "absent"), changed.get(nodeid, "absent")
        now = again.get(nodeid, "absent")
        if now == ran:
            verdict = "not histcore's: plain gives the same here (stale kept outcome)"
        elif now == kept:
            verdict = "FAIL: histcore's change (plain gives the kept outcome)"
            failing += 1
        else:
            verdict = "FAIL: undecided (plain gives a third outcome)"
            failing += 1
        print(f"{nodeid}: kept {kept}, the run {ran}, plain again {now}: {verdict}")
    if not ids:
        print("no changed test to decide")
        return 1
    return 1 if failing else 0


# --- histcore's own paths ----------------------------------------------------------


def paths(lists: Path, version: str, counts_dir: Path) -> int:
    """Sum every process's path counts; 1 when a replaced group took no path of its own
    or no listed test reaches it."""
    installed: set[str] = set()
    for path in sorted(counts_dir.glob("installation-*.json")):
        installed.update(json.loads(path.read_text(encoding="utf-8"))["groups"])
    if not installed:
        print(f"  no installation was recorded in {counts_dir}: histcore's paths unchecked")
        return 1
    calls: Counter[str] = Counter()
    fallbacks: Counter[str] = Counter()
    processes = 0
    for path in sorted(counts_dir.glob("dropin-counts-*.json")):
        processes += 1
        for group, targets in json.loads(path.read_text(encoding="utf-8"))["groups"].items():
            for made, fell_back in targets.values():
                calls[group] += made
                fallbacks[group] += fell_back
    list_path, _ = list_for(lists, version)
    traced = Counter(group for _, groups in _entries(list_path) for group in groups)
    failing = []
    print(f"  histcore's own paths ({processes} process(es) counted; calls, own, fallbacks):")
    for group in sorted(installed):
        own = calls[group] - fallbacks[group]
        problems = []
        if own <= 0:
            problems.append("no call took histcore's path")
        if not traced[group]:
            problems.append(f"no test of {list_path.name} traced")
        if problems:
            failing.append(group)
        verdict = f"  FAIL: {'; '.join(problems)}" if problems else ""
        print(
            f"    {group:<22} {calls[group]:>9} {own:>9} {fallbacks[group]:>9}"
            f"  ({traced[group]} traced tests){verdict}"
        )
    return 1 if failing else 0


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[0] == "files":
        return files(Path(argv[1]), argv[2], Path(argv[3]), Path(argv[4]))
    if len(argv) >= 3 and argv[0] == "write-list":
        rest = argv[3:]
        traced: tuple[str, ...] = ()
        if rest[:1] == ["--paths"] and len(rest) >= 2:
            traced = tuple(filter(None, rest[1].split(",")))
            rest = rest[2:]
        return write_list(Path(argv[1]), argv[2], [Path(p) for p in rest], traced)
    if len(argv) == 4 and argv[0] == "paths":
        return paths(Path(argv[1]), argv[2], Path(argv[3]))
    if len(argv) == 4 and argv[0] == "write-expected":
        return write_expected(Path(argv[1]), Path(argv[2]), Path(argv[3]))
    if len(argv) == 5 and argv[0] == "whose":
        return whose(Path(argv[1]), Path(argv[2]), Path(argv[3]), Path(argv[4]))
    if argv[:1] == ["compare"]:
        parser = argparse.ArgumentParser(prog="suite.py compare")
        parser.add_argument("plain", type=Path)
        parser.add_argument("other", type=Path)
        parser.add_argument("--label", required=True)
        parser.add_argument("--flaky", type=Path, default=FLAKY)
        parser.add_argument("--repairs", type=Path, action="append")
        parser.add_argument("--baseline-label", default="plain")
        parser.add_argument("--within", type=Path)
        options = parser.parse_args(argv[1:])
        return compare(
            options.plain,
            options.other,
            options.label,
            options.flaky,
            options.repairs,
            options.baseline_label,
            options.within,
        )
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
