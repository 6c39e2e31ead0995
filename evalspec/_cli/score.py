"""`evalspec score`: re-score recorded transcripts under the suite as it is now."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import (
    CaseOpt,
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

if TYPE_CHECKING:
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

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
        rescore(suite, transcripts, options, out, allow_skipped=allow_skipped, cases=case)
    )


def rescore(
    suite_path: Path,
    transcripts: Path,
    options: ReportOptions,
    out: Path | None,
    *,
    allow_skipped: bool = False,
    cases: list[str] | None = None,
) -> int:
    """Score recorded transcripts under the suite as it is now; the exit code.

    Transcripts of cases or model labels the suite does not have, and stale ones, are named on
    stderr and make the exit code 3 (unless allowed); when none is left, nothing is scored and
    the code is 3. `cases` (--case patterns, as `run` reads them) scores only the cases they
    choose: the report holds those cases alone, and transcripts of the others are left out.
    """
    check_report_files(options)
    check_output_file(out, "--out")
    from evalspec._plan import select_cases
    from evalspec._review.diff import EXIT_UNVERIFIED, unmatched_transcripts
    from evalspec.api import load_suite, load_transcripts, score, stale_transcripts

    suite = load_suite(suite_path)
    chosen = select_cases(suite, cases)
    loaded = adopt_imported(load_transcripts(transcripts), suite)
    skipped = unmatched_transcripts(loaded, [suite], suite_path.as_posix())
    if cases:
        suite = replace(suite, cases=tuple(chosen))
    names = {c.name for c in chosen}
    models = {m.name for m in suite.models}
    kept = [t for t in loaded if t.case in names and t.model in models]
    level = "warning" if allow_skipped and kept else "error"
    for problem in skipped:
        _log.info("skipped transcripts: %s", problem)
        print_error(f"{level}: skipped: {problem}")
    if not kept:
        print_error(
            f"error: nothing to score: none of the {len(loaded)} transcripts in {transcripts} "
            f"is of a {'case chosen by --case' if cases else 'case'} and model of {suite_path}"
        )
        return EXIT_UNVERIFIED
    stale = stale_transcripts(suite, kept)
    for s in stale:
        print_error(f"{level}: stale: {s.label}: {'; '.join(s.why)}")
    if stale:
        print_error(
            f"{level}: {len(stale)} of {len(kept)} transcripts answer requests {suite_path} no "
            "longer makes: re-run them (evalspec run ... --resume re-runs exactly those)"
            + ("" if allow_skipped else ", or accept them with --allow-stale")
        )
    report = score(suite, kept)
    write_and_show(report, options, out)
    if (skipped or stale) and not allow_skipped:
        return EXIT_UNVERIFIED
    return report.exit_code


def adopt_imported(transcripts: list[Transcript], suite: Suite) -> list[Transcript]:
    """Imported transcripts under the suite's one model, when they name no model of it.

    An importer labels what it reads by default (`otel`, a StableToolBench answer folder's
    name), not by the model a suite names; with one model in the suite and one such label
    among the imports, they can only be that model's answers. Said on stderr. Several labels
    are several models: those stay as they are, and are reported as not matching.
    """
    if len(suite.models) != 1:
        return transcripts
    only = suite.models[0].name
    foreign = Counter(
        t.model for t in transcripts if t.model != only and t.source.startswith("import:")
    )
    if len(foreign) != 1 or any(t.model == only for t in transcripts):
        return transcripts  # several models, or the suite's own already there: no guessing
    ((label, count),) = foreign.items()
    print_error(
        f"note: {count} imported transcript{'s' if count != 1 else ''} labelled {label!r} "
        f"scored as the suite's only model {only!r}"
    )
    from msgspec.structs import replace as changed

    return [changed(t, model=only) if t.model == label else t for t in transcripts]
