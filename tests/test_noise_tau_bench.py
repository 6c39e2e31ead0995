"""The statistics on a real model's published runs: τ-bench's GPT-4o airline trajectories,
50 tasks × 4 trials (tests/data/tau_bench/, MIT, see tests/data/README.md), each task a case
and each trial's reward a transcript that passes or fails, scored and compared as a user's runs
are (`evalspec.api.score`, `evalspec.api.compare`).

Real outcomes vary between identical runs: about half the tasks are flaky, the clustered
interval agrees with an independent cluster bootstrap, and two halves of the same model's
trials compared as "before" and "after" are within noise.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import bootstrap

from evalspec import api
from evalspec.records import Report, ReportFiles, ToolCall, Transcript

DATA = Path(__file__).parent / "data" / "tau_bench" / "gpt-4o-airline-rewards.csv"


@pytest.fixture(scope="module")
def tasks() -> dict[int, dict[int, float]]:
    by_task: dict[int, dict[int, float]] = defaultdict(dict)
    with DATA.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            by_task[int(row["task_id"])][int(row["trial"])] = float(row["reward"])
    assert len(by_task) == 50 and all(len(t) == 4 for t in by_task.values())
    return by_task


def scored(folder: Path, rewards: dict[int, list[float]]) -> Report:
    """A suite of one case per task, run as many trials as each task has rewards; a rewarded
    trial is a transcript that made the expected call, another one that made none."""
    trials = len(next(iter(rewards.values())))
    suite = {
        "suite": "airline",
        "models": ["gpt-4o"],
        "trials": trials,
        "tools": [{"name": "act", "parameters": {"type": "object"}}],
        "cases": [
            {"name": f"task {t}", "user": "help", "expect": {"tool_calls": [{"tool": "act"}]}}
            for t in rewards
        ],
    }
    path = folder / f"airline-{trials}.yaml"
    path.write_text(json.dumps(suite), encoding="utf-8")
    runs = [
        Transcript(
            item_id=f"{t}-{i}",
            case=f"task {t}",
            model="gpt-4o",
            trial=i,
            tool_calls=(ToolCall(name="act", arguments={}),) if reward else (),
        )
        for t, row in rewards.items()
        for i, reward in enumerate(row)
    ]
    return api.score(api.load_suite(path), runs)


def test_half_the_tasks_are_flaky(tasks, tmp_path):
    (model,) = scored(tmp_path, {t: list(r.values()) for t, r in tasks.items()}).models
    assert model.flaky == sum(1 for t in tasks.values() if len(set(t.values())) > 1) == 26
    # τ-bench's own pass^k (run.py) over the same counts: pass^1 0.42, pass^4 0.20.
    assert model.pass_at_1_ci is not None and model.pass_at_1_ci.estimate == pytest.approx(0.42)
    assert (model.k, model.pass_hat_k) == (4, pytest.approx(0.20))


def test_clustered_interval_agrees_with_a_cluster_bootstrap(tasks, tmp_path):
    passed = [int(sum(t.values())) for t in tasks.values()]
    (model,) = scored(tmp_path, {t: list(r.values()) for t, r in tasks.items()}).models
    interval = model.pass_at_1_ci  # trials passed over trials, clustered by task
    rates = np.array(passed) / 4
    boot = bootstrap(
        (rates,), np.mean, method="percentile", n_resamples=9_999, rng=np.random.default_rng(0)
    ).confidence_interval
    assert interval is not None and interval.estimate == pytest.approx(0.42)
    assert interval.low == pytest.approx(boot.low, abs=0.02)
    assert interval.high == pytest.approx(boot.high, abs=0.02)
    # The interval of 200 independent trials would be far too narrow: trials are clustered.
    flat = {i: [1.0 if i < 84 else 0.0] for i in range(200)}
    (naive,) = scored(tmp_path, flat).models
    assert naive.pass_at_1_ci is not None and naive.pass_at_1_ci.estimate == pytest.approx(0.42)
    assert naive.pass_at_1_ci.high - naive.pass_at_1_ci.low < interval.high - interval.low


def test_two_halves_of_the_same_models_trials_are_within_noise(tasks, tmp_path):
    halves = []
    for name, trials in (("before", (0, 1)), ("after", (2, 3))):
        report = scored(tmp_path, {t: [r[i] for i in trials] for t, r in tasks.items()})
        results = tmp_path / name / "results.json"
        results.parent.mkdir()
        api.write_reports(report, ReportFiles(results=results))
        halves.append(results)
    (noise,) = api.compare(halves).noise
    r = noise.pass_rate
    assert (r.improved, r.regressed) == (7, 10)
    assert r.verdict == "within noise" and r.p_value > 0.5
    assert r.difference is not None and r.difference.low < 0 < r.difference.high
    # A 2-point difference this noisy needs about two thousand tasks to detect.
    assert 1_500 < (r.cases_needed or 0) < 2_500
