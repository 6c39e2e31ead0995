"""The statistics on a real model's published runs: τ-bench's GPT-4o airline trajectories,
50 tasks × 4 trials (tests/data/tau_bench/, MIT, see tests/data/README.md).

Real outcomes vary between identical runs: about half the tasks are flaky, the clustered
interval agrees with an independent cluster bootstrap, and two halves of the same model's
trials compared as "before" and "after" are within noise.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import bootstrap

from evalspec._scoring.trials import pass_hat_k
from evalspec._stats import clustered_rate, is_flaky, paired_compare

DATA = Path(__file__).parent / "data" / "tau_bench" / "gpt-4o-airline-rewards.csv"


@pytest.fixture(scope="module")
def tasks() -> dict[int, dict[int, float]]:
    by_task: dict[int, dict[int, float]] = defaultdict(dict)
    with DATA.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            by_task[int(row["task_id"])][int(row["trial"])] = float(row["reward"])
    assert len(by_task) == 50 and all(len(t) == 4 for t in by_task.values())
    return by_task


def test_half_the_tasks_are_flaky(tasks):
    passed = [int(sum(t.values())) for t in tasks.values()]
    flaky = [c for c in passed if is_flaky(c, 4)]
    assert len(flaky) == sum(1 for t in tasks.values() if len(set(t.values())) > 1) == 26
    # τ-bench's own pass^k (run.py) over the same counts: pass^1 0.42, pass^4 0.20.
    assert np.mean([pass_hat_k(4, c, 1) for c in passed]) == pytest.approx(0.42)
    assert np.mean([pass_hat_k(4, c, 4) for c in passed]) == pytest.approx(0.20)


def test_clustered_interval_agrees_with_a_cluster_bootstrap(tasks):
    passed = [int(sum(t.values())) for t in tasks.values()]
    interval = clustered_rate(passed, [4] * len(passed))
    rates = np.array(passed) / 4
    boot = bootstrap(
        (rates,), np.mean, method="percentile", n_resamples=9_999, rng=np.random.default_rng(0)
    ).confidence_interval
    assert interval is not None and interval.estimate == pytest.approx(0.42)
    assert interval.low == pytest.approx(boot.low, abs=0.02)
    assert interval.high == pytest.approx(boot.high, abs=0.02)
    # The interval of 200 independent trials would be far too narrow: trials are clustered.
    naive = clustered_rate([1] * 84 + [0] * 116, [1] * 200)
    assert naive is not None and naive.high - naive.low < interval.high - interval.low


def test_two_halves_of_the_same_models_trials_are_within_noise(tasks):
    before = [(t[0] + t[1]) / 2 for t in tasks.values()]
    after = [(t[2] + t[3]) / 2 for t in tasks.values()]
    r = paired_compare(before, after, trials=2)
    assert (r.improved, r.regressed) == (7, 10)
    assert r.verdict == "within noise" and r.p_value > 0.5
    assert r.difference is not None and r.difference.low < 0 < r.difference.high
    # A 2-point difference this noisy needs about two thousand tasks to detect.
    assert 1_500 < (r.cases_needed or 0) < 2_500
