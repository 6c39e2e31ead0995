"""`evalspec diff` and `evalspec compare`: review what a change does to the scores."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec.cli.common import HtmlOpt, check_output_file, reports_errors
from evalspec.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from evalspec.review.diff import Comparison

STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}
KIND_STYLES = {
    "regression": "bold red",
    "worse": "red",
    "better": "green",
    "added": "cyan",
    "missing": "cyan",
    "removed": "dim",
}


def print_comparison(comparison: Comparison, *, show_unchanged: bool) -> None:
    """One line per case that changed (before → after), then the rows that explain it."""
    from rich.console import Console
    from rich.text import Text

    from evalspec.review.diff import change_text, row_text, shown_changes, side_text
    from evalspec.terminal import text

    console = Console(highlight=False)
    console.print(
        text(comparison.title, "bold", single_line=True)
        + text(f"  {comparison.before_label} → {comparison.after_label}", "dim", single_line=True)
    )
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
        extra = change_text(c, comparison).partition(" (")[2]
        if extra:
            line.append(text(f"  ({extra}", "yellow", single_line=True))
        console.print(line)
        if c.before and c.after and c.before.reason != c.after.reason:
            console.print(text(f"    now: {c.after.reason}", "dim"))
        for r in c.rows:
            console.print(text(f"    {row_text(r)}", "dim"))
    if not shown:
        console.print("no case changed")
    console.print(text(comparison.summary(), "bold"))
    for note in comparison.notes:
        console.print(text(note, "dim"))


def print_matrix(comparison: Comparison, console: Console, *, show_unchanged: bool) -> None:
    """Cases down, a column per (run, model): status and score; the change kind last."""
    from rich.table import Table
    from rich.text import Text

    from evalspec.review.diff import matrix_rows, side_text
    from evalspec.terminal import text

    table = Table(show_lines=False, title_justify="left")
    table.add_column("case", overflow="fold")
    for col in comparison.columns:
        table.add_column(text(col.label, single_line=True), justify="right", no_wrap=True)
    table.add_column("change")
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


def _emit(
    comparison: Comparison, *, markdown: Path | None, as_json: bool, show_unchanged: bool
) -> None:
    if markdown:
        from evalspec.review.markdown import write_diff_markdown

        write_diff_markdown(comparison, markdown, show_unchanged=show_unchanged)
    if as_json:
        sys.stdout.write(
            json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
        )
    else:
        print_comparison(comparison, show_unchanged=show_unchanged)


@reports_errors
def diff(
    suites: Annotated[
        list[Path],
        typer.Argument(
            help="BASE_SUITE HEAD_SUITE; or only HEAD_SUITE with --base-ref.",
            show_default=False,
            metavar="[BASE_SUITE] HEAD_SUITE",
        ),
    ],
    transcripts: Annotated[
        Path,
        typer.Option("--transcripts", "-t", help="transcripts.jsonl, or a run directory."),
    ],
    base_ref: Annotated[
        str | None,
        typer.Option(
            "--base-ref", help="Read the base suite (and its includes) from this git ref."
        ),
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Also write the diff as Markdown (a PR comment) here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the diff as JSON.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Also list unchanged cases.")] = False,
) -> None:
    """Show what a suite change does to the scores, re-scoring recorded transcripts.

    Scores the same transcripts under the base and the head version of a suite, without
    calling any model, and lists per case and model: score and status before → after, the rows
    that explain the change, cases added (needs a run), removed, and cases whose request to the
    model changed (re-run needed: the recording answers the old question).

    Exit codes: 0 no passing case fails now, 1 a passing case fails now (cases needing a re-run
    excepted), 2 invalid suite or usage.

    Examples:

      evalspec diff old/weather.yaml suites/weather.yaml -t runs/weather/1121-1015

      evalspec diff --base-ref origin/main suites/weather.yaml -t runs/weather/1121-1015

      evalspec diff --base-ref origin/main suites/slack.yaml -t run/ --markdown diff.md
    """
    from evalspec.review.diff import diff_suites, suite_from_git
    from evalspec.suite.validate import load_suite
    from evalspec.transcript import load_transcripts

    check_output_file(markdown, "--markdown")
    if base_ref is not None and len(suites) != 1:
        raise UsageError("with --base-ref, pass only the suite file (its base comes from git)")
    if base_ref is None and len(suites) != 2:
        raise UsageError("pass BASE_SUITE HEAD_SUITE, or HEAD_SUITE with --base-ref REF")
    head_path = suites[-1]
    recorded = load_transcripts(transcripts)
    head = load_suite(head_path)
    if base_ref is not None:
        base = suite_from_git(base_ref, head_path)
        base_label = f"{base_ref}:{head_path.as_posix()}"
    else:
        base = load_suite(suites[0])
        base_label = suites[0].as_posix()
    comparison = diff_suites(
        base,
        head,
        recorded,
        base_label=base_label,
        head_label=head_path.as_posix(),
        source=transcripts.as_posix(),
    )
    _emit(comparison, markdown=markdown, as_json=as_json, show_unchanged=show_all)
    raise typer.Exit(comparison.exit_code)


@reports_errors
def compare(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories or results.json files, the earliest first.",
            show_default=False,
            metavar="RUN...",
        ),
    ],
    markdown: Annotated[
        Path | None, typer.Option(help="Also write the comparison as Markdown here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list cases that are the same in every column.")
    ] = False,
    html: HtmlOpt = None,
) -> None:
    """Put models side by side: a model × case matrix, and what changed, regressions first.

    Cases pair by name whatever the models are called: pass one run to compare its models
    (each against the first), two runs to compare before and after (model by model when both
    ran the same models, otherwise column by column), or more runs for the matrix (the first
    run against the last).

    Exit codes: 0 no case that passed before fails after, 1 some do, 2 unreadable input.

    Examples:

      evalspec compare runs/slack/20261121-101500          # the models of one run

      evalspec compare runs/slack/20261120-090000 runs/slack/20261121-101500
    """
    from evalspec.report.columns import RunData
    from evalspec.review.diff import compare_runs
    from evalspec.review.results_file import load_results

    check_output_file(markdown, "--markdown")
    check_output_file(html, "--html")
    loaded = [RunData(p.as_posix(), load_results(p)) for p in runs]
    comparison = compare_runs(loaded)
    if len(comparison.columns) < 2:
        raise UsageError("nothing to compare: pass a run with several models, or two or more runs")
    if html:
        from evalspec.report.html import write_runs_html
        from evalspec.report.runs import html_run

        write_runs_html([html_run(r.label, r.data, Path(r.label)) for r in loaded], html)
    _emit(comparison, markdown=markdown, as_json=as_json, show_unchanged=show_all)
    raise typer.Exit(comparison.exit_code)
