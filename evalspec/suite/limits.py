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
