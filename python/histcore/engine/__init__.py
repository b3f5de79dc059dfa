"""The engine layer: item-level history passes and the machinery under them.

``items`` is the public API, written once over whichever engine ``backend`` loaded:
the Rust extension ``histcore._core`` or the pure twin ``pure``. ``vocabulary`` names
the item types both engines know, ``exact_json`` reads and writes JSON that round-trips
exactly, ``pairing`` matches tool calls with their outputs, and ``collector`` pauses the
cyclic garbage collector around bulk copies. Nothing here imports sessions, the runner
or the tools above it (the import contract in pyproject.toml checks this).
"""
