"""The one rule for comparing tool names, used by call matching and by case evaluators alike."""

from __future__ import annotations

import re
from functools import lru_cache

_SEPARATORS = re.compile(r"[_.\-\s]+")


@lru_cache(maxsize=1024)
def normalize_tool_name(name: str) -> str:
    """`SendDM`, `Send-DM`, `send_dm` and `send.dm` are one tool: case and `_ . -` ignored."""
    return _SEPARATORS.sub("", name).lower()


def tool_name_key(name: str, normalize: bool) -> str:
    """The key two names are compared by: normalised when the rubric says so."""
    return normalize_tool_name(name) if normalize else name
