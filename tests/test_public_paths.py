"""Each engine name has one public path, ``histcore.items`` (and the top-level
re-export): no other public module lists it in its ``__all__``.

A module is public when no part of its dotted path starts with an underscore. Its
public names are those of its ``__all__``.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import histcore
import histcore.items

#: Where an item pass may be public: its path, and the top-level re-export.
ALLOWED = {"histcore", "histcore.items"}


def _public_modules() -> dict[str, ModuleType]:
    modules = {"histcore": histcore}
    for info in pkgutil.walk_packages(histcore.__path__, "histcore."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            modules[info.name] = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "histcore").partition(".")[0] == "histcore":
                raise
            # an optional extra (psycopg, the SDK) is not installed: nothing to import
    return modules


def test_every_engine_name_is_public_at_histcore_items_alone() -> None:
    modules = _public_modules()
    # The walk reaches the engine and its pure twin (whose modules once listed them).
    assert {"histcore.engine.items", "histcore.engine.pure.canonical"} <= set(modules)
    paths = {
        name: sorted(
            path for path, module in modules.items() if name in getattr(module, "__all__", ())
        )
        for name in histcore.items.__all__
    }
    assert {name: where for name, where in paths.items() if len(where) > len(ALLOWED)} == {}
    assert all(set(where) == ALLOWED for where in paths.values()), paths
