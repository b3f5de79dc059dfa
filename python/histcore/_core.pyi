"""Type stub for the compiled engine ``histcore._core`` (checked by mypy.stubtest)."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, final

__all__ = [
    "MAX_DEPTH",
    "DictText",
    "NameWatch",
    "ScreenedKey",
    "StoredHistory",
    "build_profile",
    "canonical_json",
    "classify_callback_output",
    "content_key",
    "content_keys",
    "decode_rows",
    "dedupe_key",
    "dedupe_keys",
    "deduplicate_input_items",
    "deduplicate_input_items_preferring_latest",
    "deep_copy_items",
    "dict_sorted_json_texts",
    "drop_orphan_function_calls",
    "input_problems",
    "long_integer_candidates",
    "plain_json_copy",
    "prepared_model_input",
    "repair_input",
    "screened_dedupe_key",
    "screened_deduplicate",
    "screened_deduplicate_checked",
    "screened_drop_orphan_function_calls",
    "shallow_dict_copies",
    "sorted_json_text",
]

MAX_DEPTH: Final[int]
build_profile: Final[str]

def dedupe_key(item: Any) -> str | None: ...
def dedupe_keys(items: Iterable[Any]) -> list[str | None]: ...
def deduplicate_input_items(items: Iterable[Any]) -> list[Any]: ...
def deduplicate_input_items_preferring_latest(items: Iterable[Any]) -> list[Any]: ...
def canonical_json(item: Any) -> bytes: ...
def content_key(item: Any) -> bytes: ...
def content_keys(items: Iterable[Any]) -> list[bytes]: ...
def deep_copy_items(items: Iterable[Any]) -> list[Any]: ...
def plain_json_copy(
    items: Iterable[Any], *, allow_shared: bool = False, without: tuple[str, ...] | None = None
) -> list[Any] | None: ...
def drop_orphan_function_calls(
    items: Iterable[Any],
    pruning_indexes: Iterable[int] | None = None,
    *,
    output_pruning_indexes: Iterable[int] | None = None,
) -> list[Any]: ...
def classify_callback_output(
    history: Iterable[Any], new_items: Iterable[Any], combined: Iterable[Any]
) -> tuple[list[int], list[int]]: ...
def long_integer_candidates(texts: Iterable[Any]) -> list[int]: ...
def input_problems(
    items: Iterable[Any], *, history: Iterable[Any] | StoredHistory | None = None
) -> list[tuple[int, str, str | None]]: ...
def repair_input(
    items: Iterable[Any],
    *,
    history: Iterable[Any] | StoredHistory | None = None,
    dangling: str = "drop",
) -> list[Any]: ...
def prepared_model_input(
    items: Iterable[Any],
    pruning_indexes: Iterable[int] | None = None,
    *,
    output_pruning_indexes: Iterable[int] | None = None,
    history: Iterable[Any] | StoredHistory | None = None,
    without: tuple[str, ...] | None = None,
) -> Any: ...
def sorted_json_text(value: Any, skip: tuple[str, ...] | None = None) -> str | None: ...
def decode_rows(
    rows: Any,
    fast: Callable[[Any], Any],
    exact: Callable[[Any], Any],
    skipped: tuple[type[BaseException], ...],
) -> Any: ...
def screened_drop_orphan_function_calls(
    items: Any,
    pruning_indexes: Any = None,
    *,
    output_pruning_indexes: Any = None,
    watch: NameWatch | None = None,
) -> Any: ...
def dict_sorted_json_texts(items: Any, skip: tuple[str, ...] | None = None) -> list[str | None]: ...
def shallow_dict_copies(items: Any, without: tuple[str, ...]) -> Any: ...
def screened_dedupe_key(item: Any, watch: NameWatch | None = None) -> Any: ...
def screened_deduplicate(
    items: Any, preferring_latest: bool = False, watch: NameWatch | None = None
) -> Any: ...
def screened_deduplicate_checked(
    items: Any,
    preferring_latest: bool = False,
    watch: NameWatch | None = None,
    *,
    history: StoredHistory | None = None,
) -> Any: ...

@final
class StoredHistory:
    def __new__(cls, items: Iterable[Any] | None = None) -> StoredHistory: ...
    def extend(self, items: Iterable[Any]) -> None: ...
    def __len__(self) -> int: ...

@final
class NameWatch:
    def __new__(
        cls,
        lookups: Iterable[tuple[dict[str, Any], Sequence[str]]],
        contents: Iterable[tuple[dict[str, Any], str]] | None = None,
    ) -> NameWatch: ...
    @property
    def armed(self) -> bool: ...
    def arm(self) -> None: ...
    def disarm(self) -> None: ...
    def intact(self) -> bool: ...

@final
class DictText:
    def __new__(
        cls,
        fallback: Callable[..., Any],
        skip: tuple[str, ...],
        skip_with_ids: tuple[str, ...],
        watch: NameWatch | None = None,
    ) -> DictText: ...
    def __call__(self, item: Any, *args: Any, **kwargs: Any) -> Any: ...

@final
class ScreenedKey:
    def __new__(
        cls, fallback: Callable[..., Any], watch: NameWatch | None = None
    ) -> ScreenedKey: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
