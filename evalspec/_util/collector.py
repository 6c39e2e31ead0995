"""Pausing the cyclic garbage collector around work that makes many objects and no cycles.

Building a suite or a report makes hundreds of thousands of small dicts and lists that hold no
cycles; each collection pass rescans all of them, which costs more than building them. The
pause is scoped: the collector's on/off state and thresholds are back as they were when the
block ends, by return or by exception, so a library call never leaves the caller's process
collecting differently.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class CollectorState:
    """What the collector was doing before a pause: restored when the pause ends."""

    enabled: bool
    thresholds: tuple[int, ...]


@contextmanager
def collector_paused() -> Iterator[CollectorState]:
    """The collector off inside the block; its state and thresholds restored after it."""
    state = CollectorState(gc.isenabled(), gc.get_threshold())
    gc.disable()
    try:
        yield state
    finally:
        gc.set_threshold(*state.thresholds)
        if state.enabled:
            gc.enable()
        else:
            gc.disable()
