"""Benchmarks of the engine on large generated histories (``histcore bench``).

``histcore.testing_histories`` builds the histories, ``reference`` binds the OpenAI
Agents SDK's equivalents and the baselines, ``engine`` defines and runs the suite,
``report`` prints and serialises its results, ``environment`` records where they were
taken, ``plot`` draws them, ``sdk_conversation`` times the drop-in's conversation turns
(``--openai-agents``), ``command`` is the command-line entry.
"""
