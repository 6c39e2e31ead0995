"""The terminal report: the cases with a column per model, then a summary row per model.

One model keeps the reason column (there is room for it); several models share one table, so a
reader compares them case by case, then a "why" table gives one line per cell that did not pass
(case, model, reason; with --verbose the explanation rows under it), and the summary table puts
their pass rates, pass@k, tokens, latency and cost side by side. Names and reasons from the
data go through evalspec._util.terminal: never read as markup, never a control sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from evalspec._report.confusion import confusion_lines
from evalspec._report.conversation import (
    calls_by_item,
    conversation,
    role_label,
    simulator_of,
)
from evalspec._report.uncertainty import (
    budget_text,
    flaky_text,
    rates_text,
    robustness_lines,
    simulated_user_text,
    user_faults_text,
)
from evalspec._util.terminal import STYLES, text

if TYPE_CHECKING:
    from evalspec._report.records import Report
    from evalspec._scoring.trials import CaseSummary, ModelSummary

MAX_ROWS = 50
"""Above this many cases, cases every model passes are summarised instead of listed."""
MAX_PROBLEM_ROWS = 200
"""Failing, warning and errored cases listed (all with --verbose); results.json has every one,
and tens of thousands of table rows would take longer to print than to run."""


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
            if talks := _conversations(report, m, verbose=verbose):
                console.print(talks)
            console.print(_summary_line(m))
    for m in report.models:
        _print_noise(report, m, console, named=len(report.models) > 1)
    for m in report.models:
        _print_confusion(m, console)
    for line in report.calibration:
        console.print(text(line))
    _print_variants(report, console)


def _print_variants(report: Report, console: Console) -> None:
    """Each model's tool variants paired against its first, as `evalspec compare` says it:
    which version of the tools won, by how much, beyond noise or not."""
    if len(report.suite.variants) < 2:
        return
    from evalspec._compare.records import RunData
    from evalspec._compare.runs import compare_runs
    from evalspec._compare.text import noise_lines

    pairs = compare_runs([RunData("run", report.results_file())]).noise
    if pairs:
        console.print(
            text("tool variants, paired by case (cases that moved: evalspec compare RUN):", "bold")
        )
    for m in pairs:
        for line in noise_lines(m):
            console.print(text(f"  {line}"))


def _print_confusion(m: ModelSummary, console: Console) -> None:
    """Which tool the model called where another was expected (nothing when it never did)."""
    lines = confusion_lines(m.tool_confusion)
    if lines:
        console.print(text(f"tool confusion · {m.model} (expected → called):", "bold"))
        for line in lines:
            console.print(text(f"  {line}", "yellow"))


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
    for line in robustness_lines(m):
        console.print(text(f"{who}{line}", "bold"))


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


def _why_not_passed(report: Report, *, verbose: bool) -> Group | None:
    """A block per case that some model did not pass: the case named once, then each such
    model's verdict, its reason as a paragraph (the whole of it, at any width: a table's reason
    column shrank to a few characters at 80 columns) and, for a conversation, its turns by role.
    None when every cell passed."""
    first: dict[str, int] = {}
    for c in report.cases:
        first.setdefault(c.case, len(first))
    problems = sorted((c for c in report.cases if c.status != "pass"), key=lambda c: first[c.case])
    if not problems:
        return None
    shown = problems if verbose else problems[:MAX_PROBLEM_ROWS]
    calls = calls_by_item(report.transcripts)
    out: list[RenderableType] = [text("why not passed", "italic")]
    previous = None
    for c in shown:
        if c.case != previous:
            out.append(text(c.case, "bold", single_line=True))
        previous = c.case
        result, score = _result_and_score(c)
        out.append(
            Padding(
                Text.assemble(
                    text(c.model, "bold", single_line=True),
                    "  ",
                    (f"{result} {score}", STYLES[c.status]),
                ),
                (0, 0, 0, 2),
                expand=False,
            )
        )
        out.append(Padding(text(c.reason), (0, 0, 0, 4), expand=False))
        out += _conversation_lines(report, c, calls, indent=4)
        if verbose:
            out += _field_rows(c, indent=4)
    cut = len(problems) - len(shown)
    if cut:
        out.append(text(_left_out(f"{cut} more are in results.json") or "", "dim"))
    return Group(*out)


def _conversation_lines(
    report: Report, c: CaseSummary, calls: dict[str, list[dict[str, Any]]], *, indent: int
) -> list[RenderableType]:
    """The turns of a conversation's lowest-scoring trial (the one its reason names), a line
    per role, each wrapped under its own indent; a judged turn says its verdict and why."""
    worst = min(c.results, key=lambda r: r.score, default=None)
    if worst is None or not worst.details.get("turns"):
        return []
    simulator = simulator_of(report.suite, c.case)
    out: list[RenderableType] = []
    for turn in conversation(worst.details, calls.get(worst.item_id, ())):
        head = Text(f"turn {turn.number}", style="bold")
        if turn.judged and turn.status is not None:
            head.append(f"  {turn.status.upper()}", style=STYLES.get(turn.status, ""))
            if turn.score is not None:
                head.append(f" {turn.score:.3f}")
        else:
            head.append("  not judged", style="dim")
        out.append(Padding(head, (0, 0, 0, indent), expand=False))
        for line in turn.lines:
            said = Text.assemble((f"{role_label(line.role, simulator)}: ", "dim"), text(line.text))
            out.append(Padding(said, (0, 0, 0, indent + 2), expand=False))
        if turn.status not in (None, "pass") and turn.reason:
            why = Text.assemble(("why: ", "dim"), text(turn.reason))
            out.append(Padding(why, (0, 0, 0, indent + 2), expand=False))
    return out


def _field_rows(c: CaseSummary, *, indent: int) -> list[RenderableType]:
    """The explanation rows of the case's lowest-scoring trial (--verbose): field, match,
    score x weight, and why, each row's reason wrapped in its own column."""
    worst = min(c.results, key=lambda r: r.score, default=None)
    if worst is None or not worst.rows:
        return []
    grid = Table.grid(padding=(0, 1))
    grid.add_column(overflow="fold", max_width=30)
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(overflow="fold", ratio=1)
    for r in worst.rows:
        grid.add_row(
            text(r.field, single_line=True),
            Text("ok" if r.match else "x", style="green" if r.match else "red"),
            Text(f"{r.score:.2f}×{r.weight:g}"),
            text(r.reason),
        )
    return [Padding(grid, (0, 0, 0, indent), expand=False)]


def _add_field_rows(table: Table, c: CaseSummary) -> None:
    """The explanation rows of the case's lowest-scoring trial (the one its reason names),
    under its line in one model's table (--verbose)."""
    worst = min(c.results, key=lambda r: r.score, default=None)
    for r in worst.rows if worst else ():
        table.add_row(
            text(f"  {r.field}", single_line=True),
            Text("ok" if r.match else "x", style="green" if r.match else "red"),
            Text(f"{r.score:.2f}×{r.weight:g}"),
            text(r.reason),
        )


def _conversations(report: Report, m: ModelSummary, *, verbose: bool) -> Group | None:
    """Under one model's table, the conversations it did not pass (every one with --verbose),
    turn by turn and line by role, each line wrapped at the terminal's width."""
    calls = calls_by_item(report.transcripts)
    out: list[RenderableType] = []
    mine = [c for c in report.cases if c.model == m.model and (verbose or c.status != "pass")]
    for c in mine[:MAX_PROBLEM_ROWS] if not verbose else mine:
        lines = _conversation_lines(report, c, calls, indent=2)
        if lines:
            result, score = _result_and_score(c)
            out.append(
                Text.assemble(
                    text(c.case, "bold", single_line=True),
                    "  ",
                    (f"{result} {score}", STYLES[c.status]),
                )
            )
            out += lines
    return Group(text("conversations", "italic"), *out) if out else None


def _summary_table(report: Report) -> Table:
    """A row per model: what choosing between them comes down to."""
    k = max(m.k for m in report.models)
    priced = any(m.cost is not None for m in report.models)
    table = Table(title="models", title_justify="left", expand=False)
    longest = max(len(m.model) for m in report.models)
    table.add_column("model", no_wrap=True, min_width=min(longest, 40))
    figures = ["case pass rate", "mean score", f"pass@{k}", f"pass^{k}", "tokens, total"]
    figures.append("latency, total")
    for name in figures + (["cost, total"] if priced else []):
        table.add_column(name, justify="right")
    for m in report.models:
        row = [
            f"{(m.passed + m.warned) / (m.cases - m.spoiled):.0%}" if m.cases > m.spoiled else "-",
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
        if verbose:
            _add_field_rows(table, c)
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
        *((", ", (user_faults_text(m.spoiled), "cyan")) if m.spoiled else ()),
        f" · mean score {m.mean_score:.2f} · pass@1 {m.pass_at_1:.2f}"
        + (f" · pass@{m.k} {m.pass_at_k:.2f} · pass^{m.k} {m.pass_hat_k:.2f}" if m.k > 1 else "")
        + (f" · {m.tokens} tokens" if m.tokens else "")
        + (f" · {m.latency_s:.1f}s" if m.latency_s else "")
        + (f" · cost {m.cost:.4f}" if m.cost is not None else ""),
    )
