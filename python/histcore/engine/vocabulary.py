"""The item vocabulary every history pass shares: tool-call and output types, the
precursor types that keep their earliest position, program-owned hosted items, the
SDK's placeholder id and its session-only metadata keys, the user-side roles and the
kinds of model-input problems; the one check that a list holds only exact dicts, and
how a str value is read (``exact_text``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "CALL_AND_OUTPUT_TYPES",
    "CALL_TO_OUTPUT_TYPE",
    "FAKE_ID",
    "METADATA_KEYS",
    "OUTPUT_TO_CALL_TYPE",
    "OUTPUT_TYPES",
    "PRECURSOR_TYPES",
    "PROBLEM_KINDS",
    "PROGRAM_OWNED_HOSTED_TYPES",
    "USER_SIDE_ROLES",
    "all_exact_dicts",
    "exact_text",
]

CALL_TO_OUTPUT_TYPE: dict[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "tool_search_call": "tool_search_output",
    "program": "program_output",
}
OUTPUT_TO_CALL_TYPE: dict[str, str] = {output: call for call, output in CALL_TO_OUTPUT_TYPE.items()}
OUTPUT_TYPES = frozenset(CALL_TO_OUTPUT_TYPE.values())
CALL_AND_OUTPUT_TYPES = frozenset(CALL_TO_OUTPUT_TYPE) | OUTPUT_TYPES
# Items that must keep their earliest position so they never move behind a follower.
PRECURSOR_TYPES = frozenset(CALL_TO_OUTPUT_TYPE) | {"mcp_approval_request", "reasoning"}
# Hosted items whose presence keeps the program that issued them alive.
PROGRAM_OWNED_HOSTED_TYPES = frozenset(
    {
        "hosted_tool_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
FAKE_ID = "__fake_id__"
METADATA_KEYS = ("_agents_tool_description", "_agents_tool_title")
#: Roles of the messages a repair never drops.
USER_SIDE_ROLES = frozenset({"user", "system", "developer"})

#: Every kind ``input_problems`` reports, with the rule letter of docs/design.md.
PROBLEM_KINDS = {
    "output_without_call": "a",
    "call_without_output": "b",
    "call_awaiting_output": "b",
    "duplicate_id": "c",
    "reasoning_without_item": "d",
    "item_without_reasoning": "e",
    "reasoning_without_successor": "f",
}


def all_exact_dicts(items: Iterable[Any]) -> bool:
    """True when every item is an exact ``dict`` (no subclass), as for no items at all:
    one C-level pass over the types, for the plain-dict fast paths."""
    return set(map(type, items)) <= {dict}


def exact_text(value: Any) -> str | None:
    """An exact str of a str value (subclasses compare by their characters)."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    return None
