"""What the doctor keeps of a decoded item: the few fields its rules read.

The model-input rules, the dedupe of tool items and the doctor's own checks read only
``type``, ``role``, ``id``, ``call_id``, ``status`` and ``caller`` (its ``type`` and
``caller_id``) of an item, each compared with a str or tested for None. So a row keeps
a small *stand-in* dict of those, and the decoded item is dropped as soon as it is read.

Rule: each read gets the answer the item gives. A str, number, bool or None is kept as
it is; a list or dict there becomes ``0`` (not None, no str, equal to no str);
``caller`` becomes ``{"type": "program", "caller_id": ...}`` when it is a dict of type
"program" (the only caller the rules tell apart), ``0`` otherwise; a missing field stays
missing. Memory use: docs/doctor.md, "Memory".
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["RULE_FIELDS", "stand_in"]

#: The fields of an item that the doctor's rules read.
RULE_FIELDS = ("type", "role", "id", "call_id", "status", "caller")
# Fields whose values repeat across a session's items: one str object for all of them.
_SHARED = frozenset({"type", "role", "status"})
# Not None, no str, equal to no str: what a list or dict value is to every rule.
_OPAQUE = 0


def stand_in(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``item`` (a decoded JSON object) that the rules read, reading as
    they do in ``item`` (see the module docstring)."""
    found: dict[str, Any] = {}
    for name in RULE_FIELDS:
        value = item.get(name)
        if value is None:
            continue
        if name == "caller":
            found[name] = _caller(value)
        elif isinstance(value, str):
            found[name] = sys.intern(value) if name in _SHARED else value
        elif isinstance(value, (int, float)):  # bool too
            found[name] = value
        else:
            found[name] = _OPAQUE
    return found


def _caller(value: Any) -> Any:
    # The rules ask of a caller only: is it a dict whose "type" is "program", and if
    # so, its "caller_id" as a str.
    if not isinstance(value, dict) or value.get("type") != "program":
        return _OPAQUE
    caller_id = value.get("caller_id")
    program = {"type": "program"}
    if isinstance(caller_id, str):
        program["caller_id"] = caller_id
    return program
