"""The terminal report: the cases with a column per model, then a summary row per model.

One model keeps the reason column (there is room for it); several models share one table, so a
reader compares them case by case, then a "why" table gives one line per cell that did not pass
(case, model, reason; with --verbose the explanation rows under it), and the summary table puts
their pass rates, pass@k, tokens, latency and cost side by side. Names and reasons from the
data go through evalspec._util.terminal: never read as markup, never a control sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalspec._report.uncertainty import (
    budget_text,
    flaky_text,
    rates_text,
    simulated_user_text,
)
from evalspec._util.terminal import text

if TYPE_CHECKING:
    from evalspec._report.records import Report
    from evalspec._scoring.trials import CaseSummary, ModelSummary

MAX_ROWS = 50
"""Above this many cases, cases every model passes are summarised instead of listed."""
MAX_PROBLEM_ROWS = 200
"""Failing, warning and errored cases listed (all with --verbose); results.json has every one,
and tens of thousands of table rows would take longer to print than to run."""

STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}

Row = TypeVar("Row")


def print_report(report: Report, console: Console | None = None, *, verbose: bool = False) -> None:
    console = console or Console()
    if len(report.models) > 1:
        console.print(_side_by_side(report, verbose=verbose))
        why = _why_not_passed(report, verbose=verbose)
        if why is not None:
            console.print(why)
        console.print(_summary_table(report))
    else:
        for m in report.models:
            console.print(_one_model(report, m, verbose=verbose))
            console.print(_summary_line(m))
    for m in report.models:
        _print_noise(report, m, console, named=len(report.models) > 1)


def _print_noise(report: Report, m: ModelSummary, console: Console, *, named: bool) -> None:
    """Intervals, flaky cases and budget overruns of one model, under the summary."""
    who = f"{m.model}: " if named else ""
    console.print(
        text(
            f"{who}{rates_text(m)} · {flaky_text(report.cases, m)}",
            "dim",
        )
    )
    if m.over_budget:
        console.print(text(f"{who}{budget_text(m)}", "bold red"))
    if simulated := simulated_user_text(m):
        console.print(text(f"{who}{simulated}", "dim"))


def _result_and_score(c: CaseSummary) -> tuple[str, str]:
    """`PASS 2/3` and `0.950 ±0.020` with trials (`flaky` when they disagree); `PASS` and
    `0.950` without."""
    result = c.status.upper() + (f" {c.passed}/{c.trials}" if c.trials > 1 else "")
    result += " flaky" if c.flaky else ""
    score = f"{c.score:.3f}" + (f" ±{c.std:.3f}" if c.trials > 1 else "")
    return result, score


def _cell(c: CaseSummary) -> Text:
    result, score = _result_and_score(c)
    return Text(f"{result} {score}", style=STYLES.get(c.status, ""))


def _rows_to_show(
    rows: Sequence[Row], passing: Callable[[Row], bool], *, verbose: bool
) -> tuple[list[Row], int, int]:
    """Long runs show what needs attention; --verbose shows every row.

    Returns the rows to print, how many passing rows were hidden, and how many others were cut
    after MAX_PROBLEM_ROWS."""
    if verbose or len(rows) <= MAX_ROWS:
        return list(rows), 0, 0
    problems = [r for r in rows if not passing(r)]
    shown = problems[:MAX_PROBLEM_ROWS]
    return shown, len(rows) - len(problems), len(problems) - len(shown)


def _side_by_side(report: Report, *, verbose: bool) -> Table:
    """A row per case, a column per model: status and score."""
    names = [m.model for m in report.models]
    by_case: dict[str, dict[str, CaseSummary]] = {}
    for c in report.cases:
        by_case.setdefault(c.case, {})[c.model] = c
    title = text(report.suite.name, "italic", single_line=True)
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("case", overflow="fold")
    for name in names:
        table.add_column(text(name, single_line=True), justify="right", no_wrap=True)
    shown, hidden, cut = _rows_to_show(
        list(by_case.items()),
        lambda row: all(c.status == "pass" for c in row[1].values()),
        verbose=verbose,
    )
    for case, cells in shown:
        table.add_row(
            text(case, single_line=True),
            *(_cell(cells[n]) if n in cells else Text("-") for n in names),
        )
    table.caption = _left_out(
        f"{hidden} cases every model passed not shown" if hidden else "",
        f"{cut} more that some model did not pass are in results.json" if cut else "",
    )
    return table


def _why_not_passed(report: Report, *, verbose: bool) -> Table | None:
    """One line per case x model that did not pass: the case named once for its models, so
    three models' reasons stay readable; None when every cell passed."""
    first: dict[str, int] = {}
    for c in report.cases:
        first.setdefault(c.case, len(first))
    problems = sorted((c for c in report.cases if c.status != "pass"), key=lambda c: first[c.case])
    if not problems:
        return None
    shown = problems if verbose else problems[:MAX_PROBLEM_ROWS]
    table = Table(title="why not passed", title_justify="left", expand=False)
    table.add_column("case", overflow="fold")
    table.add_column("model", no_wrap=True)
    table.add_column("result")
    table.add_column("score", justify="right")
    table.add_column("why", overflow="fold")
    previous = None
    for c in shown:
        result, score = _result_and_score(c)
        table.add_row(
            text(c.case if c.case != previous else "", single_line=True),
            text(c.model, single_line=True),
            Text(result, style=STYLES[c.status]),
            Text(score),
            text(c.reason),
            end_section=False,
        )
        previous = c.case
        _add_turn_rows(table, c, lead=1)
        if verbose:
            _add_field_rows(table, c, lead=1)
    cut = len(problems) - len(shown)
    table.caption = _left_out(f"{cut} more are in results.json" if cut else "")
    return table


_ENDED = {
    "stop_signal": "the user said ###STOP###",
    "empty_message": "the user sent an empty message",
    "max_turns": "the user reached max_turns",
    "error": "the conversation stopped on an error",
}


def _add_turn_rows(table: Table, c: CaseSummary, *, lead: int) -> None:
    """A line per user turn of a multi-turn case (its lowest-scoring trial): what the user
    said, and the turn's verdict when it is judged; a simulated user's lines are marked."""
    worst = min(c.results, key=lambda r: r.score, default=None)
    for entry in (worst.details.get("turns") or []) if worst else ():
        said = entry.get("user")
        said = "(not reached)" if said is None else said
        who = "user" if entry.get("source") == "simulated" else f"turn {entry.get('turn')}"
        status = entry.get("status")
        simulated = entry.get("source") == "simulated"
        stop = f" [{entry['stop']}]" if entry.get("stop") and not simulated else ""
        table.add_row(
            *[Text("")] * lead,
            text(f"  {who}: {said}{stop}", single_line=True),
            Text(status.upper(), style=STYLES.get(status, "")) if status else Text("-"),
            Text(f"{entry['score']:.3f}") if "score" in entry else Text(""),
            text(entry.get("reason", "") if status not in (None, "pass") else ""),
        )
        if simulated and entry.get("final_answer"):
            table.add_row(
                *[Text("")] * lead,
                text(f"  assistant: {entry['final_answer']}", "dim", single_line=True),
            )
        if simulated and entry.get("stop"):
            ended = _ENDED.get(entry["stop"], entry["stop"])
            table.add_row(*[Text("")] * lead, text(f"  ({ended})", "dim", single_line=True))


def _add_field_rows(table: Table, c: CaseSummary, *, lead: int) -> None:
    """The explanation rows of the case's lowest-scoring trial (the one its reason names),
    under its line (--verbose), after `lead` empty cells."""
    worst = min(c.results, key=lambda r: r.score, default=None)
    for r in worst.rows if worst else ():
        table.add_row(
            *[Text("")] * lead,
            text(f"  {r.field}", single_line=True),
            Text("ok" if r.match else "x", style="green" if r.match else "red"),
            Text(f"{r.score:.2f}×{r.weight:g}"),
            text(r.reason),
        )


def _summary_table(report: Report) -> Table:
    """A row per model: what choosing between them comes down to."""
    k = max(m.k for m in report.models)
    priced = any(m.cost is not None for m in report.models)
    table = Table(title="models", title_justify="left", expand=False)
    longest = max(len(m.model) for m in report.models)
    table.add_column("model", no_wrap=True, min_width=min(longest, 40))
    figures = ["pass rate", "mean score", f"pass@{k}", f"pass^{k}", "tokens, total"]
    figures.append("latency, total")
    for name in figures + (["cost, total"] if priced else []):
        table.add_column(name, justify="right")
    for m in report.models:
        row = [
            f"{(m.passed + m.warned) / m.cases:.0%}" if m.cases else "-",
            f"{m.mean_score:.3f}",
            f"{m.pass_at_k:.2f}",
            f"{m.pass_hat_k:.2f}",
            f"{m.tokens:,}",
            f"{m.latency_s:.1f}s",
        ]
        if priced:
            row.append(f"{m.cost:.4f}" if m.cost is not None else "-")
        table.add_row(text(m.model, single_line=True), *(Text(cell) for cell in row))
    return table


def _one_model(report: Report, m: ModelSummary, *, verbose: bool) -> Table:
    table = Table(
        title=text(f"{report.suite.name} · {m.model}", "italic", single_line=True),
        title_justify="left",
        expand=False,
    )
    table.add_column("case")
    table.add_column("result")
    table.add_column("score", justify="right")
    table.add_column("why", overflow="fold")
    mine = [c for c in report.cases if c.model == m.model]
    shown, hidden, cut = _rows_to_show(mine, lambda c: c.status == "pass", verbose=verbose)
    for c in shown:
        result, score = _result_and_score(c)
        why = "" if (c.status == "pass" and not verbose) else c.reason
        table.add_row(
            text(c.case, single_line=True),
            Text(result, style=STYLES[c.status]),
            Text(score),
            text(why),
        )
        _add_turn_rows(table, c, lead=0)
        if verbose:
            _add_field_rows(table, c, lead=0)
    table.caption = _left_out(
        f"{hidden} passing cases not shown" if hidden else "",
        f"{cut} more that did not pass are in results.json" if cut else "",
    )
    return table


def _left_out(*notes: str) -> str | None:
    """The caption saying which rows a long table left out, or None when it shows them all."""
    said = [n for n in notes if n]
    return "; ".join(said) + " (--verbose shows every case)" if said else None


def _summary_line(m: ModelSummary) -> Text:
    return Text.assemble(
        text(m.model, "bold", single_line=True),
        ": ",
        (f"{m.passed} passed", "green"),
        ", ",
        (f"{m.warned} warned", "yellow"),
        ", ",
        (f"{m.failed} failed", "red"),
        *((", ", (f"{m.errors} errors", "magenta")) if m.errors else ()),
        f" · mean score {m.mean_score:.2f} · pass@1 {m.pass_at_1:.2f}"
        + (f" · pass@{m.k} {m.pass_at_k:.2f} · pass^{m.k} {m.pass_hat_k:.2f}" if m.k > 1 else "")
        + (f" · {m.tokens} tokens" if m.tokens else "")
        + (f" · {m.latency_s:.1f}s" if m.latency_s else "")
        + (f" · cost {m.cost:.4f}" if m.cost is not None else ""),
    )
