"""``RunState`` checkpoint stores: the public face of ``histcore.runner.state_store``
(the same names, listed there in ``__all__``)."""

from __future__ import annotations

from histcore.runner.state_store import *  # noqa: F403
from histcore.runner.state_store import __all__ as __all__
