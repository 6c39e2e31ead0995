"""The comparison on the console: what `evalspec diff`, `compare` and `review` print.

Security-relevant changes first, then the matrix of cases and columns, one line per case that
changed with the rows that explain it, then the paired noise test and the gate's verdict. Names
and reasons from the data go through evalspec._util.terminal: never markup, never a control
sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from evalspec._compare.records import CaseChange, Comparison, matrix_rows
from evalspec._compare.text import (
    VARIANTS_HEADING,
    evidence_text,
    noise_lines,
    row_text,
    shown_changes,
    side_text,
)
from evalspec._util.terminal import STYLES

if TYPE_CHECKING:
    from rich.console import Console

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

    from evalspec._util.terminal import text

    console = Console(highlight=False)

    def say(value: str, style: str = "") -> None:
        console.print(text(value, style))

    console.print(
        text(comparison.title, "bold", single_line=True)
        + text(f"  {comparison.before_label} → {comparison.after_label}", "dim", single_line=True)
    )
    _say_each(say, "SECURITY   ", comparison.security, "bold red")
    _say_each(say, "SKIPPED    ", comparison.skipped, "bold yellow")
    _say_each(say, "every case: ", comparison.suite_wide, "yellow")
    _say_each(say, "suite: ", comparison.suite_changes, "yellow")
    for rec in comparison.recordings:
        say(f"recordings: {rec.path}: {rec.text()}", "bold red" if rec.unverified else "yellow")
        for finding in rec.findings:
            say(f"    {finding}", "red")
    for drift in comparison.tool_drift:
        say(f"MCP tools: {drift.server}: {drift.counts()}", "yellow")
        for line in drift.lines():
            say(f"    {line}", "yellow")
    if comparison.columns:
        print_matrix(comparison, console, show_unchanged=show_unchanged)
    shown = shown_changes(comparison, show_unchanged=show_unchanged and not comparison.columns)
    multi = len({c.model for c in comparison.changes}) > 1
    for c in shown:
        print_change(c, console, say, multi=multi)
    if not shown:
        console.print("no case changed")
    say(comparison.summary(), "bold")
    print_noise(comparison, say)
    for note in comparison.notes:
        say(note, "dim")


def print_change(
    c: CaseChange, console: Console, say: Callable[[str, str], None], *, multi: bool
) -> None:
    """One case's line (before → after, the state of its evidence), then why it moved."""
    from rich.text import Text

    from evalspec._util.terminal import text

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
    _say_each(say, "    cause: ", c.causes, "bold yellow")
    _say_each(say, "    changed: ", c.named, "yellow")
    _say_each(say, "    stale: ", c.stale, "yellow")
    if c.before and c.after and c.before.reason != c.after.reason:
        say(f"    now: {c.after.reason}", "dim")
    for r in c.rows:
        say(f"    {row_text(r)}", "dim")


def _say_each(
    say: Callable[[str, str], None], prefix: str, items: Iterable[str], style: str
) -> None:
    for item in items:
        say(f"{prefix}{item}", style)


def print_noise(comparison: Comparison, say: Callable[[str, str], None]) -> None:
    """Per model: the paired change, significant or within noise; then the gate's verdict."""
    for m in comparison.noise:
        for i, line in enumerate(noise_lines(m)):
            say(line, ("bold red" if m.pass_rate.drop else "bold") if i == 0 else "")
    if comparison.variants:
        say(VARIANTS_HEADING, "bold")
    for m in comparison.variants:
        for i, line in enumerate(noise_lines(m)):
            say(f"  {line}", "bold" if i == 0 else "")
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
