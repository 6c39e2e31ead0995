"""The comparison on the console: what `evalspec diff`, `compare` and `review` print.

Security-relevant changes first, then the matrix of cases and columns, one line per case that
changed with the rows that explain it, then the paired noise test and the gate's verdict. Names
and reasons from the data go through evalspec._util.terminal: never markup, never a control
sequence. It renders review's records, so it sits above `evalspec._review` in the layers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from evalspec._util.terminal import STYLES

if TYPE_CHECKING:
    from rich.console import Console

    from evalspec._review.diff import Comparison

KIND_STYLES = {
    "regression": "bold red",
    "worse": "red",
    "better": "green",
    "changed": "yellow",
    "added": "cyan",
    "missing": "cyan",
    "removed": "dim",
}


def print_comparison(comparison: Comparison, *, show_unchanged: bool) -> None:
    """Security-relevant changes first, then one line per case that changed (before → after),
    the suite changes that affect it, why its evidence is stale, and the rows that explain it."""
    from rich.console import Console
    from rich.text import Text

    from evalspec._review.diff import evidence_text, row_text, shown_changes, side_text
    from evalspec._util.terminal import text

    console = Console(highlight=False)

    def say(value: str, style: str = "") -> None:
        console.print(text(value, style))

    console.print(
        text(comparison.title, "bold", single_line=True)
        + text(f"  {comparison.before_label} → {comparison.after_label}", "dim", single_line=True)
    )
    for item in comparison.security:
        say(f"SECURITY   {item}", "bold red")
    for item in comparison.skipped:
        say(f"SKIPPED    {item}", "bold yellow")
    for item in comparison.suite_wide:
        say(f"every case: {item}", "yellow")
    for item in comparison.suite_changes:
        say(f"suite: {item}", "yellow")
    for rec in comparison.recordings:
        say(f"recordings: {rec.path}: {rec.text()}", "bold red" if rec.unverified else "yellow")
        for finding in rec.findings:
            say(f"    {finding}", "red")
    if comparison.columns:
        print_matrix(comparison, console, show_unchanged=show_unchanged)
    shown = shown_changes(comparison, show_unchanged=show_unchanged and not comparison.columns)
    multi = len({c.model for c in comparison.changes}) > 1
    for c in shown:
        line = Text()
        line.append(f"{c.kind.upper():<10} ", style=KIND_STYLES.get(c.kind, "dim"))
        line.append(text(c.case + (f" · {c.model}" if multi else ""), "bold", single_line=True))
        line.append("  ")
        for i, s in enumerate((c.before, c.after)):
            if i:
                line.append(" → ")
            line.append(text(side_text(s), STYLES.get(s.status, "") if s else "dim"))
        extra = evidence_text(c)
        if extra:
            line.append(text(f"  ({extra})", "yellow", single_line=True))
        console.print(line)
        for item in c.causes:
            say(f"    cause: {item}", "bold yellow")
        for item in c.named:
            say(f"    changed: {item}", "yellow")
        for item in c.stale:
            say(f"    stale: {item}", "yellow")
        if c.before and c.after and c.before.reason != c.after.reason:
            say(f"    now: {c.after.reason}", "dim")
        for r in c.rows:
            say(f"    {row_text(r)}", "dim")
    if not shown:
        console.print("no case changed")
    say(comparison.summary(), "bold")
    print_noise(comparison, say)
    for note in comparison.notes:
        say(note, "dim")


def print_noise(comparison: Comparison, say: Callable[[str, str], None]) -> None:
    """Per model: the paired change, significant or within noise; then the gate's verdict."""
    from evalspec._review.noise import noise_lines

    for m in comparison.noise:
        for i, line in enumerate(noise_lines(m)):
            say(line, ("bold red" if m.pass_rate.drop else "bold") if i == 0 else "")
    failures = comparison.gate_failures
    gate = f"gate {comparison.gate.mode}"
    if failures:
        for why in failures:
            say(f"GATE FAILED ({gate}): {why}", "bold red")
    else:
        say(f"{gate}: passed", "green")
    for note in comparison.gate_notes:
        say(note, "yellow")


def print_matrix(comparison: Comparison, console: Console, *, show_unchanged: bool) -> None:
    """Cases down, a column per (run, model): status and score; the change kind last."""
    from rich.table import Table
    from rich.text import Text

    from evalspec._review.diff import matrix_rows, side_text
    from evalspec._util.terminal import text

    table = Table(show_lines=False, title_justify="left")
    table.add_column("case", overflow="fold", min_width=12)
    for col in comparison.columns:
        table.add_column(text(col.label, single_line=True), justify="right", overflow="fold")
    table.add_column("change", no_wrap=True, min_width=10)
    same = 0
    for case, kind, cells in matrix_rows(comparison):
        if kind == "unchanged" and not show_unchanged:
            same += 1
            continue
        table.add_row(
            text(case, single_line=True),
            *(Text(side_text(s), style=STYLES.get(s.status, "") if s else "dim") for s in cells),
            Text(kind.upper(), style=KIND_STYLES.get(kind, "dim")),
        )
    if same:
        table.caption = f"{same} unchanged cases not shown (--all shows them)"
    console.print(table)
