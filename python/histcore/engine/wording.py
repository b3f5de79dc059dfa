"""Words for error messages: "a" or "an" before a name ("an int", "an object", "a str").

Every layer names the type of a wrong value the same way through ``a_type_name``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["a_type_name", "with_article"]

# Names that start with a vowel letter but are said with a consonant ("a UUID", "a
# UserDict", "a UnicodeError", "a UnionType"): they take "a".
_SAID_WITH_A_CONSONANT = ("uu", "uni", "use", "uti", "ufunc")
# Skipped before the first letter: quotes of a repr, brackets, a private name's "_".
_LEADING = "'\"`<([_"


def with_article(word: str) -> str:
    """``word`` after the indefinite article its first letter calls for: "an int", "an
    object", "a str", "a UUID", "an 'apply_patch_call'" (quotes are skipped)."""
    start = word.lstrip(_LEADING).lower()
    vowel = start[:1] in ("a", "e", "i", "o", "u") and not start.startswith(_SAID_WITH_A_CONSONANT)
    return f"{'an' if vowel else 'a'} {word}"


def a_type_name(value: Any) -> str:
    """The name of ``value``'s type after its article: "an int", "a str", "an object"."""
    return with_article(type(value).__name__)
