"""Size limits that whoever runs evalspec may raise through the environment (a suite cannot).

A 50,000-case suite is refused by default; a team that imports one sets, for example,
EVALSPEC_MAX_CASES=100000 on its own machines or CI.
"""

from __future__ import annotations

import os


def env_limit(name: str, default: int) -> int:
    """The positive integer in environment variable `name`, or `default` (also when unreadable)."""
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


MAX_CALLS_PER_CASE = 100
"""Most tool calls one case may expect, and most one model answer may make in one case.

Pairing expected with actual calls scores every pair (n x m), then solves an assignment; at
100 x 100 that is 10,000 pair scores and well under a second, where 2,000 x 2,000 took two
minutes and 2.9 GB. Real tool-calling cases expect a handful of calls (BFCL's largest: 10)."""
