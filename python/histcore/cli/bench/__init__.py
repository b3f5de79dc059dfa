"""Benchmarks of the engine on large generated histories (``histcore bench``).

``generate`` builds the histories, ``reference`` binds the OpenAI Agents SDK's
equivalents and the baselines, ``engine`` defines and runs the suite, ``report``
prints and serialises its results, ``command`` is the command-line entry.
"""
