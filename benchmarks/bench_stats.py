"""What the statistics (intervals, flaky cases) add to `score`: 50,000 cases × 5 trials.

Run: ``.venv/bin/python benchmarks/bench_stats.py [--cases 50000] [--trials 5] [--repeat 7]``

It builds the results once (as scoring would hand them over), then times `summarize` (trials
combined per case, then per model) repeatedly, interleaved: once as `score` runs it (Wilson and
t intervals, flaky cases) and once with the statistics replaced by no-ops (the baseline), so a
busy machine slows both alike. The statistics import nothing heavy above 30 cases (no numpy,
no scipy: see evalspec/_stats/intervals.py), so there is no import cost to add. It also times
the statistics calls alone on the same per-case figures: the goal is judged on those, since
the summary's own time varies between repetitions by more than they cost.

Goal (issue 23): the statistics add at most 0.5 s to `score` at 50,000 cases × 5 trials.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import goal, machine

from evalspec._scoring import trials as T
from evalspec._scoring.types import CaseResult
from evalspec._stats import clustered_rate, is_flaky, mean_interval
from evalspec._suite.model import Case, Expectation, ModelSpec, Suite

REAL = (T.clustered_rate, T.mean_interval, T.is_flaky)


def use_statistics(on: bool) -> None:
    if on:
        T.clustered_rate, T.mean_interval, T.is_flaky = REAL
    else:
        T.clustered_rate = lambda *a, **k: None
        T.mean_interval = lambda *a, **k: None
        T.is_flaky = lambda *a, **k: False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    n, k = args.cases, args.trials
    print(f"{machine()}; {n:,} cases × {k} trials, {args.repeat} interleaved repetitions")
    cases = tuple(Case(f"c{i}", (), Expectation()) for i in range(n))
    suite = Suite("bench", "bench.yaml", (), cases, (ModelSpec("m", "m"),))
    results = [
        CaseResult(
            item_id=f"{i}-{t}",
            case=f"c{i}",
            model="m",
            trial=t,
            score=(i * 7 + t) % 10 / 10,
            status="pass" if (i * 7 + t) % 10 > 2 else "fail",
        )
        for i in range(n)
        for t in range(k)
    ]
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeat):
        for on in (False, True):
            use_statistics(on)
            start = time.perf_counter()
            _, models = T.summarize(suite, results)
            times[on].append(time.perf_counter() - start)
            assert (models[0].pass_rate_ci is not None) == on
    use_statistics(True)
    summaries, _ = T.summarize(suite, results)
    passed, ran = [c.passed for c in summaries], [c.trials for c in summaries]
    scores = [c.score for c in summaries]
    alone = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        clustered_rate(passed, ran)
        clustered_rate([int(c.status in ("pass", "warn")) for c in summaries], [1] * n)
        mean_interval(scores, 0.95, (0.0, 1.0))
        sum(is_flaky(c.passed, c.trials) for c in summaries)
        alone.append(time.perf_counter() - start)
    base, new = statistics.median(times[False]), statistics.median(times[True])
    for name, on in (("without", False), ("with", True)):
        each = ", ".join(f"{x:.3f}" for x in times[on])
        print(f"summarize {name} statistics: median {statistics.median(times[on]):.3f} s ({each})")
    print(f"ratio {new / base:.2f}x")
    print(f"the statistics calls alone: median {statistics.median(alone):.3f} s")
    # The interleaved difference carries the baseline's own spread (statistics.pstdev over
    # Fractions in combine_trials dominates it); the calls alone are what the statistics add.
    print(f"interleaved difference of medians: {new - base:+.3f} s")
    goal(f"statistics added to score at {n:,} x {k} (s)", statistics.median(alone), "<=", 0.5)


if __name__ == "__main__":
    main()
