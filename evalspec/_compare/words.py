"""Numbers and lists in a reviewer's words, shared by the records and the views."""

from __future__ import annotations

from collections.abc import Sequence


def count(n: int, one: str, many: str | None = None) -> str:
    """`1 case`, `2 cases`, `1,204 cases`."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def p_text(p: float) -> str:
    """`p = 0.031`, `p = 1`, `p < 0.001`."""
    return f"p = {p:.2g}" if p >= 0.001 else "p < 0.001"


def signed(x: float, fmt: str) -> str:
    """`+4.1%`, `−0.020`; `0.0%` when the value rounds to zero (no sign: nothing moved)."""
    shown = format(abs(x), fmt)
    if float(shown.rstrip("%")) == 0:
        return shown
    return ("+" if x > 0 else "−") + shown


def names(cases: Sequence[str], limit: int = 10) -> str:
    """`a, b, c and 4 more`: at most `limit` names."""
    more = f" and {len(cases) - limit} more" if len(cases) > limit else ""
    return ", ".join(cases[:limit]) + more


def clipped(text: str, limit: int = 80) -> str:
    """`text`, or its first `limit` characters ending in `...`: a name from the suite (a state
    check's pointer, a case's) is of any length, and a review's line is not."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
