"""How sizes and durations are written in progress lines and tables."""

from __future__ import annotations

__all__ = ["format_seconds", "size_label"]


def size_label(size: int) -> str:
    """``10^5`` for powers of ten from 10 up, the plain number otherwise."""
    text = str(size)
    if size >= 10 and text == "1" + "0" * (len(text) - 1):
        return f"10^{len(text) - 1}"
    return text


def format_seconds(seconds: float) -> str:
    """Three significant digits in the largest unit that keeps the number >= 1 (a
    difference of times may be negative: its sign, then its size)."""
    if seconds < 0:
        return f"-{format_seconds(-seconds)}"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
