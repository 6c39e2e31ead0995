"""`evalspec score`: re-score recorded transcripts under the suite as it is now."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from evalspec._cli.common import (
    CaseOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    LabelsOpt,
    MarkdownOpt,
    ReportOptions,
    VerboseOpt,
    check_report_files,
    configure_logging,
    print_error,
    reports_errors,
    show,
)

_log = logging.getLogger(__name__)


@reports_errors
def score(
    suite: Annotated[
        Path, typer.Argument(help="Suite file (today's version).", show_default=False)
    ],
    transcripts: Annotated[
        Path, typer.Option("--transcripts", "-t", help="transcripts.jsonl, or a run directory.")
    ],
    as_json: JsonOpt = False,
    out: Annotated[Path | None, typer.Option(help="Write results.json here.")] = None,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
    case: CaseOpt = None,
    labels: LabelsOpt = None,
    allow_skipped: Annotated[
        bool,
        typer.Option(
            "--allow-stale",
            help="Accept stale transcripts (they answer requests the suite no longer makes: "
            "scored anyway) and transcripts that match no case or model of the suite (left "
            "out); scoring nothing still exits 3.",
        ),
    ] = False,
) -> None:
    """Re-score recorded transcripts under the suite as it is now, without calling any model.

    Transcripts are matched to cases by name, so editing critics, weights or thresholds and
    scoring again costs nothing. A transcript is stale when it answers a request the suite no
    longer makes: a changed user message or model setting, or a tool that now answers the
    model's call differently (a simulated response, a cache); each is named.

    Exit codes: 0 every case passed; 1 some case failed; 2 invalid suite or usage; 3 some
    transcripts are stale or match no case or model of the suite (each named; --allow-stale
    accepts them), or none matches (never accepted).

    Examples:

      evalspec score suites/slack.yaml --transcripts runs/slack/20261121-101500

      evalspec score suites/slack.yaml -t transcripts.jsonl --json

      evalspec score suites/slack.yaml -t runs/slack/20261121-101500 --case 'post to*'
    """
    configure_logging(verbose)
    options = ReportOptions(as_json, verbose, junit, markdown, html)
    raise typer.Exit(
        rescore(
            suite,
            transcripts,
            options,
            out,
            allow_skipped=allow_skipped,
            cases=case,
            labels=labels,
        )
    )


def rescore(
    suite_path: Path,
    transcripts: Path,
    options: ReportOptions,
    out: Path | None,
    *,
    allow_skipped: bool = False,
    cases: list[str] | None = None,
    labels: Path | None = None,
) -> int:
    """`evalspec.api.rescore`, with what it left out named on stderr; the exit code."""
    from evalspec.api import rescore as rescore_transcripts

    check_report_files(options)
    done = rescore_transcripts(
        suite_path,
        transcripts,
        cases=cases,
        allow_stale=allow_skipped,
        reports=options.files(results=out),
        labels=labels,
    )
    if done.adopted is not None:
        a = done.adopted
        print_error(
            f"note: {a.count} imported transcript{'s' if a.count != 1 else ''} labelled "
            f"{a.label!r} scored as the suite's only model {a.model!r}"
        )
    level = "warning" if allow_skipped and done.report is not None else "error"
    for problem in done.skipped:
        _log.info("skipped transcripts: %s", problem)
        print_error(f"{level}: skipped: {problem}")
    if done.report is None:
        print_error(
            f"error: nothing to score: none of the {done.read} transcripts in {transcripts} "
            f"is of a {'case chosen by --case' if cases else 'case'} and model of {suite_path}"
        )
        return done.exit_code
    for s in done.stale:
        print_error(f"{level}: stale: {s.label}: {'; '.join(s.why)}")
    if done.stale:
        print_error(
            f"{level}: {len(done.stale)} of {done.scored} transcripts answer requests "
            f"{suite_path} no longer makes: re-run them "
            "(evalspec run ... --resume re-runs exactly those)"
            + ("" if allow_skipped else ", or accept them with --allow-stale")
        )
    show(done.report, options)
    return done.exit_code
