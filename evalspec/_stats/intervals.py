"""Confidence intervals for one model's rates, treating the case as the unit and its trials as
repeated measures of it (a cluster).

Why these methods:
- A pass rate over tens of cases is a small-sample proportion: the normal (Wald) interval
  under-covers there and collapses to a point at 0 % and 100 %; Wilson's score interval does
  neither. With one trial per case it is the textbook Wilson interval (what
  `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` gives).
- Trials of one case are not independent draws: a case the model cannot do fails every trial.
  Five trials of 40 cases are not 200 independent observations. The cluster-robust standard
  error over cases (Inspect's `stderr(cluster=...)`, Miller 2024 "Adding error bars to evals")
  measures how much the rate really varies; Wilson's interval is then taken at the effective
  number of observations that standard error implies, n_eff = p(1-p)/SE², kept between the
  number of cases and the number of trials.
- A mean score is a mean of per-case means: Student's t with cases − 1 degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import fsum, inf, sqrt
from statistics import NormalDist

import msgspec

DEFAULT_CONFIDENCE = 0.95


class Interval(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An estimate with its two-sided confidence interval (results.json holds it as is)."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str

    def to_dict(self) -> dict[str, float | str]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "method": self.method,
        }


def z_quantile(confidence: float) -> float:
    """The two-sided normal quantile: 1.96 at 95 %."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t quantile with `df` degrees of freedom.

    From 30 degrees of freedom up, the Cornish-Fisher expansion around the normal quantile
    (Abramowitz & Stegun 26.7.5; within 1e-6 of the exact value there), so summarising a large
    run needs no scipy import; below, scipy's exact inverse.
    """
    if df < CORNISH_FISHER_FROM:
        from evalspec._util.numpy_import import import_scipy

        import_scipy("scipy.special")
        from scipy.special import stdtrit

        return float(stdtrit(df, 0.5 + confidence / 2))
    z = z_quantile(confidence)
    z3, z5, z7, z9 = z**3, z**5, z**7, z**9
    return (
        z
        + (z3 + z) / (4 * df)
        + (5 * z5 + 16 * z3 + 3 * z) / (96 * df**2)
        + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df**3)
        + (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df**4)
    )


CORNISH_FISHER_FROM = 30


def wilson(p: float, n: float, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval for a proportion `p` observed over `n` (not necessarily whole)
    observations: (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)."""
    if n <= 0:
        return 0.0, 1.0
    z = z_quantile(confidence)
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0))
    denom = 1 + z2 / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def clustered_rate(
    passed: Sequence[int], trials: Sequence[int], confidence: float = DEFAULT_CONFIDENCE
) -> Interval | None:
    """The trial pass rate Σc/ΣK with a cluster-robust Wilson interval over cases.

    `passed[i]` of `trials[i]` trials of case i passed. SE² = n/(n−1) · Σ(c_i − p·K_i)² / (ΣK)²
    (the ratio estimator's cluster-robust variance); n_eff = p(1−p)/SE², clamped to
    [cases, trials]; with one trial per case this is exactly Wilson over the cases. None for
    no case. Plain Python: 50,000 cases take milliseconds, and no numpy import.
    """
    n = len(passed)
    total = float(sum(trials))
    if n == 0 or total == 0:
        return None
    p = sum(passed) / total
    if n == 1 or p in (0.0, 1.0):
        n_eff = float(n)
    else:
        ss = fsum((c - p * k) ** 2 for c, k in zip(passed, trials, strict=True))
        se2 = n / (n - 1) * ss / (total * total)
        n_eff = total if se2 <= 0 else min(max(p * (1 - p) / se2, float(n)), total)
    low, high = wilson(p, n_eff, confidence)
    method = "Wilson" if n_eff == n and total == n else "Wilson, clustered by case"
    return Interval(p, low, high, confidence, method)


def mean_interval(
    values: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float, float] = (-inf, inf),
) -> Interval | None:
    """The mean of per-case values with Student's t interval (cases − 1 degrees of freedom),
    cut to `bounds` (a score cannot leave [0, 1]); None below two cases (no spread)."""
    n = len(values)
    if n < 2:
        return None
    mean = fsum(values) / n
    sd = sqrt(fsum((x - mean) ** 2 for x in values) / (n - 1))
    half = t_quantile(confidence, n - 1) * sd / sqrt(n)
    low, high = max(bounds[0], mean - half), min(bounds[1], mean + half)
    return Interval(mean, low, high, confidence, "t over case means")
