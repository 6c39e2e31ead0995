"""`evalspec score`: re-score recorded transcripts under the suite as it is now."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from evalspec.cli.common import (
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    MarkdownOpt,
    ReportOptions,
    VerboseOpt,
    check_output_file,
    check_report_files,
    configure_logging,
    print_error,
    reports_errors,
    write_and_show,
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
) -> None:
    """Re-score recorded transcripts under the suite as it is now, without calling any model.

    Transcripts are matched to cases by name, so editing critics, weights or thresholds and
    scoring again costs nothing.

    Examples:

      evalspec score suites/slack.yaml --transcripts runs/slack/20261121-101500

      evalspec score suites/slack.yaml -t transcripts.jsonl --json
    """
    configure_logging(verbose)
    raise typer.Exit(
        rescore(suite, transcripts, ReportOptions(as_json, verbose, junit, markdown, html), out)
    )


def rescore(suite_path: Path, transcripts: Path, options: ReportOptions, out: Path | None) -> int:
    """Score recorded transcripts under the suite as it is now; the exit code."""
    check_report_files(options)
    check_output_file(out, "--out")
    from evalspec.api import load_suite, load_transcripts, score

    suite = load_suite(suite_path)
    loaded = load_transcripts(transcripts)
    known = {c.name for c in suite.cases}
    kept = [t for t in loaded if t.case in known]
    dropped = sorted({t.case for t in loaded if t.case not in known})
    for name in dropped:
        _log.info("skipped transcripts of case %r: not in %s", name, suite_path)
    if dropped:
        print_error(f"skipped transcripts of cases no longer in the suite: {', '.join(dropped)}")
    report = score(suite, kept)
    write_and_show(report, options, out)
    return report.exit_code
