"""The garbage collector's schedule for `evalspec run`: off while it starts, light while it runs.

Start-up (imports, reading the suite, planning) builds objects that live until the run ends
and makes no cyclic garbage worth finding, yet the default schedule (a collection every 700 new
objects, survivors rescanned as they age) spent ~0.09 s of CPU of a 500-case live run on them:
as much as scoring that run. So the collector is off until the run starts; then what exists is
frozen (never scanned again) and collections come every `RUN_THRESHOLDS[0]` new objects, which
still finds the cycles a run makes (tasks, exceptions) with at most that many objects late.

All of it is the run's alone: when the run ends, by return or by exception, what it froze is
unfrozen and the collector's state and thresholds are as the caller had them. `gc.unfreeze`
cannot tell the run's frozen objects from the caller's, so a caller that has frozen objects of
its own keeps them frozen and the run freezes nothing (it only collects less often).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from evalspec._util.collector import collector_paused

RUN_THRESHOLDS = (20_000, 10, 10)
"""gc thresholds while items run: a young collection every 20,000 new objects (default 700)."""


@dataclass(frozen=True)
class RunCollector:
    was_enabled: bool
    may_freeze: bool
    """Nothing was frozen before the run: what it freezes can all be unfrozen at its end."""

    def start_run(self) -> None:
        """Call once the suite and plan are built: set them aside and collect lightly."""
        if self.may_freeze:
            gc.freeze()
        gc.set_threshold(*RUN_THRESHOLDS)
        if self.was_enabled:
            gc.enable()

    def set_aside(self) -> None:
        """Collect what the last items left, then take the survivors (results kept for the
        report) out of later collections, which would otherwise rescan all of them."""
        gc.collect()
        if self.may_freeze:
            gc.freeze()


@contextmanager
def paused_until_run() -> Iterator[RunCollector]:
    """The collector off until `start_run`; at the end, its earlier state, thresholds and
    frozen set back (the run's frozen objects are collected as usual again)."""
    may_freeze = gc.get_freeze_count() == 0
    with collector_paused() as state:
        try:
            yield RunCollector(state.enabled, may_freeze)
        finally:
            if may_freeze:
                gc.unfreeze()
