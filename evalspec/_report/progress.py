"""The progress bar of an interactive run, with pass/warn/fail counts as items finish."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalspec._suite.walk import judge_checks

if TYPE_CHECKING:
    from rich.progress import Progress

    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript


class LiveTally:
    """Pass/warn/fail so far, scoring each transcript as it finishes when that is cheap.

    A transcript whose scoring needs sentence embeddings or an LLM judge is counted as
    `later` (scored with the whole batch at the end), so the event loop never waits for a
    model to load or a judge to answer.
    """

    def __init__(self, suite: Suite) -> None:
        from evalspec._scoring.scorer import Scorer

        self.scorer = Scorer(suite)
        self._judged = {c.name for c in suite.cases if judge_checks(c)}
        self.counts = {
            "pass": 0,
            "warn": 0,
            "fail": 0,
            "error": 0,
            "user_fault": 0,
            "captured": 0,
            "later": 0,
        }

    def add(self, transcript: Transcript) -> str:
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
        if c["captured"]:
            text += f" · {c['captured']} captured"
        if c["user_fault"]:
            text += f" · {c['user_fault']} user faults"
        if c["later"]:
            text += f" · {c['later']} scored at the end"
        return text


class ProgressBar:
    """A progress bar on stderr for interactive runs: done/total, pass/warn/fail so far, ETA."""

    def __init__(self, total: int, enabled: bool, tally: LiveTally | None = None):
        self.total = total
        self.enabled = enabled and total > 0
        self.tally = tally
        self.errors = 0
        self._bar: Progress | None = None

    def __enter__(self) -> ProgressBar:
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
                TextColumn("{task.fields[status]}", markup=False),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("run", total=self.total, status="")
        return self

    def advance(self, transcript: Transcript) -> None:
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

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
