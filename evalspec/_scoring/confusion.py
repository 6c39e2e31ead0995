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
    count_picks(results, counts)
    return ranked(counts)


def count_picks(results: Iterable[CaseResult], counts: Counter[tuple[str, str]]) -> None:
    """Add the (expected, called) pairs of these trials to `counts` (a run's trials are read
    once, case by case)."""
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


def ranked(counts: Counter[tuple[str, str]]) -> tuple[ConfusionCell, ...]:
    """The cells, most frequent first."""
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(ConfusionCell(expected=e, called=c, count=n) for (e, c), n in order)


def mistakes(cells: Iterable[ConfusionCell]) -> list[ConfusionCell]:
    """The cells where the call was not the one expected."""
    return [c for c in cells if c.expected != c.called]


def expected_total(cells: Iterable[ConfusionCell], expected: str) -> int:
    """How often `expected` was expected, over every cell of its row."""
    return sum(c.count for c in cells if c.expected == expected)


NAME_WIDTH = 30
"""Characters of a tool name shown (a hostile server's names can be long)."""


def shown_name(tool: str, missing: str) -> str:
    """A tool's name as a person reads it in a confusion line; `missing` for no call."""
    if tool == NO_CALL:
        return missing
    return tool if len(tool) <= NAME_WIDTH else tool[: NAME_WIDTH - 1] + "…"


def pair_text(cell: ConfusionCell) -> str:
    """`expected → called`, with words for no call."""
    expected = shown_name(cell.expected, "(no call expected)")
    return f"{expected} → {shown_name(cell.called, '(no call)')}"


def times_text(cells: tuple[ConfusionCell, ...], expected: str, called: str) -> str:
    """How often `called` was called where `expected` was expected, of how many times."""
    n = sum(c.count for c in cells if c.expected == expected and c.called == called)
    return f"{n} of {expected_total(cells, expected)}" if expected != NO_CALL else str(n)


def changed_lines(before: tuple[ConfusionCell, ...], after: tuple[ConfusionCell, ...]) -> list[str]:
    """Each confusion on either side, before → after (`Docs → Tickets  6 of 6 → 0 of 6`), the
    most frequent before first: what a change of tool descriptions did to the picks."""
    pairs = dict.fromkeys((c.expected, c.called) for c in (*mistakes(before), *mistakes(after)))
    return [
        f"{pair_text(ConfusionCell(expected=e, called=c, count=0))}  "
        f"{times_text(before, e, c)} → {times_text(after, e, c)}"
        for e, c in pairs
    ]
