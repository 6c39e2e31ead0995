"""`evalspec run` and `evalspec merge`: options in, `evalspec.api.run`/`merge` called, results
printed."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import (
    CaseOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    LabelsOpt,
    MarkdownOpt,
    ModelOpt,
    ReportOptions,
    ShardOpt,
    SuiteArg,
    TrialsOpt,
    VerboseOpt,
    configure_logging,
    print_error,
    print_run,
    reports_errors,
)
from evalspec._cli.flags import exit_code
from evalspec._util.ray_batches import RAY_BATCH, RAY_EMBED_BATCH
from evalspec.api import RECORD_MODES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evalspec._report.progress import ProgressBar
    from evalspec.records import RunRequest, RunStart, StaleTranscript, Transcript

MAX_RERUN_SHOWN = 10
"""Items a resume runs again that are named one by one; the rest are counted."""

# Built from the one list of modes: mypy reads neither this call nor the members it makes.
RecordMode = StrEnum("RecordMode", {mode: mode for mode in RECORD_MODES})  # type: ignore[misc]
"""The CLI's choices for --record, from the one list the recordings provider accepts."""


@reports_errors
def run(
    suite: SuiteArg,
    case: CaseOpt = None,
    model: ModelOpt = None,
    trials: TrialsOpt = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Requests in flight.")] = None,
    shard: ShardOpt = None,
    record: Annotated[
        RecordMode,
        typer.Option(
            help="auto: replay recordings, call the model for the rest; offline: replay only; "
            "record: call the model for everything."
        ),
    ] = RecordMode.auto,  # type: ignore[attr-defined]  # a member of the StrEnum built above
    recordings: Annotated[Path | None, typer.Option(help="Recordings file to use.")] = None,
    labels: LabelsOpt = None,
    out: Annotated[
        Path | None, typer.Option(help="Run directory (default runs/<suite>/<time>).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Finish an interrupted run in this directory.")
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            help="Run the items on a Ray cluster: auto (the cluster of this machine) or its "
            "address. Needs the ray extra.",
            metavar="auto|ADDRESS",
        ),
    ] = None,
    ray_batch: Annotated[
        int, typer.Option(min=1, help="Items per batch sent to one Ray worker.")
    ] = RAY_BATCH,
    ray_embed_batch: Annotated[
        int,
        typer.Option(
            min=1,
            help="Texts per batch when a Ray run embeds texts for similarity critics on the "
            "cluster (one model replica per GPU, else per CPU).",
        ),
    ] = RAY_EMBED_BATCH,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    html: HtmlOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run a suite: validate, plan, call the models (or replay recordings), score, report.

    Exit codes: 0 all passed (warnings allowed), 1 some failed, 2 invalid suite or usage,
    3 could not run (endpoint unreachable, missing API key, missing recordings offline).

    Examples:

      evalspec run suites/slack.yaml

      evalspec run suites/slack.yaml --case 'post to*' --trials 3 --verbose

      evalspec run suites/slack.yaml --record offline --junit results.xml

      evalspec run suites/weather.yaml --resume runs/weather/20261121-101500
    """
    from evalspec.records import RunRequest

    configure_logging(verbose)
    options = ReportOptions(as_json, verbose, junit, markdown, html)
    request = RunRequest(
        suite=suite,
        cases=case,
        models=model,
        trials=trials,
        concurrency=concurrency,
        shard=shard,
        record=next(mode for mode in RECORD_MODES if mode == record.value),
        recordings=recordings,
        labels=labels,
        out=out,
        resume=resume,
        ray=ray,
        ray_batch=ray_batch,
        ray_embed_batch=ray_embed_batch,
    )
    raise typer.Exit(execute(request, options))


def execute(request: RunRequest, options: ReportOptions) -> int:
    """`evalspec.api.run` with the console's progress, its results printed; the exit code."""
    from evalspec.api import run as run_suite
    from evalspec.errors import RecordingsMissing, RunInterrupted

    interactive = sys.stderr.isatty() and not options.as_json
    try:
        result = run_suite(request, reports=options.files(), progress=_ConsoleProgress(interactive))
    except RunInterrupted as stopped:
        sys.stderr.write(
            f"{stopped}\nresume with: evalspec run {request.suite} --resume {stopped.run_dir}\n"
        )
        return exit_code(stopped)
    except RecordingsMissing as missing:
        for label in missing.labels:
            print_error(f"no recorded answer: {label}")
        raise
    return print_run(
        result.report, result.run_dir, options, seconds=result.seconds, note=result.note
    )


class _ConsoleProgress:
    """The run's progress on stderr: the items a resume runs again, then a progress bar with a
    live pass/warn/fail tally when stderr is a terminal."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self.bar: ProgressBar | None = None

    def start(self, run: RunStart) -> None:
        from evalspec._report.progress import LiveTally, ProgressBar

        _say_rerun(run.stale)
        tally = LiveTally(run.suite) if self.interactive else None
        self.bar = ProgressBar(run.total, enabled=self.interactive, tally=tally)
        self.bar.__enter__()

    def advance(self, transcript: Transcript) -> None:
        if self.bar is not None:
            self.bar.advance(transcript)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _say_rerun(stale: Sequence[StaleTranscript]) -> None:
    """Name the finished items a resume runs again, and why (the first few of them)."""
    for s in stale[:MAX_RERUN_SHOWN]:
        print_error(f"re-run: {s.label}: {s.why[0]}")
    if len(stale) > MAX_RERUN_SHOWN:
        print_error(f"re-run: {len(stale) - MAX_RERUN_SHOWN} more items whose tools answer anew")


@reports_errors
def merge(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Run directories of the shards.", show_default=False)
    ],
    out: Annotated[Path, typer.Option(help="Run directory to write the merged run to.")],
    suite: Annotated[
        Path | None, typer.Option(help="Suite file (default: the one named in the runs).")
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Merge shard runs (`run --shard i/n`) into one run directory, then score it.

    Transcripts are combined by item id (a later directory wins); runs of different suites are
    refused. Writes transcripts.jsonl and results.json to --out; exit codes as for `run`.

    Example:

      evalspec merge runs/shard1 runs/shard2 --out runs/all
    """
    from evalspec.api import merge as merge_runs

    configure_logging(verbose)
    merged = merge_runs(run_dirs, out, suite=suite)
    if merged.missing:
        print_error(
            f"warning: {merged.missing} of {merged.planned} planned items are in none of the run "
            "directories (a shard not run or not finished?)"
        )
    options = ReportOptions(as_json=as_json, verbose=verbose)
    raise typer.Exit(print_run(merged.report, out, options, note=merged.note))
