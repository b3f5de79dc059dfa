"""``histcore doctor``: check, and with ``--fix`` repair, session stores.

``read`` decodes rows and opens SQLite stores (``postgres`` PostgreSQL ones),
``diagnose`` finds what is wrong with one session, ``dedupe`` and ``repair`` plan a
session's fix, ``check`` runs it all over the store a session at a time, ``report``
renders the result as text or JSON and ``command`` holds the arguments and exit codes
(registered in ``histcore.cli.main``).
"""

from __future__ import annotations

from histcore.cli.doctor.check import SessionReport, StoreReport, check_store
from histcore.cli.doctor.command import HELP, add_arguments, run
from histcore.cli.doctor.diagnose import Findings, analyse, diagnose
from histcore.cli.doctor.read import DoctorError, Row, StoreLocked
from histcore.cli.doctor.repair import plan_repair
from histcore.cli.doctor.report import render_json, render_text

__all__ = [
    "HELP",
    "DoctorError",
    "Findings",
    "Row",
    "SessionReport",
    "StoreLocked",
    "StoreReport",
    "add_arguments",
    "analyse",
    "check_store",
    "diagnose",
    "plan_repair",
    "render_json",
    "render_text",
    "run",
]
