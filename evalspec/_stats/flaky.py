"""Flaky cases: the same inputs, run several times, passed some trials and failed others.

Flakiness needs trials to be seen at all (one trial says nothing), and few trials miss much of
it: a case that passes 90 % of the time shows both outcomes in 3 trials only 27 % of the time
(1 − 0.9³ − 0.1³), in 5 trials 41 %. Errored trials (the endpoint failed) are not flakiness.
"""

from __future__ import annotations


def is_flaky(passed: int, trials: int) -> bool:
    """Some, not all, of at least two trials passed."""
    return trials >= 2 and 0 < passed < trials


def within_variance(passed: int, trials: int) -> float:
    """Unbiased variance of one trial's pass/fail outcome, from `passed` of `trials`
    (0 with fewer than two trials: nothing to measure)."""
    if trials < 2:
        return 0.0
    p = passed / trials
    return p * (1 - p) * trials / (trials - 1)
