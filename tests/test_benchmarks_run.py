"""The quick benchmarks still run, at tiny sizes: a record or API change once left two of them
failing with a TypeError that nothing noticed until someone needed their figures.

Only that each script runs to its figures is checked, never a time or a ratio (tiny sizes
measure nothing; the figures come from full runs, see benchmarks/README.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

QUICK = {
    "bench_state.py": ["--small", "2", "--large", "4", "--repeat", "1"],
    "bench_records.py": ["--lines", "50", "--repeat", "1"],
    "bench_stats.py": ["--cases", "50", "--trials", "2", "--repeat", "1"],
    "bench_turns.py": ["--cases", "5", "--repeat", "1"],
    "bench_import_traces.py": ["--small", "20", "--large", "40", "--turns-apart"],
    "bench_faults.py": ["--cases", "5", "--repeat", "1"],
}
"""Script -> tiny arguments. Each prints `GOAL ...` lines, or `RATIO ...` for a comparison
without a goal (bench_records: msgspec against pydantic)."""


@pytest.mark.parametrize("script", sorted(QUICK))
def test_a_quick_benchmark_runs_to_its_figures(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *QUICK[script]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "GOAL " in done.stdout or "RATIO " in done.stdout, done.stdout[-2000:]
