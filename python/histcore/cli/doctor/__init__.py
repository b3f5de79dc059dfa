"""``histcore doctor``: check, and with ``--fix`` repair, SQLite session stores.

``read`` opens a store and reads its rows, ``diagnose`` finds what is wrong with one
session, ``repair`` plans a session's fix and writes the backup, ``check`` runs all of
it over the store in one transaction, ``report`` renders the result as text or JSON and
``command`` holds the arguments and exit codes (registered in ``histcore.cli.main``).
"""

from __future__ import annotations

from histcore.cli.doctor.check import SessionReport, StoreReport, check_store
from histcore.cli.doctor.command import HELP, add_arguments, run
from histcore.cli.doctor.diagnose import Findings, diagnose
from histcore.cli.doctor.read import DoctorError, Row
from histcore.cli.doctor.report import render_json, render_text

__all__ = [
    "HELP",
    "DoctorError",
    "Findings",
    "Row",
    "SessionReport",
    "StoreReport",
    "add_arguments",
    "check_store",
    "diagnose",
    "render_json",
    "render_text",
    "run",
]
