"""Whether this tree writes what another checkout writes: every output of a replay, compared.

Run: ``.venv/bin/python benchmarks/same_outputs.py --against CHECKOUT [--sizes 500,50000]``

Each example suite (`suites/*.yaml`, its own recordings) and each generated suite of
bench_scale (cases over included files of 10,000) is replayed by both trees (`run --record
offline --markdown --junit`), and their transcripts.jsonl, results.json (but `created`),
Markdown, JUnit (but times) and console output (but elapsed seconds and paths) compared byte
for byte. A change that should only make a run cheaper must leave every one the same.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import tempfile
from pathlib import Path

from _common import PYTHON, REPO, byte_compile, goal, run_child
from bench_scale import _case_files

OUTPUTS = ("run/transcripts.jsonl", "run/results.json", "report.md", "junit.xml", "console.txt")
_STAMPS = {
    "run/results.json": [(r'"created": "[^"]*"', '"created": X')],
    "junit.xml": [(r'time="[^"]*"', "time=X")],
    "console.txt": [(r"\d+\.\d+ ?s\b", "Xs")],
    "report.md": [(r"\d+\.\d+ ?s\b", "Xs")],
}
"""What differs between two runs of the same code: when, and how long."""


def replay(tree: Path, suite: Path, recordings: Path | None, out: Path, tmp: Path) -> None:
    """Every output of one replay by `tree`, into `out` (the console's into console.txt)."""
    args = ["run", str(suite), "--record", "offline", "--out", str(out / "run")]
    args += ["--markdown", str(out / "report.md"), "--junit", str(out / "junit.xml")]
    args += ["--recordings", str(recordings)] if recordings else []
    env = {"PYTHONPATH": str(tree), "EVALSPEC_CACHE_DIR": str(tmp / "cache"), "COLUMNS": "120"}
    child = run_child([PYTHON, "-m", "evalspec", *args], env=env, cwd=tmp)
    out.mkdir(parents=True, exist_ok=True)
    said = child.stdout.replace(str(out), "OUT") + f"exit {child.returncode}\n"
    (out / "console.txt").write_text(said, encoding="utf-8")


def differences(a: Path, b: Path) -> list[str]:
    """The outputs of two replays that differ (a few lines of diff each); empty if none."""
    found = []
    for name in OUTPUTS:
        x, y = (_shown(d / name, name) for d in (a, b))
        if x != y:
            diff = difflib.unified_diff(x.splitlines(), y.splitlines(), lineterm="", n=0)
            found.append(f"{name}: " + " | ".join(line[:160] for line in list(diff)[2:8]))
    return found


def _shown(path: Path, name: str) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else "(not written)"
    for pattern, stand_in in _STAMPS.get(name, []):
        text = re.sub(pattern, stand_in, text)
    return text


def main() -> None:
    os.environ.setdefault("EVALSPEC_MAX_CASES", "1000000")
    os.environ.setdefault("EVALSPEC_MAX_SUITE_BYTES", str(256 * 1024 * 1024))
    os.environ.setdefault("EVALSPEC_MAX_SUITE_VALUES", str(100_000_000))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--sizes", default="500,5000", help="generated suites, comma-separated")
    args = parser.parse_args()
    trees = {"this": REPO, "other": args.against.resolve()}
    for tree in trees.values():
        byte_compile(tree)
    with tempfile.TemporaryDirectory(prefix="same-outputs-") as tmp_name:
        tmp = Path(tmp_name)
        suites: list[tuple[str, Path, Path | None]] = [
            (s.stem, s, None) for s in sorted((REPO / "suites").glob("*.yaml"))
        ]
        for n in (int(s) for s in args.sizes.split(",") if s):
            suite, recordings = _case_files(n, tmp)
            suites.append((f"{n} cases", suite, recordings))
        same = 0
        for name, suite, recordings in suites:
            outs = {t: tmp / f"{name}-{t}" for t in trees}
            for t, tree in trees.items():
                replay(tree, suite, recordings, outs[t], tmp)
            found = differences(outs["this"], outs["other"])
            same += not found
            print(f"{name}: {'identical' if not found else 'DIFFERENT'}", flush=True)
            for line in found:
                print(f"    {line}")
    goal("replays_with_identical_outputs", same, ">=", len(suites), "{:.0f}")


if __name__ == "__main__":
    main()
