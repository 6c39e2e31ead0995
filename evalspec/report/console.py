"""The terminal report: one table per model, then the summary line per model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalspec.terminal import text

if TYPE_CHECKING:
    from evalspec.report.records import Report

MAX_ROWS = 50
"""Above this many cases per model, passing cases are summarised instead of listed."""
MAX_PROBLEM_ROWS = 200
"""Failing, warning and errored cases listed per model (all with --verbose); results.json has
every one, and tens of thousands of table rows would take longer to print than to run."""

STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}


def print_report(report: Report, console: Console | None = None, *, verbose: bool = False) -> None:
    console = console or Console()
    for m in report.models:
        table = Table(
            title=text(f"{report.suite.name} · {m.model}", "italic", single_line=True),
            title_justify="left",
            show_lines=False,
            expand=False,
        )
        table.add_column("case")
        table.add_column("result")
        table.add_column("score", justify="right")
        table.add_column("why", overflow="fold")
        mine = [c for c in report.cases if c.model == m.model]
        # Long runs show what needs attention; --verbose shows every case.
        hide_passing = not verbose and len(mine) > MAX_ROWS
        hidden = shown = cut = 0
        for c in mine:
            if hide_passing and c.status == "pass":
                hidden += 1
                continue
            if hide_passing and shown >= MAX_PROBLEM_ROWS:
                cut += 1
                continue
            shown += 1
            score = f"{c.score:.3f}" + (f" ±{c.std:.3f}" if c.trials > 1 else "")
            result = c.status.upper() + (f" {c.passed}/{c.trials}" if c.trials > 1 else "")
            why = "" if (c.status == "pass" and not verbose) else c.reason
            table.add_row(
                text(c.case, single_line=True),
                Text(result, style=STYLES[c.status]),
                score,
                text(why),
            )
            if verbose:
                for r in c.results[0].rows if c.results else ():
                    table.add_row(
                        text(f"  {r.field}", single_line=True),
                        Text("ok" if r.match else "x", style="green" if r.match else "red"),
                        f"{r.score:.2f}×{r.weight:g}",
                        text(r.reason),
                    )
        notes = [f"{hidden} passing cases not shown"] if hidden else []
        if cut:
            notes.append(f"{cut} more that did not pass are in results.json")
        if notes:
            table.caption = "; ".join(notes) + " (--verbose shows every case)"
        console.print(table)
        console.print(
            Text.assemble(
                text(m.model, "bold", single_line=True),
                ": ",
                (f"{m.passed} passed", "green"),
                ", ",
                (f"{m.warned} warned", "yellow"),
                ", ",
                (f"{m.failed} failed", "red"),
                *((", ", (f"{m.errors} errors", "magenta")) if m.errors else ()),
                f" · mean score {m.mean_score:.2f} · pass@1 {m.pass_at_1:.2f}"
                + (f" · {m.tokens} tokens" if m.tokens else ""),
            )
        )
