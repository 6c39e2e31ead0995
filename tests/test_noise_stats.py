"""The statistics behind intervals, paired verdicts and a judge's agreement with people,
checked against hand computations and independent formulas (scipy's and scikit-learn's own
functions where they have one, arithmetic written out here where they do not).

A unit test of evalspec._stats and the noise lines, which it imports.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from support import examples

from evalspec._compare.records import ModelNoise
from evalspec._compare.text import noise_lines
from evalspec._stats import (
    clustered_rate,
    is_flaky,
    mean_interval,
    paired_compare,
    sign_flip_p,
    wilson,
    within_variance,
)
from evalspec._stats.agreement import krippendorff_alpha, pair_agreement


def test_wilson_matches_a_hand_computation_for_8_of_10():
    # z = 1.959964; centre = 0.8 + z²/20 = 0.992073; half = z·√(0.016 + z²/400) = 0.313617;
    # divided by 1 + z²/10 = 1.384146: (0.490162, 0.943318).
    low, high = wilson(0.8, 10)
    assert low == pytest.approx(0.490162, abs=1e-6)
    assert high == pytest.approx(0.943318, abs=1e-6)


@pytest.mark.parametrize("k,n", [(0, 7), (7, 7), (3, 12), (29, 30), (13, 40), (1, 1)])
def test_one_trial_per_case_is_scipys_wilson_interval(k, n):
    interval = clustered_rate([1] * k + [0] * (n - k), [1] * n)
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert interval is not None and interval.method == "Wilson"
    assert (interval.low, interval.high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert interval.estimate == pytest.approx(k / n)


def test_trials_of_a_deterministic_case_add_no_information():
    # Two cases always pass, two always fail, 5 trials each: p = 0.5, residuals ±2.5,
    # SE² = 4/3 · 25 / 20² = 1/12, n_eff = 0.25 / (1/12) = 3, clamped up to the 4 cases.
    interval = clustered_rate([5, 5, 0, 0], [5, 5, 5, 5])
    assert interval is not None and interval.method == "Wilson, clustered by case"
    assert (interval.low, interval.high) == pytest.approx(wilson(0.5, 4))


def test_trials_of_a_coin_flip_case_count_as_trials():
    # Every case passes about half its trials: SE² = 4/3 · 1 / 400, n_eff = 75, clamped to the
    # 20 trials: the interval of 20 independent observations.
    interval = clustered_rate([3, 2, 3, 2], [5, 5, 5, 5])
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx(wilson(0.5, 20))


def test_clustered_rate_follows_the_cluster_robust_formula_on_random_counts():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(2, 60)
        k = [rng.randint(1, 6) for _ in range(n)]
        c = [rng.randint(0, ki) for ki in k]
        p = sum(c) / sum(k)
        interval = clustered_rate(c, k)
        assert interval is not None
        if p in (0, 1):
            assert (interval.low, interval.high) == pytest.approx(wilson(p, n))
            continue
        se2 = (
            n / (n - 1) * sum((ci - p * ki) ** 2 for ci, ki in zip(c, k, strict=True)) / sum(k) ** 2
        )
        m = sum(k) if se2 == 0 else min(max(p * (1 - p) / se2, n), sum(k))
        z = sps.norm.ppf(0.975)
        centre, denom = p + z * z / (2 * m), 1 + z * z / m
        half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
        assert interval.low == pytest.approx(max(0, (centre - half) / denom), abs=1e-12)
        assert interval.high == pytest.approx(min(1, (centre + half) / denom), abs=1e-12)


def test_mean_interval_is_student_t_over_cases():
    values = [0.9, 1.0, 0.4, 0.75, 0.8, 1.0, 0.0]
    interval = mean_interval(values, 0.9)
    low, high = sps.t.interval(
        0.9, len(values) - 1, loc=sum(values) / len(values), scale=sps.sem(values)
    )
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)
    assert mean_interval([0.5]) is None


def test_mcnemar_exact_by_hand():
    # 6 discordant cases, all regressed: p = 2 · 0.5⁶ = 0.03125, the fewest that reach 0.05.
    assert sign_flip_p([-1] * 6 + [0] * 30)[0] == pytest.approx(0.03125)
    assert sign_flip_p([-1] * 5)[0] == pytest.approx(0.0625)
    # 3 improved, 6 regressed: 2 · P(X ≤ 3 | n=9, 1/2) = 2 · (1 + 9 + 36 + 84) / 512.
    p, test = sign_flip_p([1, 1, 1, -1, -1, -1, -1, -1, -1, 0, 0])
    assert p == pytest.approx(2 * 130 / 512)
    assert "McNemar" in test


def test_sign_flip_test_enumerates_every_sign_pattern():
    # d = (0.2, −0.4, 0.6): of the 8 sign patterns, 6 have |sum| ≥ |0.4|: p = 0.75.
    p, test = sign_flip_p([0.2, -0.4, 0.6, 0.0])
    assert p == pytest.approx(0.75)
    assert "exact" in test


def test_sign_flip_test_equals_full_enumeration_on_random_differences():
    rng = random.Random(3)
    for _ in range(10):
        d = [rng.choice([-0.6, -0.4, -0.2, 0.2, 0.4, 0.8]) for _ in range(rng.randint(3, 9))]
        observed = abs(sum(d))
        hits = sum(
            abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-9
            for signs in itertools.product((1, -1), repeat=len(d))
        )
        expected = hits / 2 ** len(d)
        if len({abs(x) for x in d}) == 1:
            continue  # the McNemar branch, tested above
        assert sign_flip_p(d)[0] == pytest.approx(expected)


@functools.cache
def _rejected(j: int) -> list[int]:
    """The improved counts of j discordant cases that scipy's binomtest rejects at 0.05.

    The test at 1/2 is symmetric and its p-value grows toward j/2, so the rejected counts are
    0..a and j-a..j: a is found by bisection, each step decided by scipy (asking every count
    made this one test take seconds)."""
    low, high = -1, j // 2  # binomtest(low) rejects (or low = -1), binomtest(high) may not
    if sps.binomtest(high, j).pvalue < 0.05:
        low = high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if sps.binomtest(middle, j).pvalue < 0.05 else (low, middle)
    return sorted({*range(low + 1), *range(j - low, j + 1)})


def _mcnemar_power_by_brute_force(n: int, share: float, improved: float) -> float:
    """P(binomtest rejects at 0.05), each count's rejection decided by scipy itself."""
    total = 0.0
    for j in range(1, n + 1):  # no discordant case: nothing rejected
        rejected = float(sps.binom.pmf(_rejected(j), j, improved).sum())
        total += float(sps.binom.pmf(j, n, share)) * rejected
    return total


def test_the_interval_is_the_mcnemar_test_inverted_and_the_advice_its_exact_power():
    before = [1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0]
    after = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1]
    r = paired_compare(before, after)
    assert (r.improved, r.regressed) == (1, 3)
    assert r.p_value == pytest.approx(sps.binomtest(1, 4, 0.5).pvalue)  # 0.625
    assert r.verdict == "within noise" and not r.significant
    # Clopper-Pearson on the improved share of the 4 discordant cases, as a mean difference
    # 2π − 1; times the discordant share 4/20 at its own Clopper-Pearson bounds (the far end
    # at the upper); the high end cut at 1 − before = 0.2.
    pi = sps.binomtest(1, 4).proportion_ci(method="exact")
    share = sps.binomtest(4, 20).proportion_ci(method="exact")
    assert r.difference is not None
    assert r.difference.estimate == pytest.approx(-0.1)
    assert r.difference.low == pytest.approx((2 * pi.low - 1) * share.high)
    assert r.difference.high == pytest.approx(min(0.2, (2 * pi.high - 1) * share.high))
    # The cases needed: the exact power of that same test reaches 80 % there, not one case
    # earlier, with 20 % of cases discordant and a quarter of those improved (Δ = −10 %).
    n = r.cases_needed
    assert n is not None and n > 20
    assert _mcnemar_power_by_brute_force(n, 0.2, 0.25) >= 0.8
    assert _mcnemar_power_by_brute_force(n - 1, 0.2, 0.25) < 0.8


def test_with_few_cases_the_difference_stays_within_what_two_rates_can_differ():
    # Three cases, one regressed: from a pass rate of 100 % the difference lies in [−1, 0];
    # the inverted test says how far below 0 (one discordant case of three: up to 90.6 %).
    r = paired_compare([1, 1, 1], [1, 0, 1])
    share = sps.binomtest(1, 3).proportion_ci(method="exact")
    assert r.difference is not None
    assert (r.difference.low, r.difference.high) == pytest.approx((-share.high, 0.0))
    assert r.detectable is not None and r.detectable > 1
    for _ in range(200):
        rng = random.Random(_)
        n = rng.randint(2, 8)
        before = [rng.random() for _ in range(n)]
        after = [rng.random() for _ in range(n)]
        d = paired_compare(before, after).difference
        rate = sum(before) / n
        assert d is not None and -rate - 1e-12 <= d.low <= d.estimate <= d.high <= 1 - rate + 1e-12
    lines = noise_lines(ModelNoise("m", r, None))
    assert "95% CI −90.6%…0.0%" in lines[0] and "±" not in lines[0]
    assert "3 cases; 0 improved, 1 regressed" in lines[0]
    assert lines[1].startswith("m: 3 cases are too few to detect a change of any size;")


def test_a_real_drop_is_significant():
    before = [1] * 60
    after = [1] * 50 + [0] * 10
    r = paired_compare(before, after)
    assert r.p_value == pytest.approx(2 * 0.5**10)
    assert r.verdict == "significant drop" and r.drop


def _sign_flip_power(n: int, change: float, var: float) -> float:
    """The normal approximation of the sign-flip statistic Σd/√Σd² under a change."""
    z = sps.norm.ppf(0.975)
    return sps.norm.cdf((math.sqrt(n) * change - z * math.sqrt(var + change**2)) / math.sqrt(var))


def test_trials_needed_follows_the_variance_decomposition():
    # 40 cases × 5 trials; per-case trial rates move a little both ways. σ_d² = ω² + σ_w²/K:
    # the trials needed are the fewest K whose σ_d² gives the sign-flip test 80 % power.
    rng = random.Random(11)
    before = [rng.choice([0.4, 0.6, 0.8, 1.0]) for _ in range(40)]
    after = [max(0.0, b - rng.choice([0.0, 0.0, 0.2, 0.2, 0.4, -0.2])) for b in before]
    within = 0.4
    r = paired_compare(before, after, trials=5, within_variance=within)
    d = [a - b for a, b in zip(after, before, strict=True)]
    change = abs(sum(d) / len(d))
    var = sum((x - sum(d) / len(d)) ** 2 for x in d) / len(d)
    omega2 = max(0.0, var - within / 5)
    k = r.trials_needed
    assert r.test.startswith("sign-flip") and k is not None
    assert _sign_flip_power(40, change, omega2 + within / k) >= 0.8
    if r.significant or k > 6:
        assert _sign_flip_power(40, change, omega2 + within / (k - 1)) < 0.8
    assert paired_compare(before, after, trials=1).trials_needed is None


def test_flaky_and_within_variance():
    assert is_flaky(2, 5) and not is_flaky(5, 5) and not is_flaky(0, 5) and not is_flaky(1, 1)
    assert within_variance(2, 4) == pytest.approx(0.25 * 4 / 3)
    assert within_variance(1, 1) == 0.0


@pytest.mark.parametrize("df", [1, 2, 5, 29, 30, 31, 60, 500, 49_999])
@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_t_quantile_is_scipys_to_a_millionth(df, confidence):
    from evalspec._stats.intervals import t_quantile

    assert t_quantile(confidence, df) == pytest.approx(
        sps.t.ppf(0.5 + confidence / 2, df), abs=1e-6
    )


@st.composite
def paired_outcomes(draw: st.DrawFn) -> tuple[list[float], list[float], int, float]:
    """Random paired outcomes: n cases, each side passing some of K trials (K = 1: McNemar's
    binary outcomes; K > 1: the sign-flip test's fractional ones), and a confidence."""
    n = draw(st.integers(1, 40))
    k = draw(st.integers(1, 4))
    lean = draw(st.floats(0.05, 0.95))
    shift = draw(st.floats(-0.6, 0.6))
    rng = random.Random(draw(st.integers(0, 2**32)))
    before, after = [], []
    for _ in range(n):
        p = rng.random() * lean + (1 - lean) * 0.5
        q = min(1.0, max(0.0, p + shift))
        before.append(sum(rng.random() < p for _ in range(k)) / k)
        after.append(sum(rng.random() < q for _ in range(k)) / k)
    confidence = draw(st.sampled_from([0.8, 0.875, 0.9, 0.95, 0.99]))
    return before, after, k, confidence


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(paired_outcomes())
def test_decision_interval_and_advice_tell_one_story(outcomes):
    before, after, k, confidence = outcomes
    r = paired_compare(
        before, after, trials=k, within_variance=0.1 * (k > 1), confidence=confidence
    )
    d = r.difference
    assert d is not None and d.confidence == confidence
    excludes_zero = d.low > 0 or d.high < 0
    assert r.significant == excludes_zero == (r.p_value < 1 - confidence)
    assert d.low <= d.estimate <= d.high
    assert r.verdict == ("within noise" if not excludes_zero else r.verdict)
    if r.significant:
        assert (d.estimate < 0) == r.drop
    else:
        assert r.cases_needed is None or r.cases_needed > r.cases
        assert r.trials_needed is None or r.trials_needed > k
    line = noise_lines(ModelNoise("m", r, None))[0]
    assert "±" not in line and " 1 cases" not in line and " 1 trials" not in line
    assert _shown_excludes_zero(line) == r.significant, line


def _shown_excludes_zero(line: str) -> bool:
    """Whether the interval the line shows, read as shown, excludes 0: an end that rounds
    to 0 is shown with no sign."""
    low, high = re.search(r"CI (\S+)…(\S+?);", line).groups()  # type: ignore[union-attr]
    return low.startswith("+") or high.startswith("−")


@pytest.mark.parametrize(("cases", "improved"), [(2_000, 7), (10_000, 8), (100_000, 9)])
def test_a_significant_change_never_shows_an_interval_that_reads_as_holding_zero(cases, improved):
    """Thousands of cases, a handful improved, none regressed: significant, and the interval
    excludes 0 by less than 0.05%. At one decimal its low end read `0.0%`."""
    r = paired_compare([0.0] * improved + [1.0] * (cases - improved), [1.0] * cases, trials=1)
    line = noise_lines(ModelNoise("m", r, None))[0]
    assert r.significant and line.endswith("significant gain")
    assert _shown_excludes_zero(line), line
    assert "CI 0.0%" not in line


# ------------------------------------------- agreement of a judge with people (`calibrate`)

VERDICTS = ("Solved", "Unsure", "Unsolved")


def test_kappa_is_the_hand_computation_and_scikit_learns() -> None:
    judge = ["Solved"] * 8 + ["Unsure", "Unsolved"]
    person = ["Solved"] * 6 + ["Unsolved", "Unsolved", "Unsolved", "Unsolved"]
    got = pair_agreement(judge, person, VERDICTS)
    # po = 7/10; pe = (8*6 + 1*0 + 1*4) / 100 = 0.52; kappa = (0.7 - 0.52) / 0.48
    assert got.agreement == pytest.approx(0.7)
    assert got.kappa is not None
    assert got.kappa.estimate == pytest.approx(0.375)
    assert got.kappa.low <= 0.375 <= got.kappa.high
    assert got.confusion == ((6, 0, 2), (0, 0, 1), (0, 0, 1))
    # Seeded: the same interval every time.
    assert pair_agreement(judge, person, VERDICTS).kappa == got.kappa


def test_the_bootstrap_interval_is_scikit_learns_kappa_on_each_resample() -> None:
    """The resamples' kappas come from their confusion matrices in one vectorised step: the
    same draws scored one by one with scikit-learn give the same percentile interval."""
    import warnings

    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    judge = ["Solved", "Unsure", "Solved", "Unsolved", "Solved", "Unsure", "Unsolved", "Solved"]
    person = ["Solved", "Solved", "Unsure", "Unsolved", "Solved", "Unsure", "Solved", "Solved"]
    got = pair_agreement(judge, person, VERDICTS, resamples=300, seed=7)
    assert got.kappa is not None
    assert got.kappa.estimate == pytest.approx(cohen_kappa_score(judge, person))
    draws = np.random.default_rng(7).integers(0, len(judge), size=(300, len(judge)))
    kappas = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx in draws:
            k = cohen_kappa_score([judge[i] for i in idx], [person[i] for i in idx])
            if np.isfinite(k):
                kappas.append(k)
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (got.kappa.low, got.kappa.high) == pytest.approx(
        (min(low, got.kappa.estimate), max(high, got.kappa.estimate))
    )


@pytest.mark.parametrize("seed", range(40))
def test_kappa_and_confusion_are_scikit_learns_on_random_verdicts(seed: int) -> None:
    """evalspec computes kappa and the confusion matrix itself (importing scikit-learn cost
    every run with labels two seconds): on random verdicts, with labels outside the declared
    scale and one-sided raters, they are scikit-learn's."""
    import warnings

    import numpy as np
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = np.random.default_rng(seed)
    scale = [*VERDICTS, "Other"]
    n = int(rng.integers(1, 15))
    first = [scale[i] for i in rng.integers(0, 1 + seed % 4, size=n)]
    second = [scale[i] for i in rng.integers(0, 4, size=n)]
    got = pair_agreement(first, second, VERDICTS, resamples=50)
    assert got.confusion == tuple(
        tuple(int(x) for x in row)
        for row in confusion_matrix(first, second, labels=list(got.labels))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(cohen_kappa_score(first, second, labels=list(got.labels)))
    if np.isfinite(expected):
        assert got.kappa is not None
        assert got.kappa.estimate == pytest.approx(expected)
    else:
        assert got.kappa is None


def test_alpha_is_the_hand_computation() -> None:
    # Two raters, four items, nominal: coincidences o(S,S)=4, o(U,U)=2, o(S,U)=o(U,S)=1;
    # n = 8, n_S = 5, n_U = 3; D_o = 2/8; D_e = (5*3 + 3*5) / (8*7); alpha = 1 - D_o / D_e.
    a = ["Solved", "Solved", "Unsure", "Solved"]
    b = ["Solved", "Solved", "Unsure", "Unsure"]
    got = krippendorff_alpha([a, b], VERDICTS)
    assert got is not None
    assert got.estimate == pytest.approx(1 - (2 / 8) / (30 / 56))
    assert krippendorff_alpha([["Solved"] * 3, ["Solved"] * 3], VERDICTS) is None


def test_each_alpha_resample_is_the_krippendorff_packages_alpha_of_that_resample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bootstrap asks the package once, for the estimate, and computes its 2,000 resamples
    at once (before: one call each, 0.3 s for ten items, twice in every calibration); each
    resample's alpha is the package's on the same items, missing ratings included."""
    import krippendorff
    import numpy as np

    from evalspec._stats import agreement

    rng = random.Random(7)
    rows = [[rng.choice([*VERDICTS, None]) for _ in range(12)] for _ in range(3)]
    calls: list[object] = []
    package = krippendorff.alpha
    monkeypatch.setattr(krippendorff, "alpha", lambda **kw: calls.append(kw) or package(**kw))
    assert krippendorff_alpha(rows, VERDICTS) is not None
    assert len(calls) == 1
    draws = np.random.default_rng(3)
    resample = [draws.integers(0, 12, size=12) for _ in range(300)]
    expected = [agreement._alpha(rows, list(VERDICTS), items) for items in resample]
    assert agreement._alpha_resamples(rows, list(VERDICTS), 300, 3) == pytest.approx(
        [a for a in expected if a is not None], abs=1e-12
    )
