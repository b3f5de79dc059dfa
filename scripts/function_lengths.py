"""Fail when a Python function in the package is longer than the limit (100 lines).

    python scripts/function_lengths.py [--limit N] [paths...]   (default: python/histcore)

A function's length runs from its ``def`` (decorators excluded) to its last line, so
it counts docstrings and comments: what a reader has to scroll through. Rust functions
are held to the same bound by clippy's ``too_many_lines``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def long_functions(path: Path, limit: int) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append(f"{path}:{node.lineno}: {node.name} is {length} lines")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("paths", nargs="*", default=["python/histcore"])
    args = parser.parse_args(argv)
    files = sorted(
        file
        for path in map(Path, args.paths)
        for file in (path.rglob("*.py") if path.is_dir() else [path])
    )
    found = [line for file in files for line in long_functions(file, args.limit)]
    print(
        "\n".join(found) if found else f"no function over {args.limit} lines ({len(files)} files)"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
