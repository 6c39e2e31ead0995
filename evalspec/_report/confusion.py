"""The tool confusion of a model as lines a person reads: which tool was called where another
was expected (`Math.Add → Math.Plus  3 of 5`), the most frequent first, a few per model."""

from __future__ import annotations

from evalspec._scoring.confusion import (
    NO_CALL,
    ConfusionCell,
    expected_total,
    mistakes,
    pair_text,
)

MAX_SHOWN = 10
"""Confusions listed per model; results.json has them all."""


def confusion_lines(cells: tuple[ConfusionCell, ...]) -> list[str]:
    """One line per confusion: expected → called, how often of the times it was expected."""
    wrong = mistakes(cells)
    out = []
    for cell in wrong[:MAX_SHOWN]:
        pair = pair_text(cell)
        of = f" of {expected_total(cells, cell.expected)}" if cell.expected != NO_CALL else ""
        out.append(f"{pair}  {cell.count}{of}")
    if len(wrong) > MAX_SHOWN:
        out.append(f"and {len(wrong) - MAX_SHOWN} more (results.json: tool_confusion)")
    return out


def confusion_rows(cells: tuple[ConfusionCell, ...]) -> list[dict[str, str | int]]:
    """The same for a table: expected, called, times, and of how many times it was expected
    (the HTML report lists them all, a wrong pick being rare enough to read)."""
    return [
        {
            "expected": cell.expected or "(no call expected)",
            "called": cell.called or "(no call)",
            "count": cell.count,
            "of": expected_total(cells, cell.expected) if cell.expected != NO_CALL else "",
        }
        for cell in mistakes(cells)
    ]
