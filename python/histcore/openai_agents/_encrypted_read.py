"""The SDK's ``EncryptedSession._unwrap_valid_items``, each token decrypted once.

A session object keeps what each Fernet token it decrypted gave (the decoded item and
the token's timestamp). A later read hands out copies of the kept items for tokens it
saw before, after applying the TTL rule Fernet's ``decrypt(token, ttl)`` applies
(expired, or more than 60 s in the future: skipped), with ``int(time.time())`` taken
once per read; every other envelope goes through the SDK's own ``_unwrap``. Only while
``_unwrap`` is the SDK's own, the cipher the one the tokens were decrypted with, and
``ttl`` an int or None. docs/design.md, "Drop-in accelerator" ("The other stores'
reads").
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from histcore.openai_agents._handouts import can_keep, fresh_copy
from histcore.openai_agents._replacements import intact, named_after
from histcore.openai_agents._watch import Watch

__all__ = ["CLOCK_SKEW", "make_unwrap_valid_items", "watch_for"]

#: Fernet's allowance for a token stamped in the future, in seconds (its
#: ``_MAX_CLOCK_SKEW``, the same in every release of cryptography).
CLOCK_SKEW = 60

Unwrap = Callable[[Any, list[Any]], list[Any]]

# Fernet takes ttl as a 64-bit int in some releases of cryptography (a float raises
# TypeError, a larger int OverflowError) and as any number in others: only ints far
# inside that range are checked here; anything else gets the SDK's read and its error.
_TTL_BOUND = 2**40
#: Tokens kept beyond twice a read's before the ones it did not see are forgotten.
_SLACK = 1024


class _Decrypted:
    """What one session object's tokens gave: payload -> (item, timestamp)."""

    __slots__ = ("cipher", "items", "newest", "oldest")

    def __init__(self, cipher: Any) -> None:
        self.cipher = cipher
        self.items: dict[str, tuple[Any, int]] = {}
        # Bounds over every kept token: when both are valid, so is each token.
        self.oldest: int | None = None
        self.newest: int | None = None

    def keep(self, payload: str, item: Any, stamp: int) -> None:
        self.items[payload] = (item, stamp)
        if self.oldest is None or stamp < self.oldest:
            self.oldest = stamp
        if self.newest is None or stamp > self.newest:
            self.newest = stamp


def _valid(stamp: int, ttl: int, now: int) -> bool:
    # Fernet's rule (its int arithmetic: no overflow within _TTL_BOUND).
    return not (stamp + ttl < now or now + CLOCK_SKEW < stamp)


def watch_for(original: Any) -> Watch:
    """What the SDK's read looks up, with its ``_unwrap`` (reached through ``self``)."""
    sdk_class = original.__globals__["EncryptedSession"]
    return Watch.over([original, sdk_class._unwrap])


def make_unwrap_valid_items(
    original: Unwrap, module: ModuleType, watch: Watch | None = None
) -> Unwrap:
    unchanged = intact(watch)
    sdk_unwrap = module.EncryptedSession._unwrap
    is_envelope = module._is_encrypted_envelope
    stamp_of = module.Fernet._get_unverified_token_data
    kept: weakref.WeakKeyDictionary[Any, _Decrypted] = weakref.WeakKeyDictionary()

    @named_after(original)
    def _unwrap_valid_items(self: Any, encrypted_items: list[Any]) -> list[Any]:
        ttl = getattr(self, "ttl", None)
        if (
            type(self)._unwrap is not sdk_unwrap
            or not unchanged()
            or not (ttl is None or (type(ttl) is int and abs(ttl) < _TTL_BOUND))
            or type(encrypted_items) is not list
            or not can_keep(self)
        ):
            return original(self, encrypted_items)
        decrypted = kept.get(self)
        if decrypted is None or decrypted.cipher is not self.cipher:
            decrypted = kept[self] = _Decrypted(self.cipher)
        found = decrypted.items
        # The SDK checks each token at int(time.time()); one read checks at one instant.
        now = int(time.time())
        every_one_valid = ttl is None or (
            decrypted.oldest is not None
            and decrypted.newest is not None
            and _valid(decrypted.oldest, ttl, now)
            and _valid(decrypted.newest, ttl, now)
        )
        valid: list[Any] = []
        for envelope in encrypted_items:
            hit = None
            if type(envelope) is dict:
                payload = envelope.get("payload")
                if type(payload) is str:
                    hit = found.get(payload)
            if hit is not None and is_envelope(envelope):
                item, stamp = hit
                if every_one_valid or _valid(stamp, ttl, now):  # type: ignore[arg-type]
                    valid.append(item)
                continue
            item = self._unwrap(envelope)
            if item is None:
                continue
            if not (type(envelope) is dict and type(payload) is str and is_envelope(envelope)):
                # Before 0.23 a plaintext item passes through as the object it is: the
                # SDK's read hands it out uncopied.
                return original(self, encrypted_items)
            valid.append(item)
            try:
                stamp = stamp_of(payload)[0]
            except Exception:
                continue
            decrypted.keep(payload, item, stamp)
        if len(found) > 2 * len(encrypted_items) + _SLACK:
            _forget_unseen(decrypted, encrypted_items)
        # Each read hands out items of its own, as the SDK's json.loads does.
        return fresh_copy(valid)

    return _unwrap_valid_items


def _forget_unseen(decrypted: _Decrypted, encrypted_items: list[Any]) -> None:
    """Keep only the tokens of this read, so what is kept follows the history."""
    seen = {envelope.get("payload") for envelope in encrypted_items if type(envelope) is dict}
    kept = {payload: hit for payload, hit in decrypted.items.items() if payload in seen}
    decrypted.items, decrypted.oldest, decrypted.newest = {}, None, None
    for payload, (item, stamp) in kept.items():
        decrypted.keep(payload, item, stamp)
