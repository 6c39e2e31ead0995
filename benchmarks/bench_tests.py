"""The two test lanes, timed in one run: the default (fast) lane and the full suite.

Run: ``.venv/bin/python benchmarks/bench_tests.py [--only fast|all] [-- PYTEST_ARGS...]``

Each lane is one `python -m pytest -q` child of this interpreter, run from the repository root
(the fast lane as a contributor runs it while working, the full one with `--all`, as the
README's command and CI run it); its wall time, its CPU time (user + system, the child's and
its own children's: steadier than wall time on a shared machine) and pytest's closing summary
are printed. Arguments after `--` go to both (`-- tests/test_provider.py` times the lanes of one
module).

Goals (issue 31): the fast lane under 90 s and the full suite under 12 minutes on a quiet 2-core
machine. Reported, not asserted: the script exits 0 whatever the tests did.
"""

from __future__ import annotations

import argparse
import os

from _common import PYTHON, goal, machine, run_child

LANES = {"fast": [], "all": ["--all"]}
"""Lane -> the arguments that select it."""
GOALS_S = {"fast": 90.0, "all": 12 * 60.0}


def summary(output: str) -> str:
    """pytest's last line: the counts (passed, skipped, deselected, ...) and its own time."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def time_lane(extra: list[str], args: list[str]) -> tuple[float, float, int, str]:
    """Wall and CPU seconds, exit code and summary of one pytest run in a child process."""
    done = run_child([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *args])
    return done.wall, done.cpu_s, done.returncode, summary(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(LANES), help="time one lane only")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    options = parser.parse_args()
    print(f"machine: {machine()}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # each run compiles every module anew
        print("PYTHONDONTWRITEBYTECODE is set: no compiled module is kept between runs")
    for lane, extra in LANES.items():
        if options.only and lane != options.only:
            continue
        wall, cpu, code, counts = time_lane(extra, options.pytest_args)
        print(f"{lane} lane: {wall:.1f} s wall, {cpu:.1f} s CPU, exit {code}: {counts}")
        goal(f"{lane} lane wall seconds", wall, "<", GOALS_S[lane], "{:.1f}")


if __name__ == "__main__":
    main()
