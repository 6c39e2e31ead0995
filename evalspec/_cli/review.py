"""`evalspec diff` and `evalspec compare`: review what a change does to the scores."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import HtmlOpt, check_output_file, reports_errors
from evalspec._util.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from evalspec._review.diff import Comparison
    from evalspec._suite.model import Gate, GateOn

AllowStaleOpt = Annotated[
    bool,
    typer.Option(
        "--allow-stale",
        help="Accept cases that need a run or a re-run, and transcripts that match no case "
        "(exit 0 instead of 3 for them).",
    ),
]

GateOpt = Annotated[
    str | None,
    typer.Option(
        "--gate",
        help="What fails the comparison (exit 1), over the suite's `gate: mode:`: any_regression "
        "(any case that passed now fails), significant_drop (the pass rate fell and the paired "
        "exact test says it is not noise) or none (only the suite's pass-rate thresholds).",
        metavar="any_regression|significant_drop|none",
    ),
]


def gate_override(name: str | None, suite_gate: Gate | None = None) -> Gate | None:
    """The gate --gate asks for (None: the suite's); UsageError for an unknown name."""
    from dataclasses import replace

    from evalspec._suite.model import Gate

    mode = gate_mode(name)
    return None if mode is None else replace(suite_gate or Gate(), mode=mode)


def gate_mode(name: str | None) -> GateOn | None:
    """--gate's value as a gate mode (None: the suite's); UsageError for an unknown name."""
    if name is None:
        return None
    for mode in GATE_NAMES:
        if name == mode:
            return mode
    raise UsageError(f"--gate {name!r}: choose one of {', '.join(GATE_NAMES)}")


GATE_NAMES: tuple[GateOn, ...] = ("any_regression", "significant_drop", "none")

STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}
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


def _emit(
    comparison: Comparison, *, markdown: Path | None, as_json: bool, show_unchanged: bool
) -> None:
    if markdown:
        from evalspec._review.markdown import write_diff_markdown

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
    allow_stale: AllowStaleOpt = False,
    gate: GateOpt = None,
) -> None:
    """Show what a suite change does to the scores, re-scoring recorded transcripts.

    Scores the same transcripts under the base and the head version of a suite, without
    calling any model, and lists per case and model: score and status before → after, the rows
    that explain the change, cases added (needs a run), removed, and cases whose request to the
    model changed (re-run needed: the recording answers the old question).

    A recorded transcript counts for the head suite only if it answers the head's requests:
    the same opening request and, for every tool call, the output the head's tools give now.

    Exit codes: 0 nothing to stop for; 1 the gate failed (by default: a passing case now
    fails); 2 invalid suite or usage; 3 evidence missing or stale (a case needs a run or a
    re-run, transcripts match no case or model, or nothing was scored; --allow-stale accepts
    the first two); 4 a security-relevant change (an endpoint, key variable, header, MCP
    server or embedding model differs). 4 wins over 1, 1 over 3.

    Examples:

      evalspec diff old/weather.yaml suites/weather.yaml -t runs/weather/1121-1015

      evalspec diff --base-ref origin/main suites/weather.yaml -t runs/weather/1121-1015

      evalspec diff --base-ref origin/main suites/slack.yaml -t run/ --markdown diff.md
    """
    from evalspec._review.diff import diff_suites
    from evalspec._review.git_base import suite_from_git
    from evalspec._suite.limits import review_budget, untrusted
    from evalspec._suite.validate import load_suite
    from evalspec._transcript import load_transcripts

    check_output_file(markdown, "--markdown")
    if base_ref is not None and len(suites) != 1:
        raise UsageError("with --base-ref, pass only the suite file (its base comes from git)")
    if base_ref is None and len(suites) != 2:
        raise UsageError("pass BASE_SUITE HEAD_SUITE, or HEAD_SUITE with --base-ref REF")
    head_path = suites[-1]
    # With --base-ref this is a pull request's change: review's limits and time budget.
    pull_request = base_ref is not None
    with (
        untrusted() if pull_request else nullcontext(),
        review_budget("diff --base-ref") if pull_request else nullcontext(),
    ):
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
            allow_stale=allow_stale,
            gate=gate_override(gate, (base or head).gate),
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
    gate: GateOpt = None,
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
    from evalspec._report.columns import RunData
    from evalspec._review.diff import compare_runs
    from evalspec._review.results_file import load_results

    check_output_file(markdown, "--markdown")
    check_output_file(html, "--html")
    loaded = [RunData(p.as_posix(), load_results(p)) for p in runs]
    comparison = compare_runs(loaded, gate=gate_override(gate))
    if len(comparison.columns) < 2:
        raise UsageError("nothing to compare: pass a run with several models, or two or more runs")
    if html:
        from evalspec._report.html import write_runs_html
        from evalspec._report.runs import html_run

        write_runs_html([html_run(r.label, r.data, Path(r.label)) for r in loaded], html)
    _emit(comparison, markdown=markdown, as_json=as_json, show_unchanged=show_all)
    raise typer.Exit(comparison.exit_code)


@reports_errors
def review(
    patterns: Annotated[
        list[str] | None,
        typer.Argument(
            help="Suite files or globs, relative to the repository (default: suites/*.yaml).",
            show_default=False,
            metavar="[SUITE_GLOB]...",
        ),
    ] = None,
    base_ref: Annotated[
        str,
        typer.Option("--base-ref", help="The git ref to compare with, e.g. origin/main."),
    ] = "origin/main",
    markdown: Annotated[
        Path | None, typer.Option(help="Write the pull-request comment (Markdown) here.")
    ] = None,
    full_markdown: Annotated[
        Path | None,
        typer.Option(
            help="Also write the whole review here: the comment is shortened to GitHub's "
            "65,536-character limit when it would be longer."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the review as JSON.")] = False,
    allow_stale: AllowStaleOpt = False,
    gate: GateOpt = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(
            "--plugin",
            help="Load this installed plugin (its entry-point name); repeatable. None loads by "
            "default: name only plugins the base branch's workflow installs and trusts.",
        ),
    ] = None,
) -> None:
    """Review every suite of a pull request against the base branch, in one verdict.

    For each suite: read its base version and the base's recordings from git, replay both
    versions on their recordings (offline: no model, judge or simulator is called), check that
    the recorded answers still answer the head's requests, and diff. Writes one Markdown
    comment, most severe first across suites.

    Nothing the pull request names or ships runs: similarity is scored with the base's
    embedding model, no MCP server starts, and installed plugins load only when named with
    --plugin.

    Exit codes: 0 nothing to stop for; 1 the gate failed (by default: a passing case now
    fails); 2 invalid suite or usage; 3 evidence missing or stale (a case needs a run or a
    re-run, transcripts match no case or model, or nothing was scored; --allow-stale accepts
    the first two); 4 a security-relevant change (an endpoint, key variable, header, MCP
    server or embedding model differs). 4 wins over 1, 1 over 3.

    Examples:

      evalspec review --base-ref origin/main --markdown comment.md

      evalspec review 'suites/**/*.yaml' --base-ref "$BASE_SHA" --json
    """
    from evalspec import plugins
    from evalspec._review.markdown import write_review_markdown
    from evalspec._review.repo import DEFAULT_PATTERNS, review_repository
    from evalspec._suite.limits import review_budget, untrusted
    from evalspec._util.terminal import plain

    gate_override(gate)  # an unknown name is refused before anything is read
    check_output_file(markdown, "--markdown")
    check_output_file(full_markdown, "--full-markdown")
    with plugins.allow_only(plugin or ()), untrusted(), review_budget("review"):
        result = review_repository(
            patterns or list(DEFAULT_PATTERNS),
            base_ref,
            allow_stale=allow_stale,
            gate=gate_mode(gate),
        )
    if markdown:
        write_review_markdown(result, markdown)
    if full_markdown:
        write_review_markdown(result, full_markdown, limit=sys.maxsize)
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        for suite in result.suites:
            if suite.comparison is None:
                print(plain(f"removed: {suite.path}"))
            elif not suite.untouched:
                print_comparison(suite.comparison, show_unchanged=False)
                print()
        untouched = [s.path for s in result.suites if s.untouched]
        if untouched:
            print(plain(f"untouched: {', '.join(untouched)}"))
        print(f"exit code {result.exit_code}")
    raise typer.Exit(result.exit_code)
