"""What histcore's SQL-backed stores share, whatever the database.

``check_table_name`` is the one rule for the table names a store puts into its SQL
(the session stores and the run-state stores alike).
"""

from __future__ import annotations

import re

__all__ = ["check_table_name"]

# Table names go into SQL text, so only plain identifiers are accepted. At most 51
# characters: PostgreSQL silently cuts identifiers longer than 63 bytes, so a cap well
# below that keeps every name exactly the table it names; and one rule for every store
# means a name that works with SQLite works with PostgreSQL too.
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,50}\Z")


def check_table_name(name: object, argument: str) -> str:
    """``name`` if it is a plain SQL identifier of at most 51 characters; otherwise a
    ValueError naming ``argument``, the parameter it was passed as."""
    if not isinstance(name, str) or not _TABLE_NAME.match(name):
        raise ValueError(
            f"{argument} must be a plain SQL identifier (a letter or an underscore, then "
            f"letters, digits or underscores, 51 characters at most), got {name!r}"
        )
    return name
