"""Helpers of scripts/sdk-suite.sh (standard library only, run by the base Python).

suite.py files LISTS_DIR VERSION SDK_DIR SELECTION   the test files to run, one per
    line; the listed entries this sdist holds go to SELECTION (--histcore-select)
suite.py write-list LISTS_DIR VERSION TRACE...  merge trace files into the list
suite.py compare PLAIN.json INSTALLED.json [CHANGED.txt]   print counts; exit 1 on a
    changed outcome (and write the changed test ids to CHANGED.txt)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

HEADER = """\
# Tests of the openai-agents {version} sdist that reach a helper histcore's install()
# replaces (found by instrumenting those helpers over the whole suite), by test id; a
# line without "::" names a whole test file. scripts/sdk-suite.sh runs each of them
# plain and with install() and compares.
# Regenerate: scripts/sdk-suite.sh --regenerate-list {version}
"""

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "collect-error")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _read_list(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


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


def write_list(lists: Path, version: str, traces: list[Path]) -> int:
    reached: set[str] = set()
    for trace in traces:
        reached |= set(_read_list(trace))
    if not reached:
        sys.exit("sdk-suite: the traced run reached no replaced helper: refusing an empty list")
    files = {entry.split("::", 1)[0] for entry in reached}
    lists.mkdir(parents=True, exist_ok=True)
    target = lists / f"{version}.txt"
    text = HEADER.format(version=version) + "".join(f"{name}\n" for name in sorted(reached))
    target.write_text(text, encoding="utf-8")
    print(f"sdk-suite: wrote {len(reached)} test ids ({len(files)} files) to {target}")
    return 0


def _load(path: Path) -> dict[str, str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        sys.exit(f"sdk-suite: {path} is not an outcome map")
    return {str(key): str(value) for key, value in data.items()}


def _counts(outcomes: dict[str, str]) -> str:
    counted = Counter(outcomes.values())
    parts = [f"{counted[name]} {name}" for name in OUTCOMES if counted[name]]
    return f"{len(outcomes)} tests: " + ", ".join(parts)


def compare(plain_path: Path, installed_path: Path, changed_path: Path | None = None) -> int:
    plain, installed = _load(plain_path), _load(installed_path)
    print(f"  plain:     {_counts(plain)}")
    print(f"  installed: {_counts(installed)}")
    changed = [
        (nodeid, plain.get(nodeid, "absent"), installed.get(nodeid, "absent"))
        for nodeid in sorted(plain.keys() | installed.keys())
        if plain.get(nodeid) != installed.get(nodeid)
    ]
    if not plain:
        print("  no test ran: nothing was compared")
        return 1
    print(f"  changed outcomes: {len(changed)}")
    for nodeid, before, after in changed:
        print(f"    {nodeid}: {before} -> {after}")
    if changed_path is not None:
        changed_path.write_text("".join(f"{nodeid}\n" for nodeid, _, _ in changed))
    return 1 if changed else 0


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[0] == "files":
        return files(Path(argv[1]), argv[2], Path(argv[3]), Path(argv[4]))
    if len(argv) >= 3 and argv[0] == "write-list":
        return write_list(Path(argv[1]), argv[2], [Path(p) for p in argv[3:]])
    if len(argv) in (3, 4) and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]), Path(argv[3]) if len(argv) == 4 else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
