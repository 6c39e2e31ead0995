"""`run` and `merge`: a suite run end to end (resumable, local or on Ray), or shards combined.

What `evalspec run` does, as a function: check the resume manifest and the run directory, run
the plan while scoring each transcript as it finishes, keep the garbage collector light while
items run, and write results.json and the report files. It prints nothing: what a caller
shows (a progress bar, the items a resume runs again) comes through `RunProgress`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalspec._util.errors import RecordingsMissing, RunError, RunInterrupted, UsageError
from evalspec._util.outputs import check_output_dir, check_output_file
from evalspec._util.ray_batches import RAY_BATCH, RAY_EMBED_BATCH
from evalspec._util.redaction import secret_scope

if TYPE_CHECKING:
    from evalspec._api.collector import RunCollector
    from evalspec._critics.base import Embedder
    from evalspec._plan import Plan
    from evalspec._providers.base import RecordMode
    from evalspec._report.files import ReportFiles
    from evalspec._report.records import Report
    from evalspec._runner.evidence import StaleTranscript
    from evalspec._runner.execute import RunOptions, RunOutcome
    from evalspec._runner.run_dir import ResumeState
    from evalspec._scoring.types import CaseResult
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

FREEZE_EVERY = 2000
"""Finished items between two collections that then set aside every object still alive."""


@dataclass(frozen=True)
class RunRequest:
    """What to run: the suite, the selection, and how to use recordings."""

    suite: Path
    cases: list[str] | None = None
    models: list[str] | None = None
    trials: int | None = None
    concurrency: int | None = None
    shard: str | None = None
    """Only shard i of n, written `i/n`."""
    record: RecordMode = "auto"
    """auto (replay, call the model for the rest), offline (replay only) or record."""
    recordings: Path | None = None
    labels: Path | None = None
    """The people's verdicts the report's calibration reads, in place of the suite's own."""
    out: Path | None = None
    """Run directory (default runs/<suite>/<time>); a used one is refused."""
    resume: Path | None = None
    """Finish the interrupted run in this directory."""
    ray: str | None = None
    """Run on a Ray cluster: `auto` or its address."""
    ray_batch: int = RAY_BATCH
    """Items per batch sent to a Ray worker."""
    ray_embed_batch: int = RAY_EMBED_BATCH
    """Texts per batch of the cluster's embedding step (Ray Data map_batches)."""


@dataclass(frozen=True)
class RunStart:
    """What a run is about to do, once its plan is made and its run directory is read."""

    suite: Suite
    total: int
    """Items in the plan, those a resume keeps included."""
    run_dir: Path
    stale: Sequence[StaleTranscript] = ()
    """Finished items a resume runs again, because a tool answers differently now."""


class RunProgress(Protocol):
    """What a caller sees of a run while it goes (the CLI's progress bar and live tally)."""

    def start(self, run: RunStart) -> None:
        """The items are about to run."""

    def advance(self, transcript: Transcript) -> None:
        """One item finished (in the order they finish)."""

    def stop(self) -> None:
        """The run ended, finished or not."""


@dataclass(frozen=True)
class RunResult:
    """A finished run: its scored report, where it was written, and what was replayed."""

    report: Report
    run_dir: Path
    counts: dict[str, int] = field(default_factory=dict)
    """Model requests by how they ended (`replayed`, `called`, `shared`, `failed`, `missing`),
    and `sent`: the HTTP requests the live ones took, retries included."""
    resumed: int = 0
    """Items a resume kept from the run directory."""
    rerun: int = 0
    """Finished items run again because a tool answers differently now."""
    seconds: float = 0.0
    """From the first item started to the report files written."""
    note: str = ""
    """One line on what was resumed, re-run, replayed and called."""

    @property
    def results_file(self) -> Path:
        """The run's results.json."""
        return self.run_dir / "results.json"

    @property
    def exit_code(self) -> int:
        """0 all passed (warnings allowed), 1 some failed."""
        return self.report.exit_code


def run(
    request: RunRequest,
    *,
    reports: ReportFiles | None = None,
    progress: RunProgress | None = None,
) -> RunResult:
    """Run a suite: plan, call the models (or replay recordings), score, write results.json in
    the run directory and the report files asked for (`reports.results` is ignored: a run's
    results always go to its run directory).

    Raises SpecError (invalid suite), UsageError (bad request), RunError (could not run;
    what finished is saved and `resume` picks it up), RecordingsMissing, RunInterrupted."""
    from evalspec._api.collector import paused_until_run
    from evalspec._report.files import ReportFiles

    # The run's secrets (model keys, header values) are scrubbed from everything it writes,
    # results and reports included, and are the run's alone: forgotten when it returns.
    with secret_scope(), paused_until_run() as collector, contextlib.ExitStack() as held:
        return _run(request, reports or ReportFiles(), progress, collector, held)


def _run(
    req: RunRequest,
    reports: ReportFiles,
    progress: RunProgress | None,
    collector: RunCollector,
    held: contextlib.ExitStack,
) -> RunResult:
    check_output_file(reports.junit, "junit")
    check_output_file(reports.markdown, "markdown")
    check_output_file(reports.html, "html")
    check_output_dir(req.out, "out")
    check_output_file(req.recordings, "recordings")
    from evalspec._plan import compile_plan, parse_shard
    from evalspec._report.html_data import gc_paused
    from evalspec._report.records import report_from_results
    from evalspec._runner import RunOptions, run_plan
    from evalspec._runner.execute import model_calls, resume_of
    from evalspec._runner.run_dir import (
        RUN_DIRECTORY,
        Selection,
        completed,
        default_run_dir,
        read_manifest,
        refuse_used_out,
        run_dir_lock,
        transcripts_of,
    )
    from evalspec._scoring.calibration import check_labels, labelled_items
    from evalspec._scoring.labels import with_labels
    from evalspec._scoring.scorer import check_judge_caches
    from evalspec._scoring.stream import CHUNK, StreamingScorer
    from evalspec._suite.validate import load_suite
    from evalspec._util.project import named

    # the collector is off until the run starts (below)
    suite = with_labels(load_suite(req.suite), req.labels)
    check_judge_caches(suite)
    check_labels(suite)
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
        raise UsageError(f"resume={req.resume}: no such run directory", params=["resume"])
    if req.resume:
        manifest = read_manifest(req.resume)
        if manifest is not None and manifest.suite != suite.name:
            raise UsageError(
                f"resume={req.resume}: that run is of suite {manifest.suite!r} "
                f"({manifest.path or '?'}), not {suite.name!r}; resume it with its own suite",
                params=["resume"],
            )
    if req.out and not req.resume:
        refuse_used_out(req.out)
    given = req.resume or req.out
    run_dir = named(given, RUN_DIRECTORY) if given else default_run_dir(suite)
    options = RunOptions(
        record=req.record,
        concurrency=req.concurrency,
        run_dir=run_dir,
        resume=bool(req.resume),
        recordings=req.recordings,
        selection=Selection(cases=req.cases, models=req.models, trials=req.trials, shard=req.shard),
        keep_transcripts=False,  # scored as they finish (below), then forgotten
    )
    calls = model_calls(suite, options)  # one call policy (and rate limit) for run and judge
    order = {it.id: i for i, it in enumerate(plan.items)}
    embedder, chunk = _cluster_embedder(suite, req) if req.ray else (None, CHUNK)
    scoring = StreamingScorer(suite, order=order, calls=calls, embedder=embedder, chunk=chunk)
    held.enter_context(run_dir_lock(run_dir))  # before reading what is done: no item twice
    resumed = resume_of(plan, options)
    for t in resumed.kept.values():
        scoring.add(t)

    def finished(t: Transcript) -> None:
        if progress is not None:
            progress.advance(t)
        scoring.add(t)
        if scoring.count % FREEZE_EVERY == 0:
            # Results are kept for the report: collect what the last items left, then take
            # the rest out of later collections, which would otherwise rescan every result
            # kept so far (about 20 full passes over a growing list in a 50,000-item run).
            collector.set_aside()

    started = time.perf_counter()
    try:
        if progress is not None:
            progress.start(RunStart(suite, len(plan.items), run_dir, resumed.stale))
        try:
            if req.ray:
                outcome = _run_on_ray(plan, options, req, finished, resumed)
            else:
                outcome = run_plan(plan, options, on_done=finished, calls=calls, resumed=resumed)
        finally:
            if progress is not None:
                progress.stop()
    except KeyboardInterrupt:
        raise RunInterrupted(len(completed(run_dir)), len(plan.items), run_dir) from None
    except RunError as exc:
        done = len(completed(run_dir))
        raise RunError(
            f"{exc}\n{done} of {len(plan.items)} items finished and saved in "
            f"{run_dir}; fix the cause, then: evalspec run {req.suite} "
            f"--resume {run_dir}",
            params=exc.params,
        ) from None
    if outcome.missing:
        raise RecordingsMissing(outcome.missing, req.record)
    counts = outcome.counts
    # Items and model requests are different counts (an item is a conversation of one or
    # more requests): each is named.
    items = [f"{outcome.resumed} resumed"] if outcome.resumed else []
    if outcome.rerun:
        items.append(f"{outcome.rerun} re-run: a tool answers differently now")
    note = (f"({', '.join(items)}) " if items else "") + f"· {requests_text(counts)}"
    with gc_paused():  # summaries and report files: plain data, no cycles to look for
        results = scoring.finish()
        if asked := scoring.scorer.judge_requests:
            note += f" · judge requests: {asked} sent"
        shown = transcripts_of(run_dir, _conversations_shown(suite, results))
        judged = transcripts_of(run_dir, labelled_items(suite, results))
        report = report_from_results(
            suite, results, scoring.tally, transcripts=shown, judged=judged
        )
        _write(report, reports, run_dir)
    return RunResult(
        report,
        run_dir,
        counts=dict(counts),
        resumed=outcome.resumed,
        rerun=outcome.rerun,
        seconds=time.perf_counter() - started,
        note=note,
    )


MAX_CONVERSATIONS_SHOWN = 50
"""Conversations whose calls a run's console and Markdown show, read back after the run."""


def _conversations_shown(suite: Suite, results: Sequence[CaseResult]) -> list[str]:
    """The item ids of the conversations that did not pass (their lowest-scoring trial, the one
    the reports show by role): what the model called and the tools answered is read back for
    them alone, as the run keeps no transcript in memory."""
    multi = {c.name for c in suite.cases if c.multi_turn}
    if not multi:  # single-turn suites show no conversation: their results are not read
        return []
    worst: dict[tuple[str, str], CaseResult] = {}
    for r in results:
        if r.case in multi and r.status != "pass":
            key = (r.case, r.model)
            if key not in worst or r.score < worst[key].score:
                worst[key] = r
    return [r.item_id for r in list(worst.values())[:MAX_CONVERSATIONS_SHOWN]]


def requests_text(counts: dict[str, int]) -> str:
    """The run's model requests, each counted once by how it ended, then the HTTP requests the
    endpoints received for them: a request given up after 5 tries is 1 failed and 5 sent."""
    said = [f"{counts.get(k, 0)} {k}" for k in ("replayed", "called", "failed")]
    if counts.get("shared"):
        said.append(f"{counts['shared']} shared with an identical request in flight")
    return f"model requests: {', '.join(said)} · {counts.get('sent', 0)} sent (retries included)"


def _write(report: Report, reports: ReportFiles, run_dir: Path) -> None:
    """results.json in the run directory, and the report files asked for."""
    from dataclasses import replace

    from evalspec._report.files import write_reports
    from evalspec._runner.run_dir import run_file

    write_reports(report, replace(reports, results=run_file(run_dir, "results.json")))


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
        raise UsageError(_NO_RAY, params=["ray"]) from None
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
        raise UsageError(_NO_RAY, params=["ray"]) from None
    options = ClusterEmbedOptions(batch_size=req.ray_embed_batch)
    return ClusterEmbedder.for_suite(suite, req.ray or "auto", options), SCORING_CHUNK


_NO_RAY = "ray= needs Ray: pip install 'evalspec-yaml[ray]' (or run without ray=)"


@dataclass(frozen=True)
class Merged:
    """Shard runs combined into one run directory, scored."""

    report: Report
    run_dir: Path
    suite: Suite
    missing: int
    """Planned items in none of the shards' directories (a shard not run or not finished)."""
    planned: int
    note: str = ""
    """What was combined, e.g. duplicates resolved."""

    @property
    def exit_code(self) -> int:
        """0 all passed (warnings allowed), 1 some failed."""
        return self.report.exit_code


def merge(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    suite: Path | None = None,
    reports: ReportFiles | None = None,
) -> Merged:
    """Merge shard runs (`run --shard i/n`) into the new run directory `out`, then score it.

    Transcripts are combined by item id (a later directory wins); runs of different suites are
    refused. Writes transcripts.jsonl, run.json and results.json to `out`."""
    from evalspec._report.files import ReportFiles
    from evalspec._report.records import build_report
    from evalspec._runner.merge import merge_runs

    check_output_dir(out, "out")
    merged = merge_runs(run_dirs, out, suite=suite)
    report = build_report(merged.suite, merged.transcripts)
    _write(report, reports or ReportFiles(), out)
    return Merged(report, out, merged.suite, merged.missing, merged.planned, merged.note)
