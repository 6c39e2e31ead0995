"""Paired comparison of two sides (two models, two runs, base and head) on the same cases.

Both sides answered the same cases, so the case-to-case variation that dominates a single rate
cancels in the per-case differences d_i = after_i − before_i (each side's per-case pass rate
over its trials). That pairing is what an unpaired z test of two rates throws away.

One test says everything, so the verdict, the interval and the advice cannot disagree:

- Test: exact, on the discordant cases (d_i ≠ 0; the others say nothing about a difference).
  When every discordant |d_i| is the same (always so with one trial per case) it is the exact
  McNemar test, a binomial test of "improved" against "regressed" at 1/2
  (`scipy.stats.binomtest`); otherwise its generalisation, the sign-flip (randomisation) test
  of their sum: every sign pattern up to 16 discordant cases, else 9,999 seeded patterns (the
  same p-value on every run). Two-sided: twice the smaller tail.
- Interval: the same test inverted. The discordant cases' mean difference δ lies in the set of
  values the test, shifted by δ, does not reject: Clopper-Pearson on the improved share for
  McNemar (`binomtest(...).proportion_ci(method="exact")`), Hartigan's subset means for the
  sign-flip test (the same sign patterns as the p-value). The change in rate is δ times the
  share of discordant cases, taken at that share's own Clopper-Pearson bounds (the far end of
  the interval at the upper bound, the near end at the lower), so the interval also covers the
  discordance's sampling error and is never a point when no case differed. The sign of each
  end is δ's: the interval excludes 0 exactly when p < 1 − confidence.
- Verdict: "significant" when the interval excludes 0 (equivalently p < 1 − confidence),
  otherwise "within noise".
- Power: the same test's. For McNemar, exact up to 2,000 cases (the discordant count is
  binomial in the cases, the improved count binomial in the discordant ones) and by its normal
  approximation above (Connor 1987); for the sign-flip test, the normal approximation of its
  statistic Σd/√Σd²: power(n) = Φ((√n·|Δ| − z_{1−α/2}·√(σ² + Δ²)) / σ), σ² the variance of d.
  With trials, σ² = ω² + σ_w²/K (ω²: spread of the true per-case differences; σ_w²: the sides'
  mean within-case trial variances added), so more trials shrink only the second term.
  Advice after a difference that was not significant is never at or below the sample that
  just failed to show it: at least one case (one trial) more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import ceil, sqrt
from statistics import NormalDist
from typing import Any

from evalspec._stats.intervals import DEFAULT_CONFIDENCE, Interval, z_quantile
from evalspec._util.numpy_import import import_numpy, import_scipy

DEFAULT_POWER = 0.8
EXACT_UP_TO = 16
"""Discordant cases up to which every sign pattern is enumerated (2^16 patterns)."""
RESAMPLES = 9_999
SEED = 20_241_124
"""Fixed, so the same inputs give the same p-value on every machine and run."""
EXACT_POWER_UP_TO = 2_000
"""Cases up to which McNemar's power is summed exactly; above, its normal approximation."""
MAX_CASES = 10_000_000
MAX_TRIALS = 10_000
"""Advice beyond these is given as "more than"."""
DECIMALS = 9
"""Differences are rounded here: 0.2 + 0.4 − 0.6 is no difference, not 5.6e-17."""
MCNEMAR = "exact McNemar (binomial on discordant cases)"
CASE_RATE = "case pass rate"
TRIAL_RATE = "trial pass rate"


@dataclass(frozen=True)
class PairedResult:
    """What one before/after comparison on shared cases says."""

    cases: int
    """Cases present, with evidence, on both sides."""
    trials: int
    """Trials per case (the most any paired case had)."""
    before: float
    after: float
    """Pass rates over the paired cases (mean of per-case trial pass rates)."""
    difference: Interval | None
    """after − before with the interval of the test inverted (None without a case)."""
    improved: int
    regressed: int
    """Discordant cases: the after side passed more (fewer) of its trials."""
    p_value: float
    test: str
    significant: bool
    confidence: float
    power: float
    detectable: float | None
    """Smallest difference this many cases detect with `power` (None: nothing to measure);
    more than 1 when they are too few to detect any difference of two rates."""
    cases_needed: int | None
    """Cases needed to detect a difference of the size seen (None: nothing seen); more than
    MAX_CASES when out of reach."""
    trials_needed: int | None
    """Trials per case needed at this number of cases (None: trials alone cannot, or K = 1)."""
    rate: str = CASE_RATE
    """Which rate is compared: `case pass rate` (one trial per case, where the two are one)
    or `trial pass rate` (trials passed over trials, per case, averaged over cases)."""

    @property
    def verdict(self) -> str:
        """`significant drop`, `significant gain`, or `within noise`."""
        if not self.significant:
            return "within noise"
        return "significant drop" if self.after < self.before else "significant gain"

    @property
    def drop(self) -> bool:
        return self.significant and self.after < self.before

    def to_dict(self) -> dict[str, object]:
        data = dict(vars(self))
        data["difference"] = self.difference.to_dict() if self.difference else None
        data["verdict"] = self.verdict
        return data


@dataclass(frozen=True)
class _Tested:
    """One test on the discordant differences: its p-value and the interval of their mean δ
    that inverting it gives, at the same confidence."""

    p: float
    name: str
    low: float
    high: float


def _two_sided(tail: int, total: int) -> float:
    """Twice the smaller tail, as a share of the sign patterns: the p-value and the interval's
    ranks both come from this one expression, so they meet exactly."""
    return min(1.0, 2 * tail / total)


def _mcnemar(x: Any, confidence: float) -> _Tested:
    """Discordant differences all ±c: binomial at 1/2, Clopper-Pearson on the improved share."""
    import_scipy("scipy.stats")
    from scipy.stats import binomtest

    c = float(abs(x[0]))
    res = binomtest(int((x > 0).sum()), int(x.size), 0.5)
    ci = res.proportion_ci(confidence_level=confidence, method="exact")
    return _Tested(float(res.pvalue), MCNEMAR, c * (2 * ci.low - 1), c * (2 * ci.high - 1))


def _sign_patterns(m: int) -> Any:
    """Which differences each sign pattern flips (rows of booleans): all 2^m when few, else the
    unflipped one and RESAMPLES seeded draws."""
    np = import_numpy()
    if m <= EXACT_UP_TO:
        return ((np.arange(2**m)[:, None] >> np.arange(m)) & 1).astype(bool)
    draws = np.random.default_rng(SEED).integers(0, 2, size=(RESAMPLES, m), dtype=np.int8)
    return np.vstack([np.zeros((1, m), dtype=bool), draws.astype(bool)])


def _sign_flip(x: Any, confidence: float) -> _Tested:
    """The sign-flip test of Σx and its inversion (Hartigan 1969).

    Flipping the subset F changes Σ(x − δ) by −2Σ_F(x − δ): the flipped sum is at least the
    observed one exactly when mean_F(x) ≤ δ, so each tail at δ counts the subset means on one
    side of δ (plus the patterns that flip nothing), and the values of δ no tail rejects run
    from the r-th smallest subset mean to the r-th largest."""
    np = import_numpy()
    flips = _sign_patterns(int(x.size))
    sums = np.round(flips.astype(float) @ x, DECIMALS)
    sizes = flips.sum(axis=1)
    total, fixed = int(flips.shape[0]), int((sizes == 0).sum())
    means = np.sort(sums[sizes > 0] / sizes[sizes > 0])
    upper, lower = int((sums[sizes > 0] <= 0).sum()), int((sums[sizes > 0] >= 0).sum())
    p = _two_sided(fixed + min(upper, lower), total)
    r = _rank(fixed, total, 1 - confidence)
    low, high = (float(means[r - 1]), float(means[means.size - r])) if r else (-1.0, 1.0)
    exact = x.size <= EXACT_UP_TO
    how = "exact" if exact else f"{RESAMPLES:,} seeded sign patterns"
    return _Tested(p, f"sign-flip test on discordant cases ({how})", low, high)


def _rank(fixed: int, total: int, alpha: float) -> int:
    """The fewest subset means a tail needs beyond the fixed patterns not to reject at `alpha`
    (0: no value is ever rejected)."""
    r = max(0, ceil(alpha * total / 2) - fixed - 1)
    while r > 0 and _two_sided(fixed + r - 1, total) >= alpha:
        r -= 1
    while _two_sided(fixed + r, total) < alpha:
        r += 1
    return r


def sign_flip_p(
    d: Sequence[float] | object, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, str]:
    """Two-sided p-value of mean(d) = 0 under random signs, on the nonzero d_i; and the name
    of the test used. Exact McNemar when every nonzero |d_i| is the same."""
    tested = _test(_discordant(d), confidence)
    return tested.p, tested.name


def _discordant(d: Sequence[float] | object) -> Any:
    np = import_numpy()
    x = np.round(np.asarray(d, dtype=float), DECIMALS)
    return x[x != 0]


def _test(x: Any, confidence: float) -> _Tested:
    np = import_numpy()
    if x.size == 0:
        return _Tested(1.0, "no discordant case", -1.0, 1.0)
    if np.allclose(np.abs(x), abs(x[0]), rtol=0, atol=10**-DECIMALS):
        return _mcnemar(x, confidence)
    return _sign_flip(x, confidence)


def _end(delta: float, share: tuple[float, float], far: bool) -> float:
    """One end of the interval of the change in rate: `far` for the end away from zero."""
    return delta * (share[1] if far else share[0])


def paired_compare(
    before: Sequence[float] | object,
    after: Sequence[float] | object,
    *,
    trials: int = 1,
    within_variance: float = 0.0,
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
) -> PairedResult:
    """Compare per-case rates `after[i]` with `before[i]` (same case i).

    `within_variance` is σ_w²: the mean, over cases, of each side's unbiased variance of one
    trial's outcome, the two sides added (0 with one trial per case).
    """
    np = import_numpy()
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    d = np.round(a - b, DECIMALS)
    n = int(d.size)
    x = d[d != 0]
    improved, regressed = int((x > 0).sum()), int((x < 0).sum())
    before_rate = float(b.mean()) if n else 0.0
    after_rate = float(a.mean()) if n else 0.0
    tested = _test(x, confidence)
    alpha = 1 - confidence
    significant = tested.p < alpha
    diff = detectable = None
    cases_needed = trials_needed = None
    if n:
        change = after_rate - before_rate
        diff = _difference(tested, int(x.size), n, before_rate, change, confidence)
        design = _Design(d, tested.name == MCNEMAR, alpha, power)
        detectable = design.detectable(n)
        seen = abs(float(d.mean()))
        if seen > 0:
            cases_needed = design.cases_needed(seen)
            trials_needed = design.trials_needed(seen, n, trials, within_variance)
            if not significant:  # this sample just failed to show it: never advise it again
                cases_needed = max(cases_needed, n + 1)
                if trials_needed is not None:
                    trials_needed = max(trials_needed, trials + 1)
    return PairedResult(
        cases=n,
        trials=trials,
        before=before_rate,
        after=after_rate,
        difference=diff,
        improved=improved,
        regressed=regressed,
        p_value=tested.p,
        test=tested.name,
        significant=significant,
        confidence=confidence,
        power=power,
        detectable=detectable,
        cases_needed=cases_needed,
        trials_needed=trials_needed,
        rate=TRIAL_RATE if trials > 1 else CASE_RATE,
    )


def _difference(
    tested: _Tested, m: int, n: int, before: float, mean: float, confidence: float
) -> Interval:
    """The change in rate with the inverted test's interval, cut to what two rates allow
    ([−before, 1 − before]; both ends stay on their side of 0, which that range contains)."""
    import_scipy("scipy.stats")
    from scipy.stats import binomtest

    ci = binomtest(m, n).proportion_ci(confidence_level=confidence, method="exact")
    share = (float(ci.low), float(ci.high))
    significant = tested.p < 1 - confidence
    low, high = tested.low, tested.high
    if not significant:  # a tie at the boundary rounded past 0: the test's word stands
        low, high = min(low, 0.0), max(high, 0.0)
    low = _end(low, share, far=low < 0)
    high = _end(high, share, far=high > 0)
    method = f"{tested.name}, inverted" if m else "Clopper-Pearson on the discordant share"
    # The estimate lies inside by construction; min/max only absorb the last bit of rounding.
    low, high = min(max(-before, low), mean), max(min(1.0 - before, high), mean)
    return Interval(mean, low, high, confidence, method)


class _Design:
    """The power of the test used, as a function of the number of cases, the change to
    detect and the spread of d; the observed d gives the spread (and, for McNemar, the
    discordant share and the size of a discordant difference)."""

    def __init__(self, d: Any, mcnemar: bool, alpha: float, power: float) -> None:
        self.alpha, self.target = alpha, power
        self.z, self.z_power = z_quantile(1 - alpha), NormalDist().inv_cdf(power)
        nonzero = d[d != 0]
        self.mcnemar = mcnemar and nonzero.size > 0
        self.size = float(abs(nonzero[0])) if nonzero.size else 0.0
        self.share = nonzero.size / d.size
        self.second = float((d * d).mean())
        """E[d²]: the spread the test's statistic is scaled by."""
        self.var = float(d.var()) if d.size else 0.0

    def power_at(self, n: int, change: float, var: float | None = None) -> float:
        if self.mcnemar and var is None:
            share = max(self.share, change / self.size)
            if share > 1:
                return 0.0
            if n <= EXACT_POWER_UP_TO:
                return _mcnemar_power(n, share, (1 - change / (self.size * share)) / 2, self.alpha)
            var = self.size**2 * share - change**2
        spread = self.var if var is None else var
        if spread <= 0:  # every case moved by the same amount: only the count matters
            return 1.0 if n > self.z**2 else 0.0
        sd = sqrt(spread)
        return NormalDist().cdf((sqrt(n) * change - self.z * sqrt(spread + change**2)) / sd)

    def cases_needed(self, change: float) -> int:
        """The fewest cases with power ≥ the target (MAX_CASES + 1: out of reach)."""
        return _fewest(lambda n: self.power_at(n, change) >= self.target, 2, MAX_CASES)

    def detectable(self, n: int) -> float | None:
        """The smallest change `n` cases detect with the target power; above 1 when none."""
        if self.var <= 0 and not self.mcnemar:
            return None
        top = self.size if self.mcnemar else 1.0
        if self.power_at(n, top) < self.target:
            return 1.0 + top
        low, high = 0.0, top
        for _ in range(40):
            mid = (low + high) / 2
            low, high = (low, mid) if self.power_at(n, mid) >= self.target else (mid, high)
        return high

    def trials_needed(self, change: float, n: int, trials: int, within: float) -> int | None:
        """Trials per case at these `n` cases: σ² = ω² + σ_w²/K, ω² = var(d) − σ_w²/K_now
        (floored at 0); None when K = 1 (no within-case variance measured) or when trials
        alone cannot get there."""
        if trials < 2 or within <= 0:
            return None
        omega2 = max(0.0, self.var - within / trials)
        if self.power_at(n, change, omega2) < self.target:
            return None
        return _fewest(
            lambda k: self.power_at(n, change, omega2 + within / k) >= self.target, 1, MAX_TRIALS
        )


def _fewest(enough: Callable[[int], bool], start: int, limit: int) -> int:
    """The smallest n ≥ start that is `enough`, assuming more is never worse (doubling, then
    halving the gap); limit + 1 when none up to `limit` is."""
    if enough(start):
        return start
    low, high = start, start * 2
    while not enough(high):
        if high > limit:
            return limit + 1
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def _mcnemar_power(n: int, share: float, improved: float, alpha: float) -> float:
    """P(the exact McNemar test rejects) with `n` cases, each discordant with probability
    `share`, a discordant one improved with probability `improved`: summed over the number of
    discordant cases j, the binomial probability of the counts that test rejects."""
    np = import_numpy()
    import_scipy("scipy.stats")
    from scipy.stats import binom

    j = np.arange(n + 1)
    # The largest improved count the two-sided test rejects at j discordant cases (−1: none).
    c = binom.ppf(alpha / 2, j, 0.5).astype(int)
    c = np.where(2 * binom.cdf(c, j, 0.5) < alpha, c, c - 1)
    reject = np.where(c >= 0, binom.cdf(c, j, improved) + binom.sf(j - c - 1, j, improved), 0.0)
    return float((binom.pmf(j, n, share) * reject).sum())
