"""A judge held against people: its cached verdicts on labelled answers, compared per judge check.

The judge's verdicts come from its cache only (no model is called: `evalspec judge` fills it),
so a calibration report costs nothing and is the same on every machine. Per judge check: the
judge against each labeller (agreement, Cohen's kappa, confusion matrix) and, with several
labellers, Krippendorff's alpha among the people and among the people and the judge together.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalspec._scoring.judging import VERDICTS, judge_transcripts
from evalspec._scoring.labels import (
    CRITERION_VERDICTS,
    VERDICT_NAMES,
    Label,
    labels_of,
    read_labels,
)
from evalspec._scoring.types import CaseResult
from evalspec._stats.agreement import PairAgreement, krippendorff_alpha, pair_agreement
from evalspec._stats.intervals import Interval
from evalspec._suite.model import Suite
from evalspec._suite.walk import judge_checks
from evalspec._transcript import Transcript
from evalspec._util.errors import InputError


@dataclass(frozen=True)
class LabellerAgreement:
    """The judge (first rater) against one labeller (second) on the answers both rated."""

    labeller: str
    agreement: PairAgreement


@dataclass(frozen=True)
class JudgeCalibration:
    """One judge check's calibration over the labelled answers it gave a verdict on."""

    check: str
    answers: int
    """Labelled answers with a judge verdict (each counted once, however many labellers)."""
    labellers: tuple[LabellerAgreement, ...]
    people_alpha: Interval | None
    """Krippendorff's alpha among the labellers (None with one labeller, or undefined)."""
    alpha: Interval | None
    """Krippendorff's alpha among the labellers and the judge as one more rater."""


@dataclass(frozen=True)
class Calibration:
    """Every judge check's calibration, and the labels it could not use (and why)."""

    judges: tuple[JudgeCalibration, ...]
    unmatched: tuple[str, ...]
    """`line N: why` for each label no judged answer matches."""
    unjudged: tuple[str, ...]
    """`case, model, trial, check: why` for each labelled answer the judge's cache has no
    verdict on (once, however many labellers)."""

    @property
    def exit_code(self) -> int:
        """0 every label was compared; 3 some answer needs a judge run, or nothing compared."""
        return 3 if self.unjudged or not self.judges else 0


_TURN = re.compile(r"^turn \d+ ")


def calibrate_judges(
    suite: Suite,
    transcripts: Sequence[Transcript],
    labels: Sequence[Label],
    *,
    seed: int = 0,
    alphas: bool = True,
) -> Calibration:
    """Compare the judge's cached verdicts with the people's labels, per judge check
    (`alphas`: Krippendorff's alpha too, which a report leaves to `evalspec calibrate`)."""
    outcome = asyncio.run(judge_transcripts(suite, transcripts, None))
    answers = {(a.case, a.model, a.trial, a.check): a for a in outcome.answers}
    models: dict[str, set[str]] = {}
    for a in outcome.answers:
        models.setdefault(a.case, set()).add(a.model)
    unmatched: list[str] = []
    unjudged: list[str] = []
    # per check: answer key -> {rater: verdict}; the judge's verdict under rater ""
    table: dict[str, dict[tuple[str, str, int, str], dict[str, str]]] = {}
    for label in labels:
        model = label.model
        if model is None:
            known = sorted(models.get(label.case, ()))
            if len(known) > 1:
                unmatched.append(
                    f"line {label.line}: case {label.case!r} was answered by {len(known)} "
                    f"models ({', '.join(known)}): name the label's `model`"
                )
                continue
            model = known[0] if known else ""
        key = (label.case, model, label.trial, label.check)
        answer = answers.get(key)
        if answer is None:
            unmatched.append(
                f"line {label.line}: no judged answer of case {label.case!r}, model "
                f"{model or '(any)'!r}, trial {label.trial}, check {label.check!r} in the "
                "transcripts"
            )
            continue
        if answer.source == "failed" or answer.score is None:
            unjudged.append(
                f"case {label.case!r}, model {model!r}, trial {label.trial}, {label.check}: "
                f"{answer.reason}"
            )
            continue
        judged = answer.verdict or nearest_verdict(answer.score)
        if (judged in CRITERION_VERDICTS) != (label.verdict in CRITERION_VERDICTS):
            scale = "pass or fail" if judged in CRITERION_VERDICTS else ", ".join(VERDICT_NAMES)
            unmatched.append(
                f"line {label.line}: {label.check} is judged {scale}, not {label.verdict!r}"
            )
            continue
        rated = table.setdefault(_TURN.sub("", label.check), {}).setdefault(key, {})
        rated[""] = judged
        rated[label.labeller] = label.verdict
    judges = tuple(
        _calibration(check, rated, seed, alphas=alphas) for check, rated in sorted(table.items())
    )
    return Calibration(judges, tuple(unmatched), tuple(dict.fromkeys(unjudged)))


def nearest_verdict(score: float) -> str:
    """The verdict a judge's score stands for: its own for one round; for the mean of several
    rounds the nearest verdict, a tie (0.25, 0.75) going to Unsure."""
    return min(VERDICTS.items(), key=lambda kv: (abs(kv[0] - score), kv[0] != 0.5))[1]


def _calibration(
    check: str,
    rated: dict[tuple[str, str, int, str], dict[str, str]],
    seed: int,
    *,
    alphas: bool,
) -> JudgeCalibration:
    people = sorted({r for verdicts in rated.values() for r in verdicts if r})
    keys = sorted(rated)
    judged = {v for verdicts in rated.values() for v in verdicts.values()}
    names = CRITERION_VERDICTS if judged <= set(CRITERION_VERDICTS) else VERDICT_NAMES
    pairs = []
    for person in people:
        both = [rated[k] for k in keys if person in rated[k]]
        pairs.append(
            LabellerAgreement(
                person,
                pair_agreement([v[""] for v in both], [v[person] for v in both], names, seed=seed),
            )
        )
    people_alpha = alpha = None
    if alphas and len(people) > 1:
        rows = [[rated[k].get(p) for k in keys] for p in people]
        people_alpha = krippendorff_alpha(rows, names, seed=seed)
        judge_row: list[str | None] = [rated[k][""] for k in keys]
        alpha = krippendorff_alpha([*rows, judge_row], names, seed=seed)
    return JudgeCalibration(check, len(keys), tuple(pairs), people_alpha, alpha)


def interval_text(value: Interval | None) -> str:
    """An estimate with its interval, or why there is none."""
    if value is None:
        return "undefined (one verdict throughout)"
    return f"{value.estimate:.3f} ({value.confidence:.0%} CI {value.low:.3f} to {value.high:.3f})"


def report_calibration(suite: Suite, transcripts: Sequence[Transcript]) -> tuple[str, ...]:
    """What a report says of its judges' calibration: per judge check (per criterion for a
    rubric) and labeller, agreement and Cohen's kappa with its interval on the labels beside
    the suite; "uncalibrated" once when there are none. Nothing when no check is a judge."""
    if not suite.path or not judge_checks(suite):
        return ()
    try:
        path = labels_of(suite)
    except InputError as exc:
        return (f"judge calibration not measured: {exc.problems[0]}",)
    name = labels_name(suite, path)
    if not path.is_file():
        return (f"judge uncalibrated: no labels file {name}{_where(suite)}",)
    if not transcripts:
        return (f"judge calibration not measured: the run kept no transcripts to match {name}",)
    try:
        result = calibrate_judges(suite, transcripts, read_labels(path), alphas=False)
    except InputError as exc:
        return (f"judge calibration not measured: {exc.problems[0]}",)
    lines = [
        f"judge {j.check} vs {each.labeller}: agreement {each.agreement.agreement:.3f} over "
        f"{each.agreement.items}, Cohen's kappa {interval_text(each.agreement.kappa)} ({name})"
        for j in result.judges
        for each in j.labellers
    ]
    if result.unjudged:
        lines.append(
            f"judge calibration: {len(result.unjudged)} labelled answers in {name} have no "
            "cached verdict (evalspec judge fills them)"
        )
    return tuple(lines) or (f"judge uncalibrated: no label in {name} matches this run",)


def check_labels(suite: Suite) -> None:
    """Refuse, before a run or a scoring writes anything, a labels file held against the
    project's policy (a committed link in its place): InputError, exit 2."""
    if suite.path and judge_checks(suite):
        labels_of(suite)


def labels_name(suite: Suite, path: Path) -> str:
    """The labels file as a report names it: relative to the suite's folder (as the report
    names the suite), or as `--labels` gave it."""
    if suite.labels_named:
        return str(suite.labels)
    return path.relative_to(Path(suite.path).resolve().parent).as_posix()


def _where(suite: Suite) -> str:
    return "" if suite.labels else " beside the suite"


def labelled_items(suite: Suite, results: Sequence[CaseResult]) -> list[str]:
    """The item ids of the judged cases the labels beside the suite name: the transcripts a
    streamed run reads back to measure its judges' calibration (none without labels)."""
    if not suite.path or not judge_checks(suite):
        return []
    try:
        path = labels_of(suite)
        cases = {label.case for label in read_labels(path)} if path.is_file() else set()
    except InputError:
        return []
    return [r.item_id for r in results if r.case in cases]
