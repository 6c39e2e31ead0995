"""Helpers shared by the benchmark scripts: child processes with their own peak memory,
interleaved repetitions, and one uniform `GOAL ...` line per goal.

The scripts report; they never gate: every one exits 0 whatever it measures.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
HEAVY = ("torch", "sentence_transformers", "transformers", "openai", "sklearn", "scipy")
"""Modules a command that does not need them should never import."""


def evalspec_cmd() -> list[str]:
    """The installed console script beside this interpreter, as a user would run it."""
    script = Path(PYTHON).parent / "evalspec"
    if script.exists():
        return [str(script)]
    found = shutil.which("evalspec")
    return [found] if found else [PYTHON, "-m", "evalspec"]


def byte_compile(tree: Path = REPO) -> None:
    """Compile evalspec to .pyc first, as `pip install` does, so start-up is not
    dominated by compiling our own sources (PYTHONDONTWRITEBYTECODE=1 would redo it each run).
    A comparison compiles both trees: one tree recompiling at every start and not the other
    made a 500-case replay look 36% slower."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(tree / "evalspec")], check=True)
    print(f"byte-compiled {tree}/evalspec first (python -m compileall -q), as an install would")


def machine() -> str:
    return f"{os.cpu_count()} cpus, python {sys.version.split()[0]}, {sys.platform}"


@dataclass(frozen=True)
class Child:
    wall: float
    """Seconds from spawn to exit."""
    maxrss_mb: float
    """Peak resident memory of this child alone (ru_maxrss), in MiB."""
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0
    """CPU seconds (user + system) of this child: steadier than wall time on a busy machine."""


_LAUNCHER = """
import os, sys, time
out = sys.argv[1]
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(out, "w") as fh:
    fh.write(f"{wall} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} "
             f"{usage.ru_utime + usage.ru_stime}")
"""
"""Spawns the measured command from a small process: on Linux a child's ru_maxrss starts at
the memory of the process it was spawned from, so spawning straight from a benchmark that holds
a 600 MiB model would report 600 MiB for `evalspec validate`. The launcher also keeps its own
start-up out of the wall time."""


def run_child(cmd: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path = REPO) -> Child:
    """Run a command to completion; its wall time and its own peak RSS, via a small launcher."""
    with tempfile.TemporaryDirectory(prefix="bench-child-") as tmp:
        stats = Path(tmp) / "stats"
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        with out.open("wb") as fo, err.open("wb") as fe:
            subprocess.run(
                [PYTHON, "-S", "-c", _LAUNCHER, str(stats), *cmd],
                stdout=fo,
                stderr=fe,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                check=False,
            )
        stdout = out.read_text(errors="replace")
        stderr = err.read_text(errors="replace")
        if not stats.exists():
            raise RuntimeError(f"could not run {cmd}: {stderr[-2000:]}")
        wall, maxrss_kib, code, cpu = stats.read_text().split()
    # Linux reports ru_maxrss in KiB.
    return Child(float(wall), int(maxrss_kib) / 1024, int(code), stdout, stderr, float(cpu))


def interleave(subjects: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    """Run each subject `repeat` times, alternating them, so machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(repeat):
        for name, fn in subjects.items():
            times[name].append(fn())
    return times


def paired_ratio(subject: list[float], baseline: list[float]) -> float:
    """Median of subject/baseline over runs made back to back: each pair saw about the same
    machine load, so this is steadier than a ratio of medians when other work comes and goes."""
    return statistics.median(s / b for s, b in zip(subject, baseline, strict=True))


def summary(values: list[float], unit: str = "s", scale: float = 1.0) -> str:
    """`best x, median y (runs: ...)`."""
    runs = ", ".join(f"{v * scale:.3f}" for v in values)
    return (
        f"best {min(values) * scale:.3f} {unit}, median {statistics.median(values) * scale:.3f} "
        f"{unit} (runs: {runs})"
    )


def goal(name: str, value: float, op: str, target: float, fmt: str = "{:.3f}") -> bool:
    """Print `GOAL name: value (goal op target) PASS|FAIL`; return whether it passed."""
    ok = value <= target if op == "<=" else value >= target if op == ">=" else value < target
    verdict = "PASS" if ok else "FAIL"
    print(f"GOAL {name}: {fmt.format(value)} (goal {op} {fmt.format(target)}) {verdict}")
    return ok


def goal_flag(name: str, value: str, ok: bool, want: str) -> bool:
    """A yes/no goal: `GOAL name: value (goal want) PASS|FAIL`."""
    print(f"GOAL {name}: {value} (goal {want}) {'PASS' if ok else 'FAIL'}")
    return ok


_MODULES_PROBE = """
import json, sys
from evalspec._cli import app
try:
    app(sys.argv[2:], prog_name="evalspec")
except SystemExit:
    pass
with open(sys.argv[1], "w") as fh:
    json.dump(sorted(sys.modules), fh)
"""


def modules_after(
    args: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path = REPO
) -> set[str]:
    """Top-level module names loaded by `evalspec ARGS` (run in a fresh child process)."""
    with tempfile.TemporaryDirectory(prefix="bench-modules-") as tmp:
        dump = Path(tmp) / "modules.json"
        child = run_child([PYTHON, "-c", _MODULES_PROBE, str(dump), *args], env=env, cwd=cwd)
        if not dump.exists():
            raise RuntimeError(f"probe failed: {child.stderr[-2000:]}")
        names = json.loads(dump.read_text())
    return {n.split(".")[0] for n in names}
