"""The engine's names as the parity tests read them (see ``histcore.engine.names``)."""

from __future__ import annotations

import histcore.items
from histcore.engine.names import FACE_NAMES, SUPPORT_NAMES

#: The item passes: ``histcore.items``' names but its face's own.
ITEM_NAMES: tuple[str, ...] = tuple(
    name for name in histcore.items.__all__ if name not in FACE_NAMES
)
#: What both engines export.
ENGINE_NAMES: tuple[str, ...] = (*ITEM_NAMES, *SUPPORT_NAMES)
