"""What the statistics (intervals, flaky cases) add to `score`: 50,000 cases × 5 trials.

Run: ``.venv/bin/python benchmarks/bench_stats.py [--cases 50000] [--trials 5] [--repeat 5]``

Each repetition starts two fresh interpreters, interleaved: one summarises the results as
`score` does (trials combined per case, then per model with the Wilson and t intervals and
flaky cases), the other the same with the statistics replaced by no-ops (the baseline). Each
times only `summarize`, including the first import of what the statistics import (numpy,
scipy.special), since a `score` process pays that too. Results are built in the child before
timing; no model, no file.

Goal (issue 23): the statistics add at most 0.5 s to `score` at 50,000 cases × 5 trials.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

from _common import PYTHON, goal, machine

CHILD = r"""
import json, sys, time
cases, trials, stats = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "on"
from evalspec.scoring import trials as T
from evalspec.scoring.types import CaseResult
from evalspec.suite.model import Case, Expectation, ModelSpec, Suite
if not stats:
    T.clustered_rate = lambda *a, **k: None
    T.mean_interval = lambda *a, **k: None
    T.is_flaky = lambda *a, **k: False
cases_ = tuple(Case(f"c{i}", (), Expectation()) for i in range(cases))
suite = Suite("bench", "bench.yaml", (), cases_, (ModelSpec("m", "m"),))
results = [
    CaseResult(f"{i}-{t}", f"c{i}", "m", t, (i * 7 + t) % 10 / 10,
               "pass" if (i * 7 + t) % 10 > 2 else "fail", "")
    for i in range(cases) for t in range(trials)
]
start = time.perf_counter()
_, models = T.summarize(suite, results)
took = time.perf_counter() - start
assert (models[0].pass_rate_ci is not None) == stats
print(json.dumps({"s": took}))
"""


def child(cases: int, trials: int, stats: bool) -> float:
    out = subprocess.run(
        [PYTHON, "-c", CHILD, str(cases), str(trials), "on" if stats else "off"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["s"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{machine()}; {args.cases:,} cases × {args.trials} trials, {args.repeat} repetitions")
    with_stats, without = [], []
    for _ in range(args.repeat):  # interleaved: a busy machine slows both alike
        without.append(child(args.cases, args.trials, stats=False))
        with_stats.append(child(args.cases, args.trials, stats=True))
    base, new = statistics.median(without), statistics.median(with_stats)
    for name, runs, median in (("without", without, base), ("with", with_stats, new)):
        each = ", ".join(f"{x:.3f}" for x in runs)
        print(f"summarize {name} statistics: median {median:.3f} s ({each})")
    print(f"ratio {new / base:.2f}x")
    goal("statistics add to score at 50,000 x 5 (s)", new - base, "<=", 0.5)


if __name__ == "__main__":
    main()
