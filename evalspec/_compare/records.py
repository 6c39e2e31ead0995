"""The comparison's records: a side, a column, a case's change, a model's noise, the whole.

Plain frozen dataclasses and what follows from their own fields (counts, the gate's verdict, the
exit code, their JSON form); how they are computed is in the other modules of this package.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from evalspec._compare.words import count, p_text
from evalspec._scoring.confusion import ConfusionCell
from evalspec._scoring.results_file import ResultsFile
from evalspec._scoring.trials import ModelSummary
from evalspec._scoring.types import CaseResult, Row, Status
from evalspec._stats import Interval, PairedResult, is_flaky
from evalspec._suite.model import Gate

if TYPE_CHECKING:
    from evalspec._compare.recordings_check import RecordingsChange
    from evalspec._suite.mcp_drift import ServerDrift

Kind = Literal[
    "regression", "worse", "better", "changed", "added", "removed", "missing", "unchanged"
]
KIND_ORDER: tuple[Kind, ...] = (
    "regression",
    "worse",
    "better",
    "changed",
    "added",
    "missing",
    "removed",
    "unchanged",
)
"""Display order: what a reviewer must look at first comes first."""

STATUS_RANK: dict[str, int] = {
    "error": 0,
    "user_fault": 0,
    "fail": 1,
    "warn": 2,
    "pass": 3,
    "captured": -1,
}
"""A capture case is judged by nothing: a case turned into one is worse, whatever it was."""
NOT_JUDGED = ("error", "user_fault")
"""Trials that say nothing of the model: a run that failed, a simulated user at fault."""
PASSING = ("pass", "warn")
EPS = 1e-9

EXIT_OK = 0
EXIT_REGRESSION = 1
"""The gate failed: by default, a case that passed now fails, on evidence that still answers
the head's requests (see the suite's `gate:`)."""
EXIT_UNVERIFIED = 3
"""Some case needs a run or a re-run, transcripts matched nothing, or nothing was scored."""
EXIT_SECURITY = 4
"""An endpoint, API-key variable or header changed: where keys go is different."""

NEW_SUITE_NOTE = "the suite does not exist in the base version: every case is new"


@dataclass(frozen=True)
class Side:
    """One case × model on one side of a comparison: trials already combined."""

    status: Status
    score: float
    reason: str
    results: tuple[CaseResult, ...] = ()


def side_counts(side: Side) -> tuple[int, int]:
    """(trials passed, trials run without error); a side without trial results counts as one
    trial with its status."""
    if not side.results:
        return int(side.status in PASSING), int(side.status not in NOT_JUDGED)
    ran = [r for r in side.results if r.status not in NOT_JUDGED]
    return sum(r.status in PASSING for r in ran), len(ran)


def side_flaky(side: Side | None) -> bool:
    return side is not None and is_flaky(*side_counts(side))


@dataclass(frozen=True)
class Column:
    """One model of one run, as a reader sees it: a label and a cell per case."""

    label: str
    run: str
    model: str
    run_index: int = 0
    cells: dict[str, Side] = field(default_factory=dict)
    summary: ModelSummary | None = None
    """The run's per-model summary (pass rate, tokens, latency, cost), if the file has one."""


@dataclass(frozen=True)
class RunData:
    """A results file and the label it is shown under (the path as given)."""

    label: str
    data: ResultsFile


def case_order(columns: Sequence[Column]) -> list[str]:
    """Every case of every column, in the order they first appear."""
    seen: dict[str, None] = {}
    for col in columns:
        for case in col.cells:
            seen.setdefault(case, None)
    return list(seen)


@dataclass(frozen=True)
class Spend:
    """Tokens and cost of one side, over the cases both sides scored."""

    tokens: int
    cost: float | None


@dataclass(frozen=True)
class FigureChange:
    """One robustness figure of one model, paired by case between the two sides."""

    figure: str
    """`recovery`, `duplicates`, `injection` or `told` (evalspec._scoring.robustness)."""
    result: PairedResult
    moved: tuple[str, ...] = ()
    """`case 0/1 → 1/1`: the cases whose rate of the event differs between the sides."""

    def to_dict(self) -> dict[str, Any]:
        return {"figure": self.figure, **self.result.to_dict(), "moved": list(self.moved)}


@dataclass(frozen=True)
class ModelNoise:
    """The paired comparison of one model (or one pair of columns)."""

    model: str
    pass_rate: PairedResult
    score: Interval | None
    """after − before of the per-case mean scores, paired t interval."""
    known_flaky: tuple[str, ...] = ()
    """Cases left out because the suite marks them flaky."""
    flaky: tuple[str, ...] = ()
    """Cases whose trials disagree on either side."""
    before_spend: Spend | None = None
    after_spend: Spend | None = None
    confusion: tuple[tuple[ConfusionCell, ...], tuple[ConfusionCell, ...]] | None = None
    """Tool confusion before and after, for two tool variants of one model (compare)."""
    moved: tuple[tuple[Kind, str], ...] = ()
    """(kind, case) of each case that moved, for two tool variants in a diff or review (a
    comparison of runs lists them as changes)."""
    robustness: tuple[FigureChange, ...] = ()
    """The robustness figures both sides have, each paired by case (none without faults)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "pass_rate": self.pass_rate.to_dict(),
            "score_difference": self.score.to_dict() if self.score else None,
            "known_flaky": list(self.known_flaky),
            "flaky": list(self.flaky),
            "before_spend": vars(self.before_spend) if self.before_spend else None,
            "after_spend": vars(self.after_spend) if self.after_spend else None,
            "robustness": [f.to_dict() for f in self.robustness],
        }
        if self.confusion is not None:
            before, after = (msgspec.to_builtins(side) for side in self.confusion)
            out["tool_confusion"] = {"before": before, "after": after}
        if self.moved:
            out["moved"] = [{"kind": kind, "case": case} for kind, case in self.moved]
        return out


@dataclass(frozen=True)
class RowChange:
    """One explanation row that differs between the sides (None: the row exists on one side)."""

    trial: int
    field: str
    call: int | None
    before: Row | None
    after: Row | None

    @property
    def flipped(self) -> bool:
        """The critic's verdict (matched or not) changed."""
        return (
            self.before is not None
            and self.after is not None
            and self.before.match != self.after.match
        )

    @property
    def verdict_only(self) -> bool:
        """The verdict flipped while the score stayed: a stricter threshold, for example."""
        return (
            self.flipped
            and self.before is not None
            and self.after is not None
            and abs(self.before.score - self.after.score) <= EPS
        )


@dataclass(frozen=True)
class CaseChange:
    case: str
    model: str
    kind: Kind
    before: Side | None
    after: Side | None
    rows: tuple[RowChange, ...] = ()
    rerun: bool = False
    """The head's requests differ from the ones the recorded transcript answered."""
    needs_run: bool = False
    """No recorded transcript answers this case (or one of its trials) yet."""
    stale: tuple[str, ...] = ()
    """Why the recorded evidence no longer answers the head's requests."""
    named: tuple[str, ...] = ()
    """The suite differences that affect this case: `fail_threshold 0.85 -> 0.97`, ..."""
    rerecorded: bool = False
    """The head side is scored on the head's own recordings (the base's were stale, or the
    pull request re-recorded them)."""
    known_flaky: bool = False
    """The suite (its base version, in a diff) marks the case `flaky: true`: never gates."""
    causes: tuple[str, ...] = ()
    """Which of `named` moved the verdict, proven by re-scoring with it alone (attribution.py);
    empty when the verdict did not move or nothing of the suite changed."""
    counterfactuals: tuple[tuple[str, str], ...] = ()
    """(what was applied to the base suite, the verdict it gives): the proof of `causes`."""
    trials_differ: str = ""
    """Why the sides are not compared: they hold different trials (`3 trials → 1 trial`).
    Such a case is `changed`, never better or worse, and stays out of the noise test."""

    @property
    def gating(self) -> bool:
        """A pass became a fail on evidence that still answers the question asked, in a case
        not known to be flaky."""
        return self.kind == "regression" and not self.rerun and not self.known_flaky

    @property
    def unverified(self) -> bool:
        """The head side has no evidence that answers its requests."""
        return self.rerun or self.needs_run


@dataclass(frozen=True)
class Comparison:
    """What a change does to the scores: per case and model, before → after and why; the
    noise test per model, the gate's verdict and the exit code (diff, compare, review)."""

    title: str
    before_label: str
    after_label: str
    changes: tuple[CaseChange, ...]
    notes: tuple[str, ...] = ()
    added_label: str = "added"
    removed_label: str = "removed"
    columns: tuple[Column, ...] = ()
    """compare: every (run, model) column, for the model × case matrix."""
    security: tuple[str, ...] = ()
    """Security-relevant changes: endpoints, API-key variables, headers."""
    skipped: tuple[str, ...] = ()
    """Transcripts that matched no case and model, grouped with what did not match."""
    suite_wide: tuple[str, ...] = ()
    """Changes that touch every case (run settings, models)."""
    suite_changes: tuple[str, ...] = ()
    """Other changes to the suite that no case names: a tool's answers no recording reached,
    a tool no case offers, the description, a change to the file's text alone."""
    scored: int | None = None
    """How many transcripts were scored (None: not a re-scoring, as in `compare`)."""
    allow_stale: bool = False
    """Accept unverified cases and skipped transcripts (exit 0 instead of 3 for them)."""
    gate: Gate = field(default_factory=Gate)
    """When regressions fail the comparison (the suite's `gate:`, or --gate)."""
    noise: tuple[ModelNoise, ...] = ()
    """Per model: the paired change in pass rate, significant or within noise."""
    gate_notes: tuple[str, ...] = ()
    """What the change does to the gate itself (it applies only once merged)."""
    recordings: tuple[RecordingsChange, ...] = ()
    """review: the suite's recordings file, when it differs from the base's."""
    tool_drift: tuple[ServerDrift, ...] = ()
    """review: MCP servers whose tool list in the suite's lock file differs from the base's."""
    variants: tuple[ModelNoise, ...] = ()
    """diff, review: each model's tool variants paired in the head (its first against each)."""

    @property
    def false_requests(self) -> int:
        """Recorded requests the pull request added or changed that do not give their key."""
        return sum(r.unverified for r in self.recordings)

    @property
    def unverified(self) -> int:
        return sum(c.unverified for c in self.changes)

    @property
    def gate_failures(self) -> list[str]:
        """Why the gate fails this comparison; empty when it passes."""
        return gate_failures(self.gate, self.noise, self.changes)

    @property
    def exit_code(self) -> int:
        """Security first, then the gate, then missing evidence (`evalspec review --help`)."""
        if self.security:
            return EXIT_SECURITY
        if self.gate_failures:
            return EXIT_REGRESSION
        if self.scored == 0 or self.false_requests:  # never accepted by --allow-stale
            return EXIT_UNVERIFIED
        if not self.allow_stale and (self.unverified or self.skipped):
            return EXIT_UNVERIFIED
        return EXIT_OK

    def counts(self) -> dict[str, int]:
        counts = Counter(c.kind for c in self.changes)
        out: dict[str, int] = {k: counts.get(k, 0) for k in KIND_ORDER}
        out["rerun"] = sum(c.rerun for c in self.changes)
        out["needs_run"] = sum(c.needs_run for c in self.changes)
        out["security"] = len(self.security)
        return out

    def summary(self) -> str:
        """One line: `1 regression, 2 better, 5 unchanged, 1 re-run needed`."""
        n = self.counts()
        labels = {
            "regression": ("regression", "regressions"),
            "worse": ("worse", "worse"),
            "better": ("better", "better"),
            "changed": ("changed", "changed"),
            "added": (self.added_label, self.added_label),
            "missing": ("not run", "not run"),
            "removed": (self.removed_label, self.removed_label),
            "unchanged": ("unchanged", "unchanged"),
        }
        parts = []
        if n["security"]:
            s = n["security"]
            parts.append(f"{s} security-relevant change{'s' if s != 1 else ''}")
        parts += [f"{n[k]} {labels[k][n[k] != 1]}" for k in KIND_ORDER if n[k]]
        if n["needs_run"]:
            parts.append(f"{n['needs_run']} need{'s' if n['needs_run'] == 1 else ''} a run")
        if n["rerun"]:
            parts.append(f"{n['rerun']} re-run needed")
        if self.skipped:
            parts.append("transcripts skipped")
        if self.suite_changes:
            k = len(self.suite_changes)
            parts.append(f"{k} other suite change{'s' if k != 1 else ''}")
        if self.false_requests:
            k = self.false_requests
            parts.append(f"{k} recorded request{'s' if k != 1 else ''} not matching its key")
        elif self.recordings:
            parts.append("recordings changed")
        if self.tool_drift:
            k = len(self.tool_drift)
            parts.append(f"{k} MCP tool list{'s' if k != 1 else ''} changed")
        return ", ".join(parts) or "nothing to compare"

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "before": self.before_label,
            "after": self.after_label,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "security": list(self.security),
            "skipped": list(self.skipped),
            "suite_wide": list(self.suite_wide),
            "suite_changes": list(self.suite_changes),
            "scored": self.scored,
            "notes": list(self.notes),
            "gate": dict(vars(self.gate)),
            "gate_failures": self.gate_failures,
            "gate_notes": list(self.gate_notes),
            "recordings": [r.to_dict() for r in self.recordings],
            "tool_drift": [d.to_dict() for d in self.tool_drift],
            "variants": [v.to_dict() for v in self.variants],
            "noise": [m.to_dict() for m in self.noise],
            "changes": [_change_dict(c) for c in self.changes],
            **({"matrix": matrix_dict(self)} if self.columns else {}),
        }


def _side_dict(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {"status": side.status, "score": side.score, "reason": side.reason}


def _change_dict(c: CaseChange) -> dict[str, Any]:
    return {
        "case": c.case,
        "model": c.model,
        "kind": c.kind,
        "before": _side_dict(c.before),
        "after": _side_dict(c.after),
        "rerun_needed": c.rerun,
        "needs_run": c.needs_run,
        "stale": list(c.stale),
        "named": list(c.named),
        "causes": list(c.causes),
        "counterfactuals": [{"applied": a, "verdict": v} for a, v in c.counterfactuals],
        "rerecorded": c.rerecorded,
        "known_flaky": c.known_flaky,
        "trials_differ": c.trials_differ,
        "flaky": [side_flaky(c.before), side_flaky(c.after)],
        "rows": [
            {
                "trial": r.trial,
                "field": r.field,
                "call": r.call,
                "before": msgspec.structs.asdict(r.before) if r.before else None,
                "after": msgspec.structs.asdict(r.after) if r.after else None,
            }
            for r in c.rows
        ],
    }


def gate_failures(
    gate: Gate, noise: Sequence[ModelNoise], changes: Sequence[CaseChange]
) -> list[str]:
    """Why the comparison fails under `gate` (empty: nothing to stop for)."""
    out = []
    if gate.mode == "any_regression":
        gating = [c for c in changes if c.gating]
        if gating:
            n = len(gating)
            out.append(f"{count(n, 'case')} that passed now fail{'s' if n == 1 else ''}")
    for m in noise:
        pr = m.pass_rate
        if pr.cases == 0:
            continue
        if gate.mode == "significant_drop" and pr.drop:
            out.append(
                f"{m.model}: {pr.rate} {pr.before:.1%} → {pr.after:.1%}, a significant drop "
                f"({p_text(pr.p_value)})"
            )
        if gate.min_pass_rate is not None and pr.after < gate.min_pass_rate:
            out.append(
                f"{m.model}: {pr.rate} {pr.after:.1%} is below min_pass_rate "
                f"{gate.min_pass_rate:.1%}"
            )
        if gate.max_drop is not None and pr.before - pr.after > gate.max_drop + 1e-12:
            out.append(
                f"{m.model}: {pr.rate} fell {pr.before - pr.after:.1%} "
                f"({pr.before:.1%} → {pr.after:.1%}), more than max_drop {gate.max_drop:.1%}"
            )
    return out


def matrix_rows(comparison: Comparison) -> list[tuple[str, Kind, list[Side | None]]]:
    """The model × case matrix: (case, its most pressing change, a cell per column).

    Ordered as the changes are: regressions first.
    """
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    kind_of: dict[str, Kind] = {}
    for c in comparison.changes:
        if c.case not in kind_of or rank[c.kind] < rank[kind_of[c.case]]:
            kind_of[c.case] = c.kind
    cases = case_order(comparison.columns)
    order = {case: i for i, case in enumerate(cases)}
    cases.sort(key=lambda case: (rank[kind_of.get(case, "unchanged")], order[case]))
    return [
        (case, kind_of.get(case, "unchanged"), [col.cells.get(case) for col in comparison.columns])
        for case in cases
    ]


def matrix_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "columns": [{"label": c.label, "run": c.run, "model": c.model} for c in comparison.columns],
        "rows": [
            {"case": case, "change": kind, "cells": [_side_dict(s) for s in cells]}
            for case, kind, cells in matrix_rows(comparison)
        ],
    }
