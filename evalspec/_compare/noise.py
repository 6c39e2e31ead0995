"""Is a comparison's movement more than noise? Paired statistics per model.

A comparison (diff, review, compare) pairs each case's before and after sides. Per model (or
pair of columns), the cases with evidence on both sides and no error give one paired result
(evalspec._stats.paired): the change in pass rate (the case pass rate with one trial per case,
the trial pass rate with several), an exact test on the discordant cases, the interval that
test gives inverted, "significant" or "within noise" (the interval excludes 0 or not), and the
cases or trials that same test needs to detect a change of the size seen. Cases the suite
marks `flaky: true` are left out of it and never gate. Then the team's gate (the suite's
`gate:`) decides the exit code (`records.gate_failures`).
"""

from __future__ import annotations

from collections.abc import Iterable

from evalspec._compare.records import CaseChange, FigureChange, ModelNoise, Spend, side_counts
from evalspec._scoring.confusion import ConfusionCell
from evalspec._scoring.robustness import FIGURES, case_tallies
from evalspec._stats import is_flaky, paired_compare, within_variance
from evalspec._stats.intervals import mean_interval
from evalspec._suite.model import Gate


def model_noise(
    model: str,
    changes: Iterable[CaseChange],
    gate: Gate,
    *,
    known_flaky: frozenset[str] = frozenset(),
    spend: tuple[Spend, Spend] | None = None,
    confusion: tuple[tuple[ConfusionCell, ...], tuple[ConfusionCell, ...]] | None = None,
) -> ModelNoise:
    """The paired result over the changes of one model with evidence on both sides."""
    before: list[float] = []
    after: list[float] = []
    b_scores: list[float] = []
    a_scores: list[float] = []
    within: list[float] = []
    trials = 1
    left_out: list[str] = []
    flaky: list[str] = []
    paired: list[CaseChange] = []
    for c in changes:
        if c.before is None or c.after is None or c.unverified or c.trials_differ:
            continue
        paired.append(c)
        (bp, bn), (ap, an) = side_counts(c.before), side_counts(c.after)
        if bn == 0 or an == 0:
            continue
        if is_flaky(bp, bn) or is_flaky(ap, an):
            flaky.append(c.case)
        if c.case in known_flaky:
            left_out.append(c.case)
            continue
        before.append(bp / bn)
        after.append(ap / an)
        b_scores.append(c.before.score)
        a_scores.append(c.after.score)
        within.append(within_variance(bp, bn) + within_variance(ap, an))
        trials = max(trials, bn, an)
    result = paired_compare(
        before,
        after,
        trials=trials,
        within_variance=sum(within) / len(within) if within else 0.0,
        confidence=gate.confidence,
        power=gate.power,
    )
    score = mean_interval([a - b for a, b in zip(a_scores, b_scores, strict=True)], gate.confidence)
    return ModelNoise(
        model,
        result,
        score,
        tuple(left_out),
        tuple(flaky),
        spend[0] if spend else None,
        spend[1] if spend else None,
        confusion=confusion,
        robustness=robustness_changes(paired, gate),
    )


def robustness_changes(changes: Iterable[CaseChange], gate: Gate) -> tuple[FigureChange, ...]:
    """Each robustness figure, paired by case: the cases where both sides could show it, the
    same exact test as the pass rate's, and the cases whose rate moved."""
    sides: dict[str, list[tuple[str, tuple[int, int], tuple[int, int]]]] = {}
    for c in changes:
        assert c.before is not None and c.after is not None
        before, after = case_tallies(c.before.results), case_tallies(c.after.results)
        for name in FIGURES:
            if name in before and name in after:
                sides.setdefault(name, []).append((c.case, before[name], after[name]))
    out = []
    for name in FIGURES:
        cases = sides.get(name)
        if not cases:
            continue
        b = [k / n for _, (k, n), _ in cases]
        a = [k / n for _, _, (k, n) in cases]
        within = [within_variance(*x) + within_variance(*y) for _, x, y in cases]
        result = paired_compare(
            b,
            a,
            trials=max(max(x[1], y[1]) for _, x, y in cases),
            within_variance=sum(within) / len(within),
            confidence=gate.confidence,
            power=gate.power,
        )
        moved = tuple(
            f"{case} {x[0]}/{x[1]} → {y[0]}/{y[1]}"
            for (case, x, y), bi, ai in zip(cases, b, a, strict=True)
            if abs(bi - ai) > 1e-9
        )
        out.append(FigureChange(name, result, moved))
    return tuple(out)
