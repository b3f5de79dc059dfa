"""The engine layer: item-level history passes and the machinery under them.

``histcore.engine.items`` is its API, over whichever backend module was loaded (the
Rust extension or the pure twin). Nothing here imports sessions, the runner or the
tools above it (the import contract in pyproject.toml checks this). The modules are
listed in docs/design.md, "Layout".
"""
