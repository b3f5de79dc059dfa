"""``json.dumps(value, sort_keys=True, default=str)`` text without its per-call setup.

The SDK's item fingerprints and session-item keys are that text, and other modules
compare them, so a replacement must produce it byte for byte. ``json.dumps`` with
non-default options builds a new ``JSONEncoder`` and a new C encoder on every call,
which costs as much as encoding a small item. Here each thread reuses one C encoder
built with exactly the options ``json.dumps`` passes, so the text comes from the same
code with the same settings. A probe at import compares the two; if they ever differ
(or the C accelerator is missing) every call goes through ``json.dumps`` itself.

Before either, the Rust engine's ``sorted_json_text`` writes the text of values made
only of exact builtin JSON values (``ENGINE_TEXT``); it answers None for anything else
(subclasses, non-str keys, objects ``default=str`` would format, cycles), and only then
does the encoder run. On the pure twin ``ENGINE_TEXT`` is None: the C encoder is faster.
"""

from __future__ import annotations

import json
import json.encoder
import math
import threading
from collections.abc import Callable
from typing import Any

from histcore.engine import _support as engine_support
from histcore.engine import items as engine_items

__all__ = ["ENGINE_TEXT", "FAST_ENCODER", "sorted_json"]

Encode = Callable[[Any], str]


class _ThreadState(threading.local):
    # One encoder per thread: a C encoder's circular-reference markers are per call
    # and must not be shared by two encodings running at once.
    encode: Encode | None = None
    used_default: bool = False


_STATE = _ThreadState()


def _default(value: object) -> str:
    """``default=str``, noting that a value needed it (its ``__str__`` is user code)."""
    _STATE.used_default = True
    return str(value)


def _python_encode(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_default)


def _c_encoder() -> Encode | None:
    make = getattr(json.encoder, "c_make_encoder", None)
    escape = getattr(json.encoder, "c_encode_basestring_ascii", None)
    if make is None or escape is None:
        return None
    # The arguments json.dumps(..., sort_keys=True, default=str) ends up passing:
    # markers (check_circular), default, ensure_ascii escaping, indent=None, the
    # ": " and ", " separators, sort_keys=True, skipkeys=False, allow_nan=True.
    encoder = make({}, _default, escape, None, ": ", ", ", True, False, True)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


def _probe_matches(encode: Encode) -> bool:
    class Opaque:
        def __str__(self) -> str:
            return "opaque \u00e9"

    probe: Any = {
        "z": [1, 2.5, -0.0, 1e16, 1e-7, float("nan"), float("inf"), True, False, None],
        "a": {"nested": ("tuple", "caf\u00e9 \U0001f600 \ud800"), "q": '"\\\n\t'},
        "m": Opaque(),
        "n": 123456789012345678901234567890,
    }
    try:
        return encode(probe) == json.dumps(probe, sort_keys=True, default=str) and math.isnan(
            json.loads(encode({"x": float("nan")}))["x"]
        )
    except Exception:
        return False


def _select() -> Encode:
    candidate = _c_encoder()
    if candidate is not None and _probe_matches(candidate):
        return candidate
    return _python_encode


FAST_ENCODER: bool = _select() is not _python_encode

EngineText = Callable[[Any, "tuple[str, ...] | None"], "str | None"]

#: ``sorted_json_text(value, skip)`` of the Rust engine, or None on the pure twin.
ENGINE_TEXT: EngineText | None = (
    engine_support.sorted_json_text if engine_items.BACKEND == "rust" else None
)


def sorted_json(value: Any) -> tuple[str, bool]:
    """``(json.dumps(value, sort_keys=True, default=str), used_default)``.

    ``used_default`` says whether some value was encoded through ``str()``. Raises
    whatever ``json.dumps`` raises (circular or too deep structures, unsortable keys).
    """
    if ENGINE_TEXT is not None:
        written = ENGINE_TEXT(value, None)
        if written is not None:
            return written, False
    state = _STATE
    encode = state.encode
    if encode is None:
        encode = state.encode = _select()
    state.used_default = False
    try:
        text = encode(value)
    except BaseException:
        # A failed C encoding can leave stale circular-reference markers behind.
        state.encode = None
        raise
    return text, state.used_default
