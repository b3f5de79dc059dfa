"""Which openai-agents releases the accelerator knows, and how it recognises a helper.

A helper is replaced only when its source text is one the replacement was proven
against (differential tests in ``tests/openai_agents/``). The digests below
are of the helper groups in releases 0.22.0 to 0.24.0; a release outside
``SUPPORTED`` gets a warning and only the groups whose source is unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import linecache
import re
import textwrap
from collections.abc import Iterable
from types import ModuleType
from typing import Any

__all__ = [
    "BATCH_PREPARE_DIGESTS",
    "CONVERSION_DIGESTS",
    "DISTRIBUTION",
    "INSTALL_HINT",
    "KNOWN_SOURCE_DIGESTS",
    "PREPARE_MODEL_INPUT_DIGESTS",
    "SUPPORTED",
    "function_digest",
    "is_supported",
    "parse_version",
    "sdk_version",
    "source_digest",
]

DISTRIBUTION = "openai-agents"
#: Supported releases, as a half-open range of (major, minor) versions: >=0.22,<0.25.
SUPPORTED: tuple[tuple[int, int], tuple[int, int]] = ((0, 22), (0, 25))
INSTALL_HINT = (
    "histcore.openai_agents needs the OpenAI Agents SDK: "
    "pip install 'histcore[openai-agents]' (installs openai-agents>=0.22,<0.25)"
)

#: Digest of each helper group's source (see ``source_digest``) in the releases the
#: replacements were tested against. Two digests for a group mean the releases differ.
KNOWN_SOURCE_DIGESTS: dict[str, frozenset[str]] = {
    # identical in 0.22.0 - 0.24.0
    "dedupe": frozenset({"d2ad467781fbdca9"}),
    "orphans": frozenset({"74b054b8aefe58a4"}),
    "fingerprint": frozenset({"3c5fa6dc07d48622"}),
    # strip_internal_input_item_metadata also drops created_by from 0.23.0 on
    "normalize": frozenset({"8ba463585ee27a3b", "b4e550595fee5f89"}),
    "to_dump_compatible": frozenset({"43ce3a38abe44d93"}),
    "clone_original_input": frozenset({"07211c96fad9475c"}),
    "session_read": frozenset({"5decab7453da6dcb"}),
    # AsyncSQLiteSession._get_connection enables WAL through a helper from 0.22.1 on
    # (the same connect call)
    "async_session_read": frozenset({"abe8f633ecd9e763", "2c957a8859c0a3d5"}),
    # get_items reads through _session() (a shared-connection guard) from 0.23.0 on
    "sqlalchemy_read": frozenset({"1f37a5e180eb5c02", "faf0e72098ce0b7a"}),
    "turn_input": frozenset({"69a720eee4639e9f"}),
    # EncryptedSession._unwrap stopped passing plaintext items through in 0.23.0
    "encrypted_read": frozenset({"ecebeecce3302b23", "a8d9d3d656d03cbd"}),
    # prepare_input_with_session changed in 0.22.1 (compaction generation capture) and
    # strip_internal_input_item_metadata in 0.23.0 (also drops created_by)
    "session_keys": frozenset(
        {
            "1deef132362bef49",  # 0.22.0
            "5a65cbb87e2dce81",  # 0.22.1 - 0.22.3
            "1b1ad63020cb29cd",  # 0.23.0 - 0.24.0
        }
    ),
}


#: ``prepare_input_with_session`` -> whether its history read asks for the compaction
#: generation (from 0.22.1 on): the releases the batch preparation (``_prepare``) follows.
BATCH_PREPARE_DIGESTS: dict[str, bool] = {
    "42fdd1f8d309cc5e": False,  # 0.22.0
    "6b38c2226f620961": True,  # 0.22.1 - 0.24.0
}
#: ``prepare_model_input_items`` as in openai-agents 0.22.0 - 0.24.0 (``_turn_input``).
PREPARE_MODEL_INPUT_DIGESTS = frozenset({"e59b30546d4a64a2"})
#: ``ItemHelpers.input_to_new_input_list`` as in openai-agents 0.22.0 - 0.24.0.
CONVERSION_DIGESTS = frozenset({"a46b1f5bac05fff8"})


def parse_version(text: str) -> tuple[int, ...]:
    """The leading numeric release of a version string: ``"0.24.0rc1"`` -> ``(0, 24, 0)``."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if match is None:
        raise ValueError(f"not a version number: {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def sdk_version() -> str | None:
    """The installed openai-agents version, or None when its metadata is missing."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def is_supported(version: str | None) -> bool:
    """Whether ``version`` lies in ``SUPPORTED`` (an unknown version is not)."""
    if version is None:
        return False
    try:
        release = parse_version(version)
    except ValueError:
        return False
    low, high = SUPPORTED
    return low <= release[:2] < high


def _resolve(module: ModuleType, dotted: str) -> Any:
    """``module.a.b`` for ``"a.b"`` (a method is named with its class), or None."""
    value: Any = module
    for part in dotted.split("."):
        value = getattr(value, part, None)
    return value


def source_digest(module: ModuleType, names: Iterable[str]) -> str | None:
    """A short digest of the source of ``module``'s functions ``names``, in order.

    None when a name is missing or its source cannot be read (e.g. a bytecode-only
    install): such a helper is not recognised, so it is left alone.
    """
    functions = tuple((name, _resolve(module, name)) for name in names)
    if any(function is None for _, function in functions):
        return None
    return _digest(functions)


def function_digest(name: str, function: Any) -> str | None:
    """``source_digest`` of one function object, as if it were ``module.name``."""
    return _digest(((name, function),))


@functools.lru_cache(maxsize=64)
def _digest(functions: tuple[tuple[str, Any], ...]) -> str | None:
    # Keyed by the function objects themselves: reading and hashing source is slow,
    # and the same functions are checked on every install().
    # inspect keeps each file it reads in linecache: the lines this reading added go
    # (the digest is what is kept), so an installed process holds no SDK source.
    cached = set(linecache.cache)
    digest = hashlib.sha256()
    try:
        for name, function in functions:
            try:
                source = inspect.getsource(function)
            except (OSError, TypeError):
                return None
            digest.update(name.encode())
            digest.update(b"\0")
            digest.update(textwrap.dedent(source).strip().encode())
            digest.update(b"\0")
    finally:
        for path in set(linecache.cache) - cached:
            linecache.cache.pop(path, None)
    return digest.hexdigest()[:16]
