"""The runner layer: agents, tools, models, runs and their resumable ``RunState``.

It stands on ``histcore.sessions`` and ``histcore.engine``; nothing below imports it.
``state_store`` keeps ``RunState`` checkpoints (memory, SQLite, PostgreSQL) and
``testing`` holds the scripted model used by tests and examples.
"""
