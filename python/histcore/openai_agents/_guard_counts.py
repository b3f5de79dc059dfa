"""``GuardCounts``: the live counts of ``install(guard=True)`` (``installation().guard``)."""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Hashable, Iterable, Sequence

from histcore.engine.units import check_dangling

__all__ = ["LOGGED_LIMIT", "GuardCounts"]

#: How many (session, problem) pairs the guard remembers having logged: a long-running
#: server meets ever new sessions, so the oldest are forgotten (and logged again if met).
LOGGED_LIMIT = 4096


class GuardCounts:
    """Live counts of the guard: model inputs checked, model inputs repaired, items
    dropped, per rule kind the problems whose items it dropped, warnings logged (one per
    session and problem, so usually fewer than ``repaired``), and times (wall clock,
    every thread's summed; left out of the repr, which stays the same from run to run).
    ``dangling`` is what the guard does with a call whose output is missing (``"drop"``
    or ``"synthesize"``, as ``repair_input``); ``synthesized`` counts the outputs it
    synthesized (in the repr when any).

    ``seconds`` is the guard's own time apart from the dedupes of model inputs (noting
    the stored history, repairing, logging); ``dedupe_seconds`` is the time of those
    dedupes, which the guard runs with its check: histcore's dedupe reads the facts the
    check needs in the same pass, so the check's share is that time less a plain dedupe's
    (``histcore bench --openai-agents`` measures both)."""

    __slots__ = (
        "_lock",
        "_logged",
        "checked",
        "dangling",
        "dedupe_seconds",
        "dropped",
        "repaired",
        "rules",
        "seconds",
        "synthesized",
        "warnings",
    )

    def __init__(self, dangling: str = "drop") -> None:
        check_dangling(dangling)
        self.dangling = dangling
        self.synthesized = 0
        self._lock = threading.Lock()
        self.checked = 0
        self.repaired = 0
        self.dropped = 0
        self.rules: Counter[str] = Counter()
        self.warnings = 0
        self.seconds = 0.0
        self.dedupe_seconds = 0.0
        #: (session, problem) keys already logged, oldest first, at most LOGGED_LIMIT
        self._logged: OrderedDict[Hashable, None] = OrderedDict()

    def __repr__(self) -> str:
        synthesized = f", synthesized={self.synthesized}" if self.synthesized else ""
        return (
            f"GuardCounts(checked={self.checked}, repaired={self.repaired}, "
            f"dropped={self.dropped}{synthesized}, rules={dict(self.rules)}, "
            f"warnings={self.warnings})"
        )

    def _first_time(self, keys: Iterable[Hashable]) -> bool:
        """Whether any of ``keys`` was not logged yet (then all are noted as logged, and
        a warning counted). A key met again moves to the young end, so a problem that
        keeps coming back is not forgotten while others come and go."""
        with self._lock:
            logged = self._logged
            new = False
            for key in keys:
                if key in logged:
                    logged.move_to_end(key)
                else:
                    logged[key] = None
                    new = True
            while len(logged) > LOGGED_LIMIT:
                logged.popitem(last=False)
            if new:
                self.warnings += 1
            return new

    def _spend(self, started: float, dedupe: float = 0.0) -> None:
        with self._lock:
            self.seconds += time.perf_counter() - started - dedupe
            self.dedupe_seconds += dedupe

    def _note(
        self,
        dropped: int,
        kinds: Sequence[str],
        started: float,
        dedupe: float,
        synthesized: int = 0,
    ) -> None:
        with self._lock:
            self.seconds += time.perf_counter() - started - dedupe
            self.dedupe_seconds += dedupe
            self.checked += 1
            if dropped or synthesized:
                self.repaired += 1
                self.dropped += dropped
                self.synthesized += synthesized
                self.rules.update(kinds)
