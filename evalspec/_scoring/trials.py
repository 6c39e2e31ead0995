"""Combine trials of a case, and cases of a model, into the figures a report shows.

pass@k is the chance that at least one of k trials passes, pass^k that all k pass; both use
the unbiased estimators over n recorded trials with c passes (HumanEval's for pass@k, the
tau-bench one for pass^k). A trial passes when its status is pass or warn.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import comb

import msgspec

from evalspec._scoring.confusion import ConfusionCell, count_picks, ranked
from evalspec._scoring.robustness import Robustness, RobustnessTally
from evalspec._scoring.scorer import band
from evalspec._scoring.spool import SpooledResults
from evalspec._scoring.types import CaseResult, Status
from evalspec._stats import DEFAULT_CONFIDENCE, Interval, clustered_rate, is_flaky, mean_interval
from evalspec._suite.model import Case, ModelSpec, Suite
from evalspec._util.records import Count


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k trials drawn from n passes)."""
    if k > n or n == 0:
        return float(c > 0)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all of k trials drawn from n pass)."""
    if k > n or n == 0:
        return float(n > 0 and c == n)
    return comb(c, k) / comb(n, k)


_PASSING = ("pass", "warn")


def _passed(r: CaseResult) -> bool:
    return r.status in _PASSING


@dataclass(frozen=True, slots=True)
class CaseSummary:
    case: str
    model: str
    status: Status
    score: float
    """Mean score over trials."""
    std: float
    trials: int
    passed: int
    pass_at_k: float
    pass_hat_k: float
    reason: str
    results: Sequence[CaseResult]
    """Its trials (a run's are read from its results on disk when iterated)."""
    flaky: bool = False
    """Some, not all, of two or more trials passed (see evalspec._stats.flaky)."""


def _pstdev(values: Sequence[float], mean: float) -> float:
    """Population standard deviation in floats (fsum keeps it accurate): statistics.pstdev
    works in exact fractions, 6 s for 50,000 cases x 5 trials where this takes a fraction."""
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / len(values))


def combine_trials(
    case: Case, results: Sequence[CaseResult], kept: Sequence[CaseResult] | None = None
) -> CaseSummary:
    """Apply the case's pass rule (all, any, majority, mean) to its trials; the summary keeps
    `kept` (the same trials, read again when needed) if given, else `results`."""
    if len(results) == 1 and results[0].status != "user_fault":
        return _one_trial(case, results[0], tuple(results) if kept is None else kept)
    judged = [r for r in results if r.status != "user_fault"]
    if not judged and results:  # every trial spoiled by its simulated user
        return _user_fault(case, results, kept)
    n = len(judged)
    c = sum(1 for r in judged if r.status in _PASSING)
    scores = [r.score for r in judged]
    # One trial (most cases): its score is the mean, as fmean would say, at a tenth the cost.
    mean = float(scores[0]) if n == 1 else statistics.fmean(scores) if scores else 0.0
    std = _pstdev(scores, mean) if n > 1 else 0.0
    errors = [r for r in judged if r.status == "error"]
    if errors and len(errors) == n:
        status: Status = "error"
    elif case.capture is not None:  # a capture case: recorded, never judged
        status = "captured"
    elif case.pass_rule == "mean":
        status = band(mean, case.rubric)
    else:
        ok = {"all": c == n, "any": c >= 1, "majority": c * 2 > n}[case.pass_rule]
        warned = any(r.status == "warn" for r in results)
        status = ("warn" if warned else "pass") if ok else "fail"
    if n == 1:
        reason = judged[0].reason
    else:
        worst = min(judged, key=lambda r: r.score)
        reason = f"{c}/{n} trials passed (rule: {case.pass_rule})" + (
            "" if c == n else f"; worst: {worst.reason}"
        )
    if len(judged) < len(results):
        spoiled = len(results) - len(judged)
        reason += f" ({spoiled} more trial{'s' if spoiled > 1 else ''} not counted: the "
        reason += "simulated user was at fault)"
    return CaseSummary(
        case.name,
        results[0].model if results else "",
        status,
        mean,
        std,
        n,
        c,
        pass_at_k(n, c, n),
        pass_hat_k(n, c, n),
        reason,
        tuple(results) if kept is None else kept,
        is_flaky(c, n - len(errors)),
    )


def _one_trial(case: Case, r: CaseResult, kept: Sequence[CaseResult]) -> CaseSummary:
    """`combine_trials` of one judged trial (most cases): every rule and statistic of one
    trial is that trial's, so none of them is computed."""
    passed = r.status in _PASSING
    if r.status == "error":
        status: Status = "error"
    elif case.capture is not None:
        status = "captured"
    elif case.pass_rule == "mean":
        status = band(float(r.score), case.rubric)
    else:
        status = ("warn" if r.status == "warn" else "pass") if passed else "fail"
    p = float(passed)
    return CaseSummary(
        case.name,
        r.model,
        status,
        float(r.score),
        0.0,
        1,
        int(passed),
        p,
        p,
        r.reason,
        kept,
        False,
    )


def _user_fault(
    case: Case, results: Sequence[CaseResult], kept: Sequence[CaseResult] | None
) -> CaseSummary:
    """A case whose every trial the simulated user spoiled: not the model's pass or fail."""
    n = len(results)
    reason = results[0].reason if n == 1 else f"all {n} trials: {results[0].reason}"
    return CaseSummary(
        case.name,
        results[0].model,
        "user_fault",
        0.0,
        0.0,
        n,
        0,
        0.0,
        0.0,
        reason,
        tuple(results) if kept is None else kept,
    )


class SimulatedUserCost(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the simulated users of one model's conversations spent: not in the model's own
    tokens, cost or budgets, which judge the model under test."""

    models: tuple[str, ...]
    """The entries of `models:` that played the user."""
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    cost: float | None = None
    """From the playing models' `price:`; None when one of them has none."""


class ModelSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One model's run, summarised: an entry of results.json's `models`, as written."""

    model: str
    cases: Count = 0
    passed: Count = 0
    warned: Count = 0
    failed: Count = 0
    errors: Count = 0
    mean_score: float = 0.0
    std_score: float = 0.0
    pass_at_1: float = 0.0
    tokens: Count = 0
    latency_s: float = 0.0
    k: Count = 1
    """Trials per case (the most any case had)."""
    pass_at_k: float = 0.0
    """Mean over cases of P(at least one of k trials passes)."""
    pass_hat_k: float = 0.0
    """Mean over cases of P(all k trials pass)."""
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    cost: float | None = None
    """From the model's `price:`; None when the suite gives none."""
    pass_rate_ci: Interval | None = None
    """Cases passed (pass or warn, under each case's pass rule) over cases: Wilson."""
    pass_at_1_ci: Interval | None = None
    """Trials passed over trials: Wilson, clustered by case."""
    mean_score_ci: Interval | None = None
    """Mean of per-case mean scores: Student's t over cases (None below two cases)."""
    flaky: Count = 0
    """Cases whose trials disagree."""
    user_faults: Count | msgspec.UnsetType = msgspec.UNSET
    """Cases whose every trial the simulated user spoiled (status `user_fault`): left out of
    the pass rates, the mean score and their intervals, which judge the model. Absent when
    there is none (results.json keeps evalspec 1.0's layout)."""
    over_budget: tuple[str, ...] = ()
    """Why this model's run is over the suite's budget (empty: within it, or no budget)."""
    simulated_user: SimulatedUserCost | msgspec.UnsetType = msgspec.UNSET
    """The simulated users' tokens and cost (absent when no case has a simulated user)."""
    tool_confusion: tuple[ConfusionCell, ...] = ()
    """Which tool was called where which was expected, over every trial, with counts (right
    picks included; "" for no call): which tool descriptions collide."""
    robustness: Robustness | msgspec.UnsetType = msgspec.UNSET
    """Recovery, duplicate side effects, injection success, told the user, with intervals
    (absent when no trial met a fault, a side effect or an injection)."""
    variant: str | msgspec.UnsetType = msgspec.UNSET
    """The version of the suite's tools this row ran with (`variants:`); absent without."""
    variant_of: str | msgspec.UnsetType = msgspec.UNSET
    """The model's own name, which `model` suffixes with `@<variant>`; absent without."""

    @property
    def spoiled(self) -> int:
        """How many cases the simulated users spoiled (`user_faults`, 0 when absent)."""
        return 0 if isinstance(self.user_faults, msgspec.UnsetType) else self.user_faults


def summarize(
    suite: Suite,
    results: Sequence[CaseResult],
    usage: dict[str, tuple[int, float]] | None = None,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[list[CaseSummary], list[ModelSummary]]:
    """Per (case, model) summaries in suite order, and one summary per model with intervals.

    Intervals treat the case as the unit and its trials as repeated measures (evalspec._stats).
    Each result is read once: a run's results on disk are decoded case by case, and each case
    summary keeps its trials where they are.
    """
    tallies = {m.name: _ModelTally() for m in suite.models}
    if isinstance(results, SpooledResults):
        try:
            for case, group, kept in _spooled_groups(suite, results):
                combined = combine_trials(case, group, kept)
                # The spool counted the picks of every case but a capture case's; one that is
                # judged after all (every trial an error) counts its own, read whole.
                whole = kept if case.name in results.captured else None
                tallies[group[0].model].add(combined, group, whole)
            for model, picks in results.picks.items():
                if model in tallies:
                    tallies[model].picks += picks
        except _NotInPlanOrder:
            tallies = {m.name: _ModelTally() for m in suite.models}
            results = list(results)
    if not isinstance(results, SpooledResults):
        for case, group in _groups(suite, results):
            tallies[group[0].model].add(combine_trials(case, group), group, group)
    cases = [c for m in suite.models for c in tallies[m.name].cases]
    models = [
        summary
        for m in suite.models
        if (summary := tallies[m.name].summary(m, usage, confidence)) is not None
    ]
    return cases, models


def _groups(suite: Suite, results: Sequence[CaseResult]) -> Iterator[tuple[Case, list[CaseResult]]]:
    """Each (case, model)'s trials in trial order, models in suite order, then cases."""
    by_key: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in results:
        by_key[(r.case, r.model)].append(r)
    for model in suite.models:
        for case in suite.cases:
            group = sorted(by_key.get((case.name, model.name), []), key=lambda r: r.trial)
            if group:
                yield case, group


class _NotInPlanOrder(Exception):
    """A spool whose results are not grouped as a plan lists its items."""


def _spooled_groups(
    suite: Suite, results: SpooledResults
) -> Iterator[tuple[Case, list[CaseResult], Sequence[CaseResult]]]:
    """Each (case, model)'s trials from a spool in plan order (a case's items together, each
    model's trials together), cases in suite order, with a lazy view of them to keep.
    _NotInPlanOrder if the spool is not so ordered."""
    index = {c.name: i for i, c in enumerate(suite.cases)}
    models = {m.name for m in suite.models}
    last, seen = -1, set[str]()
    run: list[tuple[int, CaseResult]] = []

    def done() -> tuple[Case, list[CaseResult], Sequence[CaseResult]]:
        if len(run) == 1:  # one trial (most cases)
            return suite.cases[last], [run[0][1]], results.view(range(run[0][0], run[0][0] + 1))
        ordered = sorted(run, key=lambda pr: pr[1].trial)
        group = [r for _, r in ordered]
        places = [i for i, _ in ordered]
        if places == list(range(places[0], places[-1] + 1)):
            return suite.cases[last], group, results.view(range(places[0], places[-1] + 1))
        return suite.cases[last], group, results.view(places)

    for i, r in enumerate(results.heads()):
        at = index.get(r.case)
        if at is None or r.model not in models:
            continue  # a case or model the suite lacks: no summary, as by key
        if run and (at, r.model) == (last, run[0][1].model):
            run.append((i, r))
            continue
        if run:
            yield done()
        if at < last or (at == last and r.model in seen):
            raise _NotInPlanOrder
        seen = seen if at == last else set()
        seen.add(r.model)
        last, run = at, [(i, r)]
    if run:
        yield done()


class _ModelTally:
    """One model's case summaries and the counts over their trials, added case by case."""

    def __init__(self) -> None:
        self.cases: list[CaseSummary] = []
        self.every: list[CaseSummary] = []
        """Judged cases (a capture case is recorded, not judged: it counts in no rate)."""
        self.trials = 0
        self.trials_passed = 0
        self.picks: Counter[tuple[str, str]] = Counter()
        self.robust = RobustnessTally()

    def add(
        self,
        c: CaseSummary,
        results: Sequence[CaseResult],
        picks: Sequence[CaseResult] | None,
    ) -> None:
        """A case summary and its trials (read this once; their rows, `picks`, only when the
        picks are not counted already)."""
        self.cases.append(c)
        if c.status == "captured":
            return
        self.every.append(c)
        if c.status == "user_fault":
            return
        trials = [r for r in results if r.status != "user_fault"]
        self.trials += len(trials)
        self.trials_passed += sum(_passed(r) for r in trials)
        if picks is not None:
            count_picks((r for r in picks if r.status != "user_fault"), self.picks)
        self.robust.add(results)

    def summary(
        self, model: ModelSpec, usage: dict[str, tuple[int, float]] | None, confidence: float
    ) -> ModelSummary | None:
        """The model's summary; None when it has no judged case."""
        every = self.every
        mine = [c for c in every if c.status != "user_fault"]
        if not every:
            return None
        if not mine:  # every case spoiled by its simulated user: nothing judges the model
            return _all_user_faults(model.name, every, usage)
        scores = [c.score for c in mine]
        tok, lat = (usage or {}).get(model.name, (0, 0.0))
        passed_cases = [int(c.status in _PASSING) for c in mine]
        robust = self.robust.figures(confidence)
        return ModelSummary(
            model=model.name,
            cases=len(every),
            passed=sum(c.status == "pass" for c in mine),
            warned=sum(c.status == "warn" for c in mine),
            failed=sum(c.status == "fail" for c in mine),
            errors=sum(c.status == "error" for c in mine),
            mean_score=statistics.fmean(scores),
            std_score=_pstdev(scores, statistics.fmean(scores)) if len(scores) > 1 else 0.0,
            pass_at_1=self.trials_passed / self.trials,
            tokens=tok,
            latency_s=lat,
            k=max(c.trials for c in mine),
            pass_at_k=statistics.fmean(c.pass_at_k for c in mine),
            pass_hat_k=statistics.fmean(c.pass_hat_k for c in mine),
            pass_rate_ci=clustered_rate(passed_cases, [1] * len(passed_cases), confidence),
            pass_at_1_ci=clustered_rate(
                [c.passed for c in mine], [c.trials for c in mine], confidence
            ),
            mean_score_ci=mean_interval(scores, confidence, (0.0, 1.0)),
            flaky=sum(c.flaky for c in mine),
            user_faults=len(every) - len(mine) or msgspec.UNSET,
            tool_confusion=ranked(self.picks),
            variant=model.variant.name if model.variant else msgspec.UNSET,
            variant_of=model.base_name if model.variant else msgspec.UNSET,
            robustness=msgspec.UNSET if robust is None else robust,
        )


def _all_user_faults(
    model: str, every: list[CaseSummary], usage: dict[str, tuple[int, float]] | None
) -> ModelSummary:
    """A model whose every case its simulated users spoiled: no rate, no interval."""
    tok, lat = (usage or {}).get(model, (0, 0.0))
    return ModelSummary(
        model=model, cases=len(every), user_faults=len(every), tokens=tok, latency_s=lat
    )
