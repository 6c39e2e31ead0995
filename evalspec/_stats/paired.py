"""Paired comparison of two sides (two models, two runs, base and head) on the same cases.

Both sides answered the same cases, so the case-to-case variation that dominates a single rate
cancels in the per-case differences d_i = after_i − before_i (each side's per-case pass rate
over its trials). That pairing is what an unpaired z test of two rates throws away.

- Difference: mean(d) with Student's t interval, cases − 1 degrees of freedom, cut to the
  differences the before rate allows, [−before, 1 − before] (with a few cases the t interval
  would leave them).
- Test: exact, on the discordant cases only (cases whose d_i is not 0; the others say nothing
  about a difference). With one trial per case every discordant d_i is ±1 and the test is the
  exact McNemar test, a two-sided binomial test of "improved" against "regressed" at 1/2
  (`scipy.stats.binomtest`). With trials, d_i takes fractional values and the test is its
  generalisation, the exact sign-flip (randomisation) test of mean(d)
  (`scipy.stats.permutation_test`, every sign pattern up to 16 discordant cases, else 9,999
  seeded resamples: the same p-value on every run).
- Verdict: "significant" when p < 1 − confidence, otherwise "within noise".
- Power: the smallest detectable difference at this size is
  MDE = (t_{1−α/2, n−1} + z_{power}) · sd(d)/√n (Miller 2024, eq. for paired designs), and the
  cases needed to detect a difference of the size seen are n = ((z_{1−α/2} + z_power) · sd(d) / Δ)².
  With trials, sd(d)² = ω² + σ_w²/K (ω²: spread of the true per-case differences; σ_w²: the
  sides' mean within-case trial variances added), so more trials shrink only the second term:
  the trials needed at this number of cases are K = σ_w² / (nΔ²/(z_{1−α/2} + z_power)² − ω²),
  when that is positive (otherwise only more cases help).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil, sqrt
from statistics import NormalDist

from evalspec._stats.intervals import DEFAULT_CONFIDENCE, Interval, t_quantile, z_quantile
from evalspec._util.numpy_import import import_numpy

DEFAULT_POWER = 0.8
EXACT_UP_TO = 16
"""Discordant cases up to which every sign pattern is enumerated (2^16 patterns)."""
RESAMPLES = 9_999
SEED = 20_241_124
"""Fixed, so the same inputs give the same p-value on every machine and run."""


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
    """after − before with its interval (None below two cases)."""
    improved: int
    regressed: int
    """Discordant cases: the after side passed more (fewer) of its trials."""
    p_value: float
    test: str
    significant: bool
    confidence: float
    power: float
    detectable: float | None
    """Smallest difference this many cases detect with `power` (None: no spread to measure);
    1 or more when they are too few to detect any difference of two rates."""
    cases_needed: int | None
    """Cases needed to detect a difference of the size seen (None: nothing seen or no spread)."""
    trials_needed: int | None
    """Trials per case needed at this number of cases (None: trials alone cannot, or K = 1)."""

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


def sign_flip_p(d: Sequence[float] | object) -> tuple[float, str]:
    """Two-sided p-value of mean(d) = 0 under random signs, on the nonzero d_i; and the name
    of the test used. Exact McNemar when every nonzero |d_i| is the same."""
    np = import_numpy()
    x = np.asarray(d, dtype=float)
    x = x[np.abs(x) > 1e-12]
    m = int(x.size)
    if m == 0:
        return 1.0, "no discordant case"
    if np.allclose(np.abs(x), abs(x[0])):
        from scipy.stats import binomtest

        k = int((x > 0).sum())
        return float(binomtest(k, m, 0.5).pvalue), "exact McNemar (binomial on discordant cases)"
    from scipy.stats import permutation_test

    exact = m <= EXACT_UP_TO
    # scipy-stubs types n_resamples as int; scipy documents np.inf as "every permutation".
    res = permutation_test(  # type: ignore[call-overload]
        (x,),
        lambda s, axis=-1: s.mean(axis=axis),
        permutation_type="samples",
        n_resamples=np.inf if exact else RESAMPLES,
        alternative="two-sided",
        vectorized=True,
        **_rng(np.random.default_rng(SEED)),
    )
    how = "exact" if exact else f"{RESAMPLES:,} seeded resamples"
    return min(1.0, float(res.pvalue)), f"sign-flip test on discordant cases ({how})"


def _rng(generator: object) -> dict[str, object]:
    """scipy renamed `random_state` to `rng` in 1.15."""
    import inspect

    from scipy.stats import permutation_test

    params = inspect.signature(permutation_test).parameters
    return {"rng": generator} if "rng" in params else {"random_state": generator}


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
    d = a - b
    n = int(d.size)
    improved, regressed = int((d > 1e-12).sum()), int((d < -1e-12).sum())
    before_rate = float(b.mean()) if n else 0.0
    after_rate = float(a.mean()) if n else 0.0
    p, test = sign_flip_p(d)
    alpha = 1 - confidence
    diff = detectable = None
    cases_needed = trials_needed = None
    if n >= 2:
        sd = float(d.std(ddof=1))
        se = sd / sqrt(n)
        t = t_quantile(confidence, n - 1)
        mean = float(d.mean())
        # after − before lies in [−before, 1 − before]: both rates are in [0, 1].
        low = max(-before_rate, mean - t * se)
        high = min(1.0 - before_rate, mean + t * se)
        diff = Interval(mean, low, high, confidence, "paired t over cases")
        z_power = NormalDist().inv_cdf(power)
        if sd > 0:
            detectable = (t + z_power) * se
            zs = z_quantile(confidence) + z_power
            if abs(mean) > 1e-12:
                cases_needed = max(2, ceil((zs * sd / mean) ** 2))
                trials_needed = _trials_needed(sd**2, within_variance, trials, n, mean, zs)
    return PairedResult(
        cases=n,
        trials=trials,
        before=before_rate,
        after=after_rate,
        difference=diff,
        improved=improved,
        regressed=regressed,
        p_value=p,
        test=test,
        significant=p < alpha,
        confidence=confidence,
        power=power,
        detectable=detectable,
        cases_needed=cases_needed,
        trials_needed=trials_needed,
    )


def _trials_needed(
    var_d: float, within: float, trials: int, n: int, delta: float, zs: float
) -> int | None:
    """K with ω² + σ_w²/K ≤ nΔ²/zs², ω² = var(d) − σ_w²/K_now (floored at 0); None when K = 1
    (no within-case variance measured) or when trials alone cannot get there."""
    if trials < 2 or within <= 0:
        return None
    omega2 = max(0.0, var_d - within / trials)
    room = n * delta * delta / (zs * zs) - omega2
    if room <= 0:
        return None
    return max(trials, ceil(within / room))
