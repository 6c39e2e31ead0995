"""Reasons joined into one sentence: no empty parts, no doubled punctuation.

Critics end their reasons with a full stop ("got 'x'."); joined with "; " that read "got 'x'.;".
"""

from __future__ import annotations

from collections.abc import Iterable

_TRAILING = " \t\n.;:,"


def clause(text: str) -> str:
    """A reason as a clause: surrounding space and trailing punctuation removed."""
    return text.strip().rstrip(_TRAILING)


def join_reasons(parts: Iterable[str], sep: str = "; ") -> str:
    """Non-empty clauses joined by `sep`."""
    return sep.join(c for c in (clause(p) for p in parts) if c)


def with_detail(head: str, detail: str) -> str:
    """`head: detail`, or just `head` when the detail is empty (never a dangling colon)."""
    detail = clause(detail)
    return f"{head}: {detail}" if detail else head
