"""Tool confusion: per model, which tool was called when another was expected.

A tool owner reads it to see which descriptions collide (`Math.Add` expected, `Math.Plus`
called, 3 times of 5). It is counted from the scored rows of every trial, so it says what the
score says: a matched call (right or wrong tool), an expected call never made, a call made when
none, or another, was expected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import msgspec

from evalspec._scoring.types import CaseResult
from evalspec._util.records import Count

NO_CALL = ""
"""The side of a cell where there was no call: expected and not made, or made unexpected."""


class ConfusionCell(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How often a model called `called` where the suite expected `expected`."""

    expected: str
    """The expected tool; "" when no call was expected (an extra or forbidden call)."""
    called: str
    """The tool called in its place; "" when the expected call was never made."""
    count: Count


def confusion(results: Iterable[CaseResult]) -> tuple[ConfusionCell, ...]:
    """Every (expected, called) pair of a model's trials with its count, right picks included
    (expected == called), most frequent first."""
    counts: Counter[tuple[str, str]] = Counter()
    for result in results:
        for row in result.rows:
            if row.field == "tool_selection":
                counts[(str(row.expected), str(row.actual))] += 1
            elif row.field == "missing_call":
                counts[(str(row.expected), NO_CALL)] += 1
            elif row.field == "extra_call":
                counts[(NO_CALL, str(row.actual))] += 1
            elif row.field == "no_tool_calls" and not row.match:
                for name in str(row.actual).split(", "):
                    counts[(NO_CALL, name)] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(ConfusionCell(expected=e, called=c, count=n) for (e, c), n in ranked)


def mistakes(cells: Iterable[ConfusionCell]) -> list[ConfusionCell]:
    """The cells where the call was not the one expected."""
    return [c for c in cells if c.expected != c.called]


def expected_total(cells: Iterable[ConfusionCell], expected: str) -> int:
    """How often `expected` was expected, over every cell of its row."""
    return sum(c.count for c in cells if c.expected == expected)
