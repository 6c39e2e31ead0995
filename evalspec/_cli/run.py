"""`evalspec run` and `evalspec merge`: execute a plan (or combine shards), then score it."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.collector import RunCollector, paused_until_run
from evalspec._cli.common import (
    CaseOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    MarkdownOpt,
    ModelOpt,
    ReportOptions,
    ShardOpt,
    SuiteArg,
    TrialsOpt,
    VerboseOpt,
    check_output_dir,
    check_output_file,
    check_report_files,
    configure_logging,
    finish_report,
    finish_run,
    print_error,
    reports_errors,
)
from evalspec._cli.progress import LiveTally, ProgressBar
from evalspec._providers.recordings import RECORD_MODES
from evalspec._util.errors import RunError, UsageError
from evalspec._util.ray_batches import RAY_BATCH, RAY_EMBED_BATCH

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from evalspec._critics.base import Embedder
    from evalspec._plan import Plan
    from evalspec._runner.evidence import StaleTranscript
    from evalspec._runner.execute import RunOptions, RunOutcome
    from evalspec._runner.run_dir import ResumeState
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

MAX_RERUN_SHOWN = 10
"""Items a resume runs again that are named one by one; the rest are counted."""
FREEZE_EVERY = 2000
"""Finished items between two collections that then set aside every object still alive."""

RecordMode = StrEnum("RecordMode", {mode: mode for mode in RECORD_MODES})  # type: ignore[misc]
"""The CLI's choices for --record, from the one list the recordings provider accepts."""


@dataclass(frozen=True)
class RunRequest:
    """What to run: the suite, the selection, and how to use recordings."""

    suite: Path
    cases: list[str] | None = None
    models: list[str] | None = None
    trials: int | None = None
    concurrency: int | None = None
    shard: str | None = None
    record: str = "auto"
    recordings: Path | None = None
    out: Path | None = None
    resume: Path | None = None
    ray: str | None = None
    """Run on a Ray cluster: `auto` or its address."""
    ray_batch: int = RAY_BATCH
    """Items per batch sent to a Ray worker."""
    ray_embed_batch: int = RAY_EMBED_BATCH
    """Texts per batch of the cluster's embedding step (Ray Data map_batches)."""


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
    ] = RecordMode.auto,  # type: ignore[attr-defined]
    recordings: Annotated[Path | None, typer.Option(help="Recordings file to use.")] = None,
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
    configure_logging(verbose)
    options = ReportOptions(as_json, verbose, junit, markdown, html)
    raise typer.Exit(
        execute(
            RunRequest(
                suite=suite,
                cases=case,
                models=model,
                trials=trials,
                concurrency=concurrency,
                shard=shard,
                record=record.value,
                recordings=recordings,
                out=out,
                resume=resume,
                ray=ray,
                ray_batch=ray_batch,
                ray_embed_batch=ray_embed_batch,
            ),
            options,
        )
    )


def execute(req: RunRequest, report: ReportOptions | None = None) -> int:
    """Run a suite end to end; return the exit code."""
    with paused_until_run() as collector, contextlib.ExitStack() as held:
        return _execute(req, report or ReportOptions(), collector, held)


def _execute(
    req: RunRequest, report: ReportOptions, collector: RunCollector, held: contextlib.ExitStack
) -> int:
    check_report_files(report)
    check_output_dir(req.out, "--out")
    check_output_file(req.recordings, "--recordings")
    from evalspec._plan import compile_plan, parse_shard
    from evalspec._report.html_data import gc_paused
    from evalspec._report.records import report_from_results
    from evalspec._runner import RunOptions, run_plan
    from evalspec._runner.execute import model_calls, resume_of
    from evalspec._runner.run_dir import (
        completed,
        default_run_dir,
        read_manifest,
        refuse_used_out,
        run_dir_lock,
    )
    from evalspec._scoring.scorer import check_judge_caches
    from evalspec._scoring.stream import CHUNK, StreamingScorer
    from evalspec._suite.validate import load_suite

    suite = load_suite(req.suite)  # the collector is off until the run starts (below)
    check_judge_caches(suite)
    plan = compile_plan(
        suite,
        cases=req.cases,
        models=req.models,
        trials=req.trials,
        shard=parse_shard(req.shard) if req.shard else None,
    )
    # The suite and plan live until the process ends: keep the collector from rescanning them
    # at every collection while the run makes transcripts (a 50,000-item run spent seconds so).
    collector.start_run()
    if req.resume and not req.resume.is_dir():
        raise UsageError(f"--resume {req.resume}: no such run directory")
    if req.resume:
        manifest = read_manifest(req.resume) or {}
        if manifest.get("suite") not in (None, suite.name):
            raise UsageError(
                f"--resume {req.resume}: that run is of suite {manifest['suite']!r} "
                f"({manifest.get('path', '?')}), not {suite.name!r}; resume it with its own suite"
            )
    if req.out and not req.resume:
        refuse_used_out(req.out)
    run_dir = req.resume or req.out or default_run_dir(suite)
    options = RunOptions(
        record=req.record,
        concurrency=req.concurrency,
        run_dir=run_dir,
        resume=bool(req.resume),
        recordings=req.recordings,
        selection={
            "cases": req.cases,
            "models": req.models,
            "trials": req.trials,
            "shard": req.shard,
        },
        keep_transcripts=False,  # scored as they finish (below), then forgotten
    )
    interactive = sys.stderr.isatty() and not report.as_json
    progress = ProgressBar(
        len(plan.items), enabled=interactive, tally=LiveTally(suite) if interactive else None
    )
    calls = model_calls(suite, options)  # one call policy (and rate limit) for run and judge
    order = {it.id: i for i, it in enumerate(plan.items)}
    embedder, chunk = _cluster_embedder(suite, req) if req.ray else (None, CHUNK)
    scoring = StreamingScorer(suite, order=order, calls=calls, embedder=embedder, chunk=chunk)
    held.enter_context(run_dir_lock(run_dir))  # before reading what is done: no item twice
    resumed = resume_of(plan, options)
    for t in resumed.kept.values():
        scoring.add(t)
    _say_rerun(resumed.stale)

    def finished(t: Transcript) -> None:
        progress.advance(t)
        scoring.add(t)
        if scoring.count % FREEZE_EVERY == 0:
            # Results are kept for the report: collect what the last items left, then take
            # the rest out of later collections, which would otherwise rescan every result
            # kept so far (about 20 full passes over a growing list in a 50,000-item run).
            collector.set_aside()

    started = time.perf_counter()
    try:
        with progress:
            if req.ray:
                outcome = _run_on_ray(plan, options, req, finished, resumed)
            else:
                outcome = run_plan(plan, options, on_done=finished, calls=calls, resumed=resumed)
    except KeyboardInterrupt:
        done = len(completed(run_dir))
        sys.stderr.write(
            f"interrupted: {done} of {len(plan.items)} items finished and saved in {run_dir}\n"
            f"resume with: evalspec run {req.suite} --resume {run_dir}\n"
        )
        return 130
    except RunError as exc:
        done = len(completed(run_dir))
        raise RunError(
            f"{exc}\n{done} of {len(plan.items)} items finished and saved in "
            f"{run_dir}; fix the cause, then: evalspec run {req.suite} "
            f"--resume {run_dir}"
        ) from None
    if outcome.missing:
        for label in outcome.missing:
            print_error(f"no recorded answer: {label}")
        raise RunError(
            f"{len(outcome.missing)} request(s) have no recorded answer and --record "
            f"{req.record} may not call the model; run with --record auto and an API key"
        )
    counts = outcome.counts
    # Items and model requests are different counts (an item is a conversation of one or
    # more requests): each is named.
    items = [f"{outcome.resumed} resumed"] if outcome.resumed else []
    if outcome.rerun:
        items.append(f"{outcome.rerun} re-run: a tool answers differently now")
    note = (f"({', '.join(items)}) " if items else "") + (
        f"· model requests: {counts.get('replayed', 0)} replayed, {counts.get('called', 0)} called"
    )
    with gc_paused():  # summaries and report files: plain data, no cycles to look for
        results = report_from_results(suite, scoring.finish(), scoring.tally)
        return finish_report(results, run_dir, report, started=started, note=note)


def _say_rerun(stale: Sequence[StaleTranscript]) -> None:
    """Name the finished items a resume runs again, and why (the first few of them)."""
    for s in stale[:MAX_RERUN_SHOWN]:
        print_error(f"re-run: {s.label}: {s.why[0]}")
    if len(stale) > MAX_RERUN_SHOWN:
        print_error(f"re-run: {len(stale) - MAX_RERUN_SHOWN} more items whose tools answer anew")


def _run_on_ray(
    plan: Plan,
    options: RunOptions,
    req: RunRequest,
    on_done: Callable[[Transcript], None],
    resumed: ResumeState,
) -> RunOutcome:
    """The run on a Ray cluster; a clear usage error when the ray extra is not installed."""
    try:
        from evalspec._runner.ray_cluster import ClusterOptions, run_plan_on_ray
    except ImportError:
        raise UsageError(_NO_RAY) from None
    cluster = ClusterOptions(address=req.ray or "auto", batch_size=req.ray_batch)
    return run_plan_on_ray(plan, options, cluster, on_done=on_done, resumed=resumed)


def _cluster_embedder(suite: Suite, req: RunRequest) -> tuple[Embedder, int]:
    """Scoring's embedder for a Ray run (texts the cache lacks are embedded on the cluster),
    and how many transcripts to score together."""
    try:
        from evalspec._scoring.ray_embeddings import (
            SCORING_CHUNK,
            ClusterEmbedder,
            ClusterEmbedOptions,
        )
    except ImportError:
        raise UsageError(_NO_RAY) from None
    options = ClusterEmbedOptions(batch_size=req.ray_embed_batch)
    return ClusterEmbedder.for_suite(suite, req.ray or "auto", options), SCORING_CHUNK


_NO_RAY = "--ray needs Ray: pip install 'evalspec-yaml[ray]' (or run without --ray)"


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
    from evalspec._runner.merge import merge_runs

    configure_logging(verbose)
    check_output_dir(out, "--out")
    merged = merge_runs(run_dirs, out, suite=suite)
    if merged.missing:
        print_error(
            f"warning: {merged.missing} of {merged.planned} planned items are in none of the run "
            "directories (a shard not run or not finished?)"
        )
    options = ReportOptions(as_json=as_json, verbose=verbose)
    raise typer.Exit(finish_run(merged.suite, merged.transcripts, out, options, note=merged.note))
