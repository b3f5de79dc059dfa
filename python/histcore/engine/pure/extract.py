"""What the pure twin reads of an item (the Rust engine's ``rust/py/extract.rs``): the
payload a model stands for (its dump), the text of a str field, and the characters of a str
(or str subclass) as an exact str."""

from __future__ import annotations

from typing import Any

__all__ = ["dumped", "plain_str", "str_field"]


_NO_DUMP: Any = object()


def dumped(item: Any) -> Any:
    """The item as the engine sees it: pydantic-style models become their dump (the
    attribute is looked up once)."""
    if isinstance(item, dict):
        return item
    model_dump = getattr(item, "model_dump", _NO_DUMP)
    if model_dump is not _NO_DUMP:
        return model_dump(exclude_unset=True)
    return item


def plain_str(value: str) -> str:
    """The characters of a str (or str subclass) as an exact str."""
    return value if type(value) is str else str.__str__(value)


def str_field(payload: dict[Any, Any], name: str) -> str | None:
    """The text of ``payload[name]`` when it is a str (or str subclass), else None."""
    value = dict.get(payload, name)
    return plain_str(value) if isinstance(value, str) else None
