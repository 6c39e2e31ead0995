"""What `evalspec run` and `evalspec score` do, between parsing arguments and exiting."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.errors import RunError, UsageError


@dataclass
class RunRequest:
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
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
    as_json: bool = False
    verbose: bool = False


def execute(req: RunRequest) -> int:
    """Run a suite end to end; return the exit code."""
    from evalspec.plan import compile_plan, parse_shard
    from evalspec.runner import (
        RunOptions,
        completed,
        default_run_dir,
        read_manifest,
        run_plan,
    )
    from evalspec.spec.validate import load_suite

    suite = load_suite(req.suite)
    plan = compile_plan(
        suite,
        cases=req.cases,
        models=req.models,
        trials=req.trials,
        shard=parse_shard(req.shard) if req.shard else None,
    )
    if req.resume and not req.resume.is_dir():
        raise UsageError(f"--resume {req.resume}: no such run directory")
    if req.resume:
        manifest = read_manifest(req.resume) or {}
        if manifest.get("suite") not in (None, suite.name):
            raise UsageError(
                f"--resume {req.resume}: that run is of suite {manifest['suite']!r} "
                f"({manifest.get('path', '?')}), not {suite.name!r}; resume it with its own suite"
            )
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
    )
    interactive = sys.stderr.isatty() and not req.as_json
    progress = _Progress(
        len(plan.items), enabled=interactive, tally=Tally(suite) if interactive else None
    )
    started = time.perf_counter()
    try:
        with progress:
            outcome = run_plan(plan, options, on_done=progress.advance)
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
            sys.stderr.write(f"no recorded answer: {label}\n")
        raise RunError(
            f"{len(outcome.missing)} request(s) have no recorded answer and --record "
            f"{req.record} may not call the model; run with --record auto and an API key"
        )
    counts = outcome.counts
    note = (
        f"({counts.get('replayed', 0)} replayed, {counts.get('called', 0)} called"
        + (f", {outcome.resumed} resumed" if outcome.resumed else "")
        + ")"
    )
    return finish_run(
        suite,
        outcome.transcripts,
        run_dir,
        as_json=req.as_json,
        verbose=req.verbose,
        junit=req.junit,
        markdown=req.markdown,
        html=req.html,
        started=started,
        note=note,
    )


def finish_run(
    suite,
    transcripts,
    run_dir: Path,
    *,
    as_json: bool = False,
    verbose: bool = False,
    junit: Path | None = None,
    markdown: Path | None = None,
    html: Path | None = None,
    started: float | None = None,
    note: str = "",
) -> int:
    """Score a run's transcripts, write results.json (and other reports), print, exit code."""
    from evalspec.api import score

    report = score(suite, transcripts)
    write_reports(
        report, results=run_dir / "results.json", junit=junit, markdown=markdown, html=html
    )
    show(report, as_json=as_json, verbose=verbose)
    if not as_json:
        took = f" in {time.perf_counter() - started:.2f}s" if started is not None else ""
        sys.stdout.write(
            f"{len(transcripts)} items{took}"
            + (f" {note}" if note else "")
            + f" · results: {run_dir / 'results.json'}\n"
        )
    return report.exit_code


def rescore(
    suite_path: Path,
    transcripts: Path,
    *,
    as_json: bool,
    out: Path | None,
    verbose: bool,
    junit: Path | None = None,
    markdown: Path | None = None,
    html: Path | None = None,
) -> int:
    """Score recorded transcripts under the suite as it is now."""
    from evalspec.api import score
    from evalspec.spec.validate import load_suite
    from evalspec.transcript import load_transcripts

    suite = load_suite(suite_path)
    loaded = load_transcripts(transcripts)
    known = {c.name for c in suite.cases}
    kept = [t for t in loaded if t.case in known]
    dropped = sorted({t.case for t in loaded if t.case not in known})
    if dropped:
        sys.stderr.write(
            f"skipped transcripts of cases no longer in the suite: {', '.join(dropped)}\n"
        )
    report = score(suite, kept)
    write_reports(report, results=out, junit=junit, markdown=markdown, html=html)
    show(report, as_json=as_json, verbose=verbose)
    return report.exit_code


def show(report: Any, *, as_json: bool, verbose: bool) -> None:
    """Results on stdout: JSON for tools, or the console tables for people."""
    if as_json:
        sys.stdout.write(
            json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
        )
        return
    from evalspec.report.console import print_report

    print_report(report, verbose=verbose)


def write_reports(
    report: Any,
    *,
    results: Path | None = None,
    junit: Path | None = None,
    markdown: Path | None = None,
    html: Path | None = None,
) -> None:
    """Write each report asked for: results.json, JUnit XML, Markdown, HTML."""
    if results:
        from evalspec.report.json_report import write_json

        write_json(report, results)
    if junit:
        from evalspec.report.junit import write_junit

        write_junit(report, junit)
    if markdown:
        from evalspec.report.markdown import write_markdown

        write_markdown(report, markdown)
    if html:
        from evalspec.report.html import write_html

        write_html(report, html)


class Tally:
    """Pass/warn/fail so far, scoring each transcript as it finishes when that is cheap.

    A transcript whose scoring needs sentence embeddings or an LLM judge is counted as
    `later` (scored with the whole batch at the end), so the event loop never waits for a
    model to load or a judge to answer.
    """

    def __init__(self, suite) -> None:
        from evalspec.scoring.scorer import Scorer

        self.scorer = Scorer(suite)
        self._judged = {
            c.name
            for c in suite.cases
            if any(check.kind == "judge" for check in c.expect.final_answer)
        }
        self.counts = {"pass": 0, "warn": 0, "fail": 0, "error": 0, "later": 0}

    def add(self, transcript) -> str:
        """Count one finished transcript; return the bucket it went to."""
        if transcript.error:
            status = "error"
        elif transcript.case in self._judged or self.scorer.needs_embeddings([transcript]):
            status = "later"
        else:
            try:
                status = self.scorer.score(transcript).status
            except Exception:  # progress must never break a run; the final scoring reports it
                status = "later"
        self.counts[status] = self.counts.get(status, 0) + 1
        return status

    def summary(self) -> str:
        c = self.counts
        text = f"{c['pass']} pass · {c['warn']} warn · {c['fail']} fail"
        if c["error"]:
            text += f" · {c['error']} errors"
        if c["later"]:
            text += f" · {c['later']} scored at the end"
        return text


class _Progress:
    """A progress bar on stderr for interactive runs: done/total, pass/warn/fail so far, ETA."""

    def __init__(self, total: int, enabled: bool, tally: Tally | None = None):
        self.total = total
        self.enabled = enabled and total > 0
        self.tally = tally
        self.errors = 0
        self._bar = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("run", total=self.total, status="")
        return self

    def advance(self, transcript) -> None:
        if transcript.error:
            self.errors += 1
        if self._bar is None:
            return
        if self.tally is not None:
            self.tally.add(transcript)
            status = self.tally.summary()
        else:
            status = f"{self.errors} errors" if self.errors else ""
        self._bar.update(self._task, advance=1, status=status)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
