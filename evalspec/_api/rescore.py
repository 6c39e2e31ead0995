"""`rescore` and `judge`: recorded transcripts from anywhere, scored or judged under the suite.

`rescore` never calls a model (an LLM judge reads its cache); `judge` is the one call that asks
the suite's judge, to fill that cache.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._util.errors import UsageError
from evalspec._util.outputs import check_output_file
from evalspec._util.redaction import secret_scope

if TYPE_CHECKING:
    from evalspec._report.files import ReportFiles
    from evalspec._report.records import Report
    from evalspec._runner.evidence import StaleTranscript
    from evalspec._scoring.judging import JudgeOutcome
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

EXIT_UNVERIFIED = 3
"""Exit code when evidence is missing or stale: transcripts that are stale, of no case or
model of the suite, or none at all to score or judge."""


@dataclass(frozen=True)
class Adopted:
    """Imported transcripts scored as the suite's only model (they named another label)."""

    label: str
    """The importer's label, e.g. `otel`."""
    model: str
    """The suite's one model."""
    count: int


@dataclass(frozen=True)
class Rescored:
    """Transcripts scored under the suite as it is now, and what was left out or is stale."""

    report: Report | None
    """None when no transcript is of a chosen case and model of the suite: nothing scored."""
    read: int
    """Transcripts read."""
    scored: int = 0
    """Transcripts of a chosen case and model of the suite: those in the report."""
    skipped: tuple[str, ...] = ()
    """Transcripts of cases or models the suite does not have, one line per kind."""
    stale: tuple[StaleTranscript, ...] = ()
    """Transcripts that answer requests the suite no longer makes (scored anyway)."""
    adopted: Adopted | None = None
    allow_stale: bool = False

    @property
    def exit_code(self) -> int:
        """The report's code; 3 when nothing was scored, or when some transcripts were skipped
        or stale and that was not allowed."""
        if self.report is None:
            return EXIT_UNVERIFIED
        if (self.skipped or self.stale) and not self.allow_stale:
            return EXIT_UNVERIFIED
        return self.report.exit_code


def rescore(
    suite: str | Path,
    transcripts: str | Path,
    *,
    cases: list[str] | None = None,
    allow_stale: bool = False,
    reports: ReportFiles | None = None,
    labels: str | Path | None = None,
) -> Rescored:
    """Score recorded transcripts (a transcripts.jsonl or a run directory) under the suite as
    it is now, without calling any model, and write the report files asked for.

    `cases` (patterns or tags, as `run` reads them) scores only the cases they choose: the
    report holds those alone. Transcripts of other cases or models are named in `skipped`;
    stale ones in `stale`, scored anyway. `labels`: the people's verdicts the report's
    calibration reads, in place of the suite's own."""
    from evalspec._compare.diff import unmatched_transcripts
    from evalspec._plan import select_cases
    from evalspec._report.files import ReportFiles, write_reports
    from evalspec._report.records import build_report
    from evalspec._runner.evidence import stale_transcripts
    from evalspec._scoring.calibration import check_labels
    from evalspec._scoring.labels import with_labels
    from evalspec._suite.validate import load_suite
    from evalspec._transcript import load_transcripts

    files = reports or ReportFiles()
    for path, option in (
        (files.junit, "junit"),
        (files.markdown, "markdown"),
        (files.html, "html"),
        (files.results, "results"),
    ):
        check_output_file(path, option)
    suite_path = Path(suite)
    loaded_suite = with_labels(load_suite(suite_path), Path(labels) if labels else None)
    check_labels(loaded_suite)
    chosen = select_cases(loaded_suite, cases)
    loaded, adopted = adopt_imported(load_transcripts(Path(transcripts)), loaded_suite)
    skipped = unmatched_transcripts(loaded, [loaded_suite], suite_path.as_posix())
    if cases:
        loaded_suite = replace(loaded_suite, cases=tuple(chosen))
    names = {c.name for c in chosen}
    models = {m.name for m in loaded_suite.models}
    kept = [t for t in loaded if t.case in names and t.model in models]
    if not kept:
        return Rescored(None, len(loaded), 0, tuple(skipped), (), adopted, allow_stale)
    stale = stale_transcripts(loaded_suite, kept)
    report = build_report(loaded_suite, kept)
    write_reports(report, files)
    return Rescored(
        report, len(loaded), len(kept), tuple(skipped), tuple(stale), adopted, allow_stale
    )


def adopt_imported(
    transcripts: list[Transcript], suite: Suite
) -> tuple[list[Transcript], Adopted | None]:
    """Imported transcripts under the suite's one model, when they name no model of it.

    An importer labels what it reads by default (`otel`, a StableToolBench answer folder's
    name), not by the model a suite names; with one model in the suite and one such label
    among the imports, they can only be that model's answers. Several labels are several
    models: those stay as they are, and are reported as not matching.
    """
    if len(suite.models) != 1:
        return transcripts, None
    only = suite.models[0].name
    foreign = Counter(
        t.model for t in transcripts if t.model != only and t.source.startswith("import:")
    )
    if len(foreign) != 1 or any(t.model == only for t in transcripts):
        return transcripts, None  # several models, or the suite's own already there
    ((label, count),) = foreign.items()
    from msgspec.structs import replace as changed

    adopted = [changed(t, model=only) if t.model == label else t for t in transcripts]
    return adopted, Adopted(label, only, count)


@dataclass(frozen=True)
class Judged:
    """The suite's LLM judge asked about recorded answers; its cache now holds the verdicts."""

    outcome: JudgeOutcome | None
    """Every answer's verdict and where it came from; None when no transcript is of the
    suite (nothing judged)."""
    skipped: tuple[str, ...] = field(default=())
    """Transcripts of cases or models the suite does not have, one line per kind."""

    @property
    def exit_code(self) -> int:
        """0 every answer has a verdict; 3 some could not be had, or nothing was judged."""
        if self.outcome is None or self.outcome.failed:
            return EXIT_UNVERIFIED
        return 0


@secret_scope()  # the judge's keys are scrubbed from what it writes, then forgotten
def judge(
    suite: str | Path,
    transcripts: str | Path | Sequence[str | Path],
    *,
    concurrency: int | None = None,
) -> Judged:
    """Ask the suite's LLM judge for every verdict its cache lacks (the one call that may ask),
    through the suite's call settings; verdicts already cached are not asked again.

    `transcripts`: one file or run, or several (every one judged). UsageError when the suite
    has no judge check, or when one transcript is in two of the files (its answer would count
    twice)."""
    import asyncio
    import os

    from evalspec._compare.diff import unmatched_transcripts
    from evalspec._providers.calls import ModelCalls, register_suite_secrets
    from evalspec._scoring.judging import judge_transcripts
    from evalspec._scoring.scorer import check_judge_caches
    from evalspec._suite.endpoints import refuse_keys_in_clear
    from evalspec._suite.validate import load_suite
    from evalspec._suite.walk import judge_checks

    suite_path = Path(suite)
    loaded_suite = load_suite(suite_path)
    if not judge_checks(loaded_suite):
        raise UsageError(
            f"{suite_path} has no judge check: add `judge: {{model: ..., criteria: ...}}` under "
            "a case's or a turn's expect.final_answer (evalspec import stabletoolbench --judge "
            "MODEL does)"
        )
    check_judge_caches(loaded_suite)
    loaded = load_every(transcripts)
    skipped = tuple(unmatched_transcripts(loaded, [loaded_suite], suite_path.as_posix()))
    models = {m.name for m in loaded_suite.models}
    cases = {c.name for c in loaded_suite.cases}
    kept = [t for t in loaded if t.case in cases and t.model in models]
    if not kept:
        return Judged(None, skipped)
    refuse_keys_in_clear(loaded_suite, os.environ)
    register_suite_secrets(loaded_suite)
    calls = ModelCalls.for_run(loaded_suite.run, loaded_suite.models)
    outcome = asyncio.run(judge_transcripts(loaded_suite, kept, calls, concurrency=concurrency))
    return Judged(outcome, skipped)


def load_every(sources: str | Path | Sequence[str | Path]) -> list[Transcript]:
    """The transcripts of every source, in order; the same transcript in two of them is refused
    (SoPR would count its answer twice, and which of two answers to judge is the user's call)."""
    from evalspec._transcript import load_transcripts

    paths = [Path(sources)] if isinstance(sources, str | Path) else [Path(s) for s in sources]
    seen: dict[str, Path] = {}
    out: list[Transcript] = []
    for path in paths:
        for t in load_transcripts(path):
            first = seen.setdefault(t.item_id, path)
            if first != path:
                raise UsageError(
                    f"transcript {t.item_id!r} is in both {first} and {path}: judge each file "
                    "on its own, or combine them first with `evalspec merge` (one answer each)"
                )
            out.append(t)
    return out
