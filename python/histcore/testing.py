"""Test support for code built on histcore.

* Test doubles for histcore's Runner: the public face of ``histcore.runner.testing``
  (``ScriptedModel`` and the item builders).
* Deterministic, realistic conversation histories for tests and benchmarks
  (``generate_history`` and the pathological shapes ``pending_programs`` and
  ``reasoning_run``), implemented in ``histcore.testing_histories``.
"""

from __future__ import annotations

from histcore.runner.testing import (
    ModelCall,
    ScriptedModel,
    ScriptExhausted,
    function_call,
    function_call_output,
    text_message,
    user_message,
)
from histcore.testing_histories import (
    DUPLICATE_SHARE,
    MAX_TEXT,
    MIN_TEXT,
    generate_history,
    pending_programs,
    reasoning_run,
)

__all__ = [
    "DUPLICATE_SHARE",
    "MAX_TEXT",
    "MIN_TEXT",
    "ModelCall",
    "ScriptExhausted",
    "ScriptedModel",
    "function_call",
    "function_call_output",
    "generate_history",
    "pending_programs",
    "reasoning_run",
    "text_message",
    "user_message",
]
