"""Error messages name a wrong value's type with the right article: "an int", "an
object", "a str" (never "a int" or "a object")."""

from __future__ import annotations

import collections
import uuid
from typing import Any

import pytest

from histcore.engine.exact_json import kind_of
from histcore.engine.wording import a_type_name, with_article


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("int", "an int"),
        ("object", "an object"),
        ("ellipsis", "an ellipsis"),
        ("Exception", "an Exception"),
        ("OrderedDict", "an OrderedDict"),
        ("str", "a str"),
        ("float", "a float"),
        ("NoneType", "a NoneType"),
        ("UUID", "a UUID"),
        ("UserDict", "a UserDict"),
        ("UnicodeError", "a UnicodeError"),
        ("'apply_patch_call'", "an 'apply_patch_call'"),
        ("'shell_call'", "a 'shell_call'"),
        ("_Item", "an _Item"),
        ("", "a "),
    ],
)
def test_with_article(word: str, expected: str) -> None:
    assert with_article(word) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, "an int"),
        (object(), "an object"),
        (..., "an ellipsis"),
        (ValueError("x"), "a ValueError"),
        (IndexError("x"), "an IndexError"),
        (collections.OrderedDict(), "an OrderedDict"),
        ("text", "a str"),
        (uuid.UUID(int=0), "a UUID"),
    ],
)
def test_a_type_name(value: Any, expected: str) -> None:
    assert a_type_name(value) == expected


def test_kind_of_names_a_non_json_value_with_its_article() -> None:
    assert kind_of(object()) == "an object"
    assert kind_of(...) == "an ellipsis"
    assert kind_of(b"x") == "a bytes"
