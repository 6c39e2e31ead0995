"""Every benchmark still runs, at tiny sizes: a record or API change once left two of them
failing with a TypeError that nothing noticed until someone needed their figures.

Only that each script runs to its figures is checked, never a time or a ratio (tiny sizes
measure nothing; the figures come from full runs, see benchmarks/README.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
GOAL_LINE = re.compile(r"GOAL \S.*: \S.* \(goal \S.*\) (PASS|FAIL)")
"""The line benchmarks/README.md promises for each goal."""

QUICK = {
    "bench_anthropic.py": ["--requests", "20", "--repeat", "1", "--tools", "5", "--cases", "10"],
    "bench_bounds.py": ["--cases", "200", "--parts", "2"],
    "bench_embeddings.py": ["--texts", "20", "--pairs", "20", "--repeat", "1"],
    "bench_faults.py": ["--cases", "5", "--repeat", "1"],
    "bench_import_traces.py": ["--small", "20", "--large", "40", "--turns-apart"],
    "bench_ray.py": ["--cases", "8", "--repeat", "1", "--batch", "4", "--embed-texts", "20"],
    "bench_records.py": ["--lines", "50", "--repeat", "1"],
    "bench_report.py": ["--cases", "50", "--console-cases", "20", "--repeat", "1", "--no-browser"],
    "bench_review.py": ["--repeat", "1"],
    "bench_run.py": ["--cases", "20", "--repeat", "1", "--big", "50"],
    "bench_scale.py": ["--sizes", "20,40", "--repeat", "1"],
    "bench_scoring.py": ["--cases", "50", "--texts", "20", "--repeat", "1", "--skip-embeddings"],
    "bench_state.py": ["--small", "2", "--large", "4", "--repeat", "1"],
    "bench_stats.py": ["--cases", "50", "--trials", "2", "--repeat", "1"],
    "bench_tau_retail.py": ["--calls", "20", "--repeat", "1"],
    "bench_turns.py": ["--cases", "5", "--repeat", "1"],
    "bench_validate.py": ["--repeat", "1", "--cases", "50", "--big", "200"],
    "bench_variants.py": ["--cases", "10", "--repeat", "1"],
    "same_outputs.py": ["--against", str(ROOT), "--sizes", "20"],
}
"""Script -> tiny arguments. Each prints `GOAL ...` lines but the two in FIGURES."""

FIGURES = {"bench_records.py": "RATIO ", "bench_scale.py": "replay s", "bench_ray.py": "items/s"}
"""Scripts with no goal at tiny sizes -> the line that shows their figures came out
(bench_records compares msgspec with pydantic; bench_scale's goals need 50,000 cases; bench_ray
measures what Ray costs and has no goal)."""

NEEDS = {"bench_ray.py": "ray"}
"""Scripts of an optional extra -> the module they need (skipped, saying so, without it)."""

NOT_RUN = {"bench_tests.py": "it runs the test suite itself"}


def test_every_benchmark_is_run_here_or_says_why_not() -> None:
    """A new script in benchmarks/ cannot be forgotten by this module."""
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(QUICK) | set(NOT_RUN)


@pytest.mark.parametrize("script", sorted(QUICK))
def test_a_benchmark_runs_to_its_figures(script: str) -> None:
    if script in NEEDS:
        pytest.importorskip(NEEDS[script], reason=f"{script} needs the {NEEDS[script]} extra")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *QUICK[script]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr + done.stdout, (done.stdout + done.stderr)[-3000:]
    assert FIGURES.get(script, "GOAL ") in done.stdout, done.stdout[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("GOAL ")]
    assert all(GOAL_LINE.fullmatch(line) for line in lines), lines
