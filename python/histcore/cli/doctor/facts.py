"""What the doctor keeps of a decoded item: the few fields its rules read.

A session of 10^6 items decoded whole takes gigabytes; the doctor's rules read six
fields of an item and nothing else, so a row keeps a small *stand-in* dict holding
those (and the decoded item is dropped as soon as it is read):

* the model-input rules (``histcore.items.input_problems`` and ``repair_input``, in
  both engines: ``engine/pure/input_rules.py``, ``rust/py/input_rules.rs``) read
  ``type``, ``role``, ``id``, ``call_id``, ``status`` and ``caller`` (its ``type`` and
  ``caller_id``), each compared with a str or tested for None;
* the dedupe of tool items (``dedupe.py``, and the engine's dedupe it is checked
  against) reads ``type``, ``role`` and ``call_id`` of the items ``tool_role`` names,
  and ``id``;
* the doctor's own checks read ``call_id`` (``tool_role``, ``pair_key``).

A stand-in gives each of these reads the answer the item gives. A value the rules
compare with a str (or test for None) is kept when it is a str, a number, a bool or
None, which compare as they are and cost little. A list or dict there (a JSON value
no rule can take as a str) becomes ``0``: like the original it is not None, is no str
and equals no str. ``caller`` becomes ``{"type": "program", "caller_id": ...}`` when
it is a dict whose type is "program" (the only caller the rules tell apart), and
``0`` otherwise; a missing field stays missing.
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
