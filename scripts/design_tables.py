"""Render docs/design.md's table of the drop-in's patches from the table module.

    python scripts/design_tables.py            # rewrite docs/design.md in place
    python scripts/design_tables.py --check    # exit 1 with a diff if it is stale

The table sits in docs/design.md between ``<!-- table:patches:start -->`` and
``<!-- table:patches:end -->``; everything between them is generated from
``histcore.openai_agents._table`` (``GROUPS``, then the ``GUARD_GROUPS`` of
``install(guard=True)``): one row per replaced SDK name, with its group, what the
group replaces, the module defining it and the other SDK modules known to import it
(``Target.imported_by``), where ``install()`` rebinds it too. Text outside the markers
is left alone; a missing marker stops the script with an error (exit 2). Nothing is
imported from the SDK and nothing is installed.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from histcore.openai_agents import _table
from histcore.openai_agents._patches import Group

ROOT = Path(__file__).resolve().parent.parent

NAME = "patches"
COMMAND = "python scripts/design_tables.py"
HEADER = (
    "| group | what it replaces | SDK module | name | also rebound in |",
    "| --- | --- | --- | --- | --- |",
)


class DesignTablesError(Exception):
    """A problem with the inputs: a missing or repeated marker."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rows(groups: Iterable[Group], guard: bool) -> list[str]:
    """One row per target of ``groups``; the group and its summary on its first row."""
    lines: list[str] = []
    for group in groups:
        label = f"{group.name} (guard)" if guard else group.name
        about = group.about
        if group.needs:
            about += f"; only with {', '.join(group.needs)} installed"
        for index, target in enumerate(group.targets):
            if not target.bound:
                also = "none: pinned for each call of `prepare_input_with_session`"
            else:
                also = ", ".join(f"`{module}`" for module in target.imported_by) or "-"
            first = index == 0
            lines.append(
                f"| {label if first else ''} | {_cell(about) if first else ''} "
                f"| `{group.module}` | `{target.name}` | {also} |"
            )
    return lines


def render() -> list[str]:
    """The generated block: a stamp line, then the table."""
    return [
        f"Generated from `python/histcore/openai_agents/_table.py` by `{COMMAND}`; "
        "the groups marked (guard) are bound by `install(guard=True)` only.",
        "",
        *HEADER,
        *rows(_table.GROUPS, guard=False),
        *rows(_table.GUARD_GROUPS, guard=True),
    ]


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- table:{re.escape(name)}:start -->\n)(.*?)(<!-- table:{re.escape(name)}:end -->)",
        re.S,
    )


def render_text(text: str, where: str) -> str:
    """``text`` with the marked block replaced by ``render()``."""
    matches = list(_block(NAME).finditer(text))
    if len(matches) != 1:
        raise DesignTablesError(
            f"{where}: expected one '<!-- table:{NAME}:start -->' ... "
            f"'<!-- table:{NAME}:end -->' pair of lines"
        )
    body = "\n".join(["", *render(), "", ""])
    return text[: matches[0].start(2)] + body + text[matches[0].end(2) :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale")
    parser.add_argument("--design", type=Path, default=ROOT / "docs" / "design.md")
    args = parser.parse_args(argv)
    try:
        current = args.design.read_text(encoding="utf-8")
        rendered = render_text(current, str(args.design))
    except (OSError, DesignTablesError) as exc:
        print(f"design_tables.py: error: {exc}", file=sys.stderr)
        return 2
    if not args.check:
        if rendered != current:
            args.design.write_text(rendered, encoding="utf-8")
        print(f"wrote {args.design}")
        return 0
    if current == rendered:
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            rendered.splitlines(keepends=True),
            f"{args.design} (as committed)",
            f"{args.design} (rendered from the drop-in's table)",
        )
    )
    print(
        f"design_tables.py: {args.design} differs from the drop-in's table; run: {COMMAND}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
