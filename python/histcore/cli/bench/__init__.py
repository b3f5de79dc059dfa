"""Benchmarks of the engine on large generated histories (``histcore bench``).

``generate`` builds the histories, ``reference`` binds the OpenAI Agents SDK's
equivalents and the baselines, ``engine`` defines and runs the suite, ``report``
prints and serialises its results, ``command`` is the command-line entry.
"""

from __future__ import annotations

from histcore.cli.bench.generate import generate_history, pending_programs, reasoning_run

__all__ = ["generate_history", "pending_programs", "reasoning_run"]
