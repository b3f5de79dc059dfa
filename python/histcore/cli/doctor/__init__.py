"""``histcore doctor``: check, and with ``--fix`` repair, session stores.

``read`` keeps what the rules read of each row, ``sqlite`` and ``postgres`` are the
stores' readers (``histcore.sessions._store_readers``) with backup and repair,
``diagnose`` finds what is wrong with one session, ``dedupe`` and ``repair`` plan a
session's fix, ``check`` runs it all over the store a session at a time, ``report``
renders the result as text or JSON and ``command`` holds the arguments and exit codes
(registered in ``histcore.cli.main``).
"""
