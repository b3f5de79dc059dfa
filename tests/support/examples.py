"""How many examples a property test draws, by Hypothesis profile.

``HYPOTHESIS_PROFILE`` picks the profile (tests/conftest.py loads it):

* ``default``: each test's own count, as written;
* ``matrix``: a fifth of it (at least 10), for the runs that repeat a suite already run
  at full size elsewhere: the other CPython versions of CI's matrix.

A test asks ``settings(max_examples=examples(200))`` so that its count stays readable
where it is written, and a profile scales every count alike.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILES = ("default", "matrix")
#: The divisor of each profile.
_SCALE = {"default": 1, "matrix": 5}


def profile() -> str:
    """The profile HYPOTHESIS_PROFILE names; an unknown name is an error, not a default."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "").strip() or "default"
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: expected one of {', '.join(PROFILES)}")
    return name


def examples(count: int) -> int:
    """``count`` examples under the default profile, fewer under a lighter one."""
    return max(10, count // _SCALE[profile()]) if count > 10 else count


def load_profile() -> None:
    """Register the profiles and load the chosen one (for tests that set no count)."""
    settings.register_profile("matrix", max_examples=examples(100))
    settings.load_profile(profile())
