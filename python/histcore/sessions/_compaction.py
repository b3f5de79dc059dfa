"""The OpenAI Agents SDK's compaction hook, answered with histcore's revisions.

``OpenAIResponsesCompactionSession`` (openai-agents 0.24) asks the session it wraps for
``_get_compaction_snapshot(limit, *, prune_prefix=None)``: the latest ``limit`` items,
whether they are the whole history, and ``replace_suffix(start, output)``, which
replaces ``items[start:]`` in one transaction only while the history is still the one
read (else False, nothing written). With it, automatic compaction may replace the
newest part of a long history and keep the rest. Here the snapshot is read at one
revision (read again, a few times at most, when the history changes under the read),
and its replacement is the session's ``replace_suffix`` counted from the newest item,
expecting that revision; ``prune_prefix`` also removes, in that transaction, the
leading items it calls expired (``_transactions.doomed_rows``). The hook is private to
the SDK and may change with it: None (the SDK then reads the whole history) is always
a valid answer, and is the answer without the SDK installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from histcore.sessions._transactions import Replacement, SuffixReplacing
from histcore.sessions.base import InputItem

__all__ = ["CompactionHook", "compaction_snapshot"]

# Reads of the snapshot before giving up (None) when other writers keep changing it.
_ATTEMPTS = 5


class _Transactional(Protocol):
    async def revision(self) -> int: ...

    async def get_items(self, limit: int | None = None) -> list[InputItem]: ...

    async def _replace(self, replacement: Replacement[Any]) -> bool: ...


async def compaction_snapshot(
    session: _Transactional, limit: int, prune_prefix: Callable[[Any], bool] | None
) -> Any:
    """The SDK's ``_CompactionSnapshot`` of ``session``'s latest ``limit`` items, or None
    (no SDK, a limit that is no int >= 1, or a history that kept changing)."""
    try:
        from agents.memory.session import _CompactionSnapshot
    except ImportError:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return None
    for _ in range(_ATTEMPTS):
        revision = await session.revision()
        # One more than asked: whether older items exist.
        read = await session.get_items(limit + 1)
        if await session.revision() == revision:
            break
    else:
        return None
    items = read[-limit:]
    read_count = len(items)

    async def replace_suffix(start: int, output: list[Any]) -> bool:
        newest = read_count - start  # how many of the newest items are replaced
        if isinstance(start, bool) or not isinstance(start, int) or start < 0 or newest <= 0:
            return False  # as the SDK's own stores: an empty suffix replaces nothing
        return await session._replace(
            Replacement(newest, list(output), revision, from_end=True, prune_prefix=prune_prefix)
        )

    return _CompactionSnapshot(items, len(read) <= limit, replace_suffix)


class CompactionHook(SuffixReplacing):
    """``SuffixReplacing`` with the SDK's compaction hook, answered by the class that
    sets ``_answers_compaction = True`` in its own body; not by its subclasses, which
    may transform items and must supply their own, as in the SDK."""

    async def _get_compaction_snapshot(
        self: _Transactional, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> Any:
        """The SDK's ``_CompactionSnapshot`` (``compaction_snapshot``), or None."""
        if not type(self).__dict__.get("_answers_compaction", False):
            return None
        return await compaction_snapshot(self, limit, prune_prefix)
