"""Test doubles for histcore's Runner: the public face of ``histcore.runner.testing``."""

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

__all__ = [
    "ModelCall",
    "ScriptExhausted",
    "ScriptedModel",
    "function_call",
    "function_call_output",
    "text_message",
    "user_message",
]
