"""``histcore doctor``: check, and with ``--fix`` repair, session stores.

``read`` decodes rows and opens SQLite stores (``postgres`` PostgreSQL ones),
``diagnose`` finds what is wrong with one session, ``dedupe`` and ``repair`` plan a
session's fix, ``check`` runs it all over the store a session at a time, ``report``
renders the result as text or JSON and ``command`` holds the arguments and exit codes
(registered in ``histcore.cli.main``).
"""
