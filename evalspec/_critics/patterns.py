"""Regular expressions from suites, matched in linear time.

A pattern comes from a pull request and the text it runs on from a model: with a backtracking
engine, `^(a|aa)+$` against 60 characters would never finish. Patterns run on RE2, whose time is
linear in the text; the few features RE2 refuses for that reason (backreferences, lookaround)
get a clear error when the suite is validated.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any


class PatternError(ValueError):
    """A pattern that cannot be used; the message says why, in words."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str, ignore_case: bool = False) -> Any:
    """The compiled pattern (search, fullmatch, match as in `re`), or PatternError."""
    try:
        re.compile(pattern)  # Python's messages name the position of a syntax mistake
    except re.error as exc:
        raise PatternError(str(exc)) from None
    import re2  # only suites with patterns pay for loading it

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise PatternError(
            f"it uses a feature that cannot run in linear time ({_reason(exc)}); "
            "backreferences such as \\1 and lookarounds such as (?=...) are not supported"
        ) from None


def _reason(exc: Exception) -> str:
    first = exc.args[0] if exc.args else str(exc)
    text = first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)
    return text or "rejected by RE2"
