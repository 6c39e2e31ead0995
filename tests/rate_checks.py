"""What a rate limit promises, checked on arrivals in a way that load cannot break.

A limit of `rpm` lets one request start per 60/rpm seconds, counted from when each start is let
go (evalspec._providers.openai_chat.RateLimiter). A request reaches the server at or after its
start, and the first start comes after the run began, so the k-th arrival (from 0) comes at
least k intervals after a time taken before the run: a slow machine only makes it later. Gaps
between arrivals promise nothing: one request's connection set-up can delay it towards the next.
"""

from __future__ import annotations

from collections.abc import Iterable


def assert_held_to(rpm: float, began: float, arrivals: Iterable[float]) -> None:
    """The k-th arrival (time.monotonic()) is no sooner than k * 60/rpm s after `began`."""
    interval = 60.0 / rpm
    early = [
        (k, round(at - began, 3))
        for k, at in enumerate(sorted(arrivals))
        if at - began < k * interval - 1e-3
    ]
    assert not early, f"before their slot at {rpm} rpm (index, seconds after start): {early}"
