"""Reading a session store as it is stored, row by row: what ``histcore doctor`` checks
and ``histcore bench --store``/``--dsn`` times, below both command-line tools.

``model.py``: ``Tables``, ``Row``, ``StoreError``/``StoreLocked`` and the
``StoreReader`` protocol; ``sqlite.py`` and ``postgres.py``: the readers of SQLite and
PostgreSQL stores (opened read-only unless a writer, the doctor, asks to write);
``sqlite_linked.py``: the ``AdvancedSQLiteSession`` tables linked to the messages;
``sqlite_files.py``: the ``-wal``/``-shm`` files a read-only open leaves. Private: no
part of histcore's API.
"""
