"""``DictText`` (the Rust engine's ``rust/py/dict_text.rs``): a callable that answers an
item's sorted-JSON text itself when it can and calls a fallback otherwise, for a drop-in
replacement of a per-item helper."""

from __future__ import annotations

from typing import Any

from histcore.engine.pure.args import str_tuple
from histcore.engine.pure.sorted_json import sorted_json_text
from histcore.engine.pure.watch import NameWatch

__all__ = ["DictText"]


class DictText:
    """``DictText(fallback, skip, skip_with_ids, watch=None)``: called as
    ``(item, *, ignore_ids_for_matching=False)``, returns ``sorted_json_text(item, skip)``
    (``skip_with_ids`` when ``ignore_ids_for_matching`` is True) for an exact dict whose
    text the engine writes, while ``watch`` (if given) is intact; every other call,
    with whatever arguments, is ``fallback``'s."""

    def __init__(
        self,
        fallback: Any,
        skip: tuple[str, ...],
        skip_with_ids: tuple[str, ...],
        watch: NameWatch | None = None,
    ) -> None:
        self._skip = str_tuple(skip, "skip")
        self._skip_with_ids = str_tuple(skip_with_ids, "skip_with_ids")
        self._fallback = fallback
        self._watch = watch

    def __call__(self, item: Any, *args: Any, **kwargs: Any) -> Any:
        if type(item) is dict and not args and len(kwargs) <= 1:
            ignore_ids = kwargs.get("ignore_ids_for_matching", False)
            if (
                (not kwargs or "ignore_ids_for_matching" in kwargs)
                and type(ignore_ids) is bool
                and (self._watch is None or self._watch.intact())
            ):
                text = sorted_json_text(item, self._skip_with_ids if ignore_ids else self._skip)
                if text is not None:
                    return text
        return self._fallback(item, *args, **kwargs)
