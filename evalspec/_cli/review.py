"""`evalspec diff` and `evalspec compare`: review what a change does to the scores."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import HtmlOpt, reports_errors
from evalspec._util import finite
from evalspec._util.errors import UsageError

if TYPE_CHECKING:
    from evalspec.records import Comparison

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


def _emit(comparison: Comparison, *, as_json: bool, show_unchanged: bool) -> None:
    if as_json:
        text = finite.dumps(
            comparison.to_dict(), "the --json output", indent=2, ensure_ascii=False, default=str
        )
        sys.stdout.write(text + "\n")
    else:
        from evalspec._compare.console import print_comparison

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
    from evalspec.api import diff as diff_suites

    if base_ref is not None and len(suites) != 1:
        raise UsageError("with --base-ref, pass only the suite file (its base comes from git)")
    if base_ref is None and len(suites) != 2:
        raise UsageError("pass BASE_SUITE HEAD_SUITE, or HEAD_SUITE with --base-ref REF")
    comparison = diff_suites(
        suites[0] if base_ref is None else None,
        suites[-1],
        transcripts,
        base_ref=base_ref,
        allow_stale=allow_stale,
        gate=gate,
        markdown=markdown,
        show_unchanged=show_all,
    )
    _emit(comparison, as_json=as_json, show_unchanged=show_all)
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

    The gate is the one the earliest run's suite had (results.json records it), --gate
    changes its mode.

    Exit codes: 0 the gate passes, 1 it fails (by default: a case that passed before fails
    after), 2 unreadable input.

    Examples:

      evalspec compare runs/slack/20261121-101500          # the models of one run

      evalspec compare runs/slack/20261120-090000 runs/slack/20261121-101500
    """
    from evalspec.api import compare as compare_runs

    comparison = compare_runs(
        runs, gate=gate, markdown=markdown, html=html, show_unchanged=show_all
    )
    _emit(comparison, as_json=as_json, show_unchanged=show_all)
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
    the first two; a recordings file whose requests do not match their keys, which it does
    not); 4 a security-relevant change (an endpoint, key variable, header, MCP server or
    embedding model differs). 4 wins over 1, 1 over 3.

    Examples:

      evalspec review --base-ref origin/main --markdown comment.md

      evalspec review 'suites/**/*.yaml' --base-ref "$BASE_SHA" --json
    """
    from evalspec._compare.console import print_comparison
    from evalspec._util.terminal import plain
    from evalspec.api import review as review_repository

    result = review_repository(
        patterns,
        base_ref=base_ref,
        allow_stale=allow_stale,
        gate=gate,
        plugins=plugin or (),
        markdown=markdown,
        full_markdown=full_markdown,
    )
    if as_json:
        text = finite.dumps(result.to_dict(), "the --json output", indent=2, ensure_ascii=False)
        sys.stdout.write(text + "\n")
    else:
        for suite in result.suites:
            if suite.comparison is None:
                print(plain(f"removed: {suite.path}"))
            elif not suite.untouched:
                print_comparison(suite.comparison, show_unchanged=False)
                for line in suite.calibration:
                    print(plain(f"{suite.path}: {line}"))
                print()
        untouched = [s.path for s in result.suites if s.untouched]
        if untouched:
            print(plain(f"untouched: {', '.join(untouched)}"))
        print(f"exit code {result.exit_code}")
    raise typer.Exit(result.exit_code)
