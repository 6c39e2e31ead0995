"""Is a comparison's movement more than noise? Paired statistics per model, and the gate.

A comparison (diff, review, compare) pairs each case's before and after sides. Per model (or
pair of columns), the cases with evidence on both sides and no error give one paired result
(evalspec._stats.paired): the change in pass rate (the case pass rate with one trial per case,
the trial pass rate with several), an exact test on the discordant cases, the interval that
test gives inverted, "significant" or "within noise" (the interval excludes 0 or not), and the
cases or trials that same test needs to detect a change of the size seen. Cases the suite
marks `flaky: true` are left out of it and never gate. Then the team's gate (the suite's
`gate:`) decides the exit code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalspec._report.columns import PASSING, Side
from evalspec._stats import Interval, PairedResult, is_flaky, paired_compare, within_variance
from evalspec._stats.intervals import mean_interval
from evalspec._stats.paired import MAX_CASES, MAX_TRIALS
from evalspec._suite.model import Gate


class CaseChange(Protocol):
    """What this module reads of a diff's CaseChange (diff.py imports this module)."""

    @property
    def case(self) -> str: ...

    @property
    def before(self) -> Side | None: ...

    @property
    def after(self) -> Side | None: ...

    @property
    def unverified(self) -> bool: ...

    @property
    def gating(self) -> bool: ...

    @property
    def trials_differ(self) -> str: ...


@dataclass(frozen=True)
class Spend:
    """Tokens and cost of one side, over the cases both sides scored."""

    tokens: int
    cost: float | None


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "pass_rate": self.pass_rate.to_dict(),
            "score_difference": self.score.to_dict() if self.score else None,
            "known_flaky": list(self.known_flaky),
            "flaky": list(self.flaky),
            "before_spend": vars(self.before_spend) if self.before_spend else None,
            "after_spend": vars(self.after_spend) if self.after_spend else None,
        }


def side_counts(side: Side) -> tuple[int, int]:
    """(trials passed, trials run without error); a side without trial results counts as one
    trial with its status."""
    if not side.results:
        return int(side.status in PASSING), int(side.status != "error")
    ran = [r for r in side.results if r.status != "error"]
    return sum(r.status in PASSING for r in ran), len(ran)


def side_flaky(side: Side | None) -> bool:
    return side is not None and is_flaky(*side_counts(side))


def model_noise(
    model: str,
    changes: Iterable[CaseChange],
    gate: Gate,
    *,
    known_flaky: frozenset[str] = frozenset(),
    spend: tuple[Spend, Spend] | None = None,
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
    for c in changes:
        if c.before is None or c.after is None or c.unverified or c.trials_differ:
            continue
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
    )


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


def p_text(p: float) -> str:
    """`p = 0.031`, `p = 1`, `p < 0.001`."""
    return f"p = {p:.2g}" if p >= 0.001 else "p < 0.001"


def _signed(x: float, fmt: str) -> str:
    """`+4.1%`, `−0.020`; `0.0%` when the value rounds to zero (no sign: nothing moved)."""
    shown = format(abs(x), fmt)
    if float(shown.rstrip("%")) == 0:
        return shown
    return ("+" if x > 0 else "−") + shown


def count(n: int, one: str, many: str | None = None) -> str:
    """`1 case`, `2 cases`, `1,204 cases`."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def noise_lines(m: ModelNoise) -> list[str]:
    """What a reviewer reads: the change with the interval of the test that decides, the
    verdict, and the power of that same test."""
    pr = m.pass_rate
    if pr.cases == 0:
        return [f"{m.model}: no case with evidence on both sides to compare"]
    d = pr.difference
    ci = (
        f", {d.confidence:.0%} CI {_signed(d.low, '.1%')}…{_signed(d.high, '.1%')}"
        if d is not None
        else ""
    )
    trials = f" × {count(pr.trials, 'trial')}" if pr.trials > 1 else ""
    line = (
        f"{m.model}: {pr.rate} {pr.before:.1%} → {pr.after:.1%} "
        f"(Δ {_signed(pr.after - pr.before, '.1%')}{ci}; {count(pr.cases, 'case')}{trials}; "
        f"{pr.improved} improved, {pr.regressed} regressed; {pr.test}, {p_text(pr.p_value)}): "
        f"{pr.verdict}"
    )
    lines = [line]
    power = _power_text(pr)
    if power:
        lines.append(
            f"{m.model}: "
            + "; ".join(power)
            + f" (the same test at power {pr.power:.0%}, α {1 - pr.confidence:.2g})"
        )
    if m.score is not None:
        s = m.score
        lines.append(
            f"{m.model}: mean score Δ {_signed(s.estimate, '.3f')} "
            f"({s.confidence:.0%} CI {_signed(s.low, '.3f')}…{_signed(s.high, '.3f')})"
        )
    if m.flaky:
        lines.append(f"{m.model}: flaky (trials disagree): {_names(m.flaky)}")
    if m.known_flaky:
        lines.append(f"{m.model}: marked flaky in the suite, not gated: {_names(m.known_flaky)}")
    if m.before_spend and m.after_spend:
        lines.append(f"{m.model}: {spend_text(m.before_spend, m.after_spend)}")
    return lines


def _power_text(pr: PairedResult) -> list[str]:
    """The smallest change these cases detect, and what it takes to detect the change seen
    when it was not significant (always more than the sample that failed to)."""
    out = []
    cases = count(pr.cases, "case")
    if pr.detectable is not None and pr.detectable > 1:
        out.append(
            f"{cases} {'is' if pr.cases == 1 else 'are'} too few to detect a change of any size"
        )
    elif pr.detectable is not None:
        out.append(
            f"smallest change {cases} detect{'s' if pr.cases == 1 else ''}: {pr.detectable:.1%}"
        )
    if pr.cases_needed is not None and not pr.significant:
        need = (
            f"more than {count(MAX_CASES, 'case')}"
            if pr.cases_needed > MAX_CASES
            else count(pr.cases_needed, "case")
        )
        if pr.trials_needed is not None:
            per = (
                f"more than {count(MAX_TRIALS, 'trial')}"
                if pr.trials_needed > MAX_TRIALS
                else count(pr.trials_needed, "trial")
            )
            need += f" (or {per} per case on these {pr.cases})"
        out.append(f"to detect a change of {abs(pr.after - pr.before):.1%}: {need}")
    return out


def spend_text(before: Spend, after: Spend) -> str:
    """`tokens 1,200 → 1,500 (+25.0%) · cost 0.0012 → 0.0015 (+25.0%)`."""
    text = f"tokens {before.tokens:,} → {after.tokens:,}{_change(before.tokens, after.tokens)}"
    if before.cost is not None and after.cost is not None:
        text += f" · cost {before.cost:.4f} → {after.cost:.4f}{_change(before.cost, after.cost)}"
    return text


def _change(before: float, after: float) -> str:
    """` (+25.0%)`; nothing when there is no ratio to show (from 0, or one whose percentage
    is too large for a float: a cost of 1e-300 before)."""
    ratio = (after - before) / before if before else math.inf
    return f" ({_signed(ratio, '.1%')})" if math.isfinite(ratio * 100) else ""


def _names(cases: Sequence[str], limit: int = 10) -> str:
    more = f" and {len(cases) - limit} more" if len(cases) > limit else ""
    return ", ".join(cases[:limit]) + more
