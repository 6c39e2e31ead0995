"""`evalspec review` over the example suites with warm caches, as a pull request runs it.

Run: ``.venv/bin/python benchmarks/bench_review.py [--repeat 5]``

A temporary git repository holds suites/ (every example suite with its recordings) on `main`
and, on `pr`, the sample change of docs/how-to/review.md (a threshold, a critic, a simulated
response, an endpoint and one user message). Measured in one run, alternated:
  (a) whole-process `evalspec review --base-ref main --markdown comment.md` with the embedding
      cache warm (one untimed run fills it first; EVALSPEC_CACHE_DIR points at a fresh folder);
  (b) the baseline: whole-process `evalspec validate 'suites/*.yaml'` on the same repository,
      the cheapest command that loads all three suites.
Goals: (a) at most 2 s; and no `import torch` (nor sentence_transformers) in (a) once every
similarity it needs is in the embedding cache.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from _common import (
    REPO,
    byte_compile,
    evalspec_cmd,
    goal,
    goal_flag,
    interleave,
    machine,
    modules_after,
    paired_ratio,
    run_child,
    summary,
)

SAMPLE_CHANGE = {
    "slack.yaml": [
        ("fail_threshold: 0.85", "fail_threshold: 0.9"),
        ("message: {similarity: 0.75, weight: 0.5}", "message: {similarity: 0.99, weight: 0.5}"),
        ("that the report is ready.", "that the report is done."),
    ],
    "weather.yaml": [
        ("city: Paris, temperature: 21, unit", "city: Paris, temperature: 30, unit"),
        (
            "    params: {temperature: 0, seed: 7, parallel_tool_calls: true}\n",
            "    params: {temperature: 0, seed: 7, parallel_tool_calls: true}\n"
            "    base_url: http://203.0.113.7/v1\n",
        ),
    ],
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repository(root: Path) -> Path:
    repo = root / "repo"
    shutil.copytree(REPO / "suites", repo / "suites")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    for name, edits in SAMPLE_CHANGE.items():
        path = repo / "suites" / name
        text = path.read_text(encoding="utf-8")
        for old, new in edits:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "sample change")
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    byte_compile()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        repo = make_repository(Path(tmp))
        env = {"EVALSPEC_CACHE_DIR": str(Path(tmp) / "cache")}
        review = [*evalspec_cmd(), "review", "--base-ref", "main", "--markdown", "comment.md"]
        validate = [*evalspec_cmd(), "validate", "suites/*.yaml"]

        cold = run_child(review, env=env, cwd=repo)
        print(f"cold run (fills the embedding cache): {cold.wall:.3f} s, exit {cold.returncode}")
        if cold.returncode not in (0, 1, 3, 4):
            raise SystemExit(f"review failed: {cold.stderr[-2000:]}")

        def timed(cmd: list[str]) -> float:
            child = run_child(cmd, env=env, cwd=repo)
            return child.wall

        times = interleave(
            {"review": lambda: timed(review), "validate": lambda: timed(validate)}, args.repeat
        )
        n = len(list((repo / "suites").glob("*.yaml")))
        print(f"evalspec review ({n} suites, warm): {summary(times['review'])}")
        print(f"evalspec validate (baseline):     {summary(times['validate'])}")
        ratio = paired_ratio(times["review"], times["validate"])
        print(f"review / validate: {ratio:.2f}x")
        goal("review_example_suites_warm_seconds", statistics.median(times["review"]), "<=", 2.0)

        loaded = modules_after(["review", "--base-ref", "main"], env=env, cwd=repo)
        heavy = sorted({"torch", "sentence_transformers"} & loaded)
        goal_flag(
            "review_warm_imports_no_torch",
            ", ".join(heavy) or "none",
            not heavy,
            "none of torch, sentence_transformers",
        )


if __name__ == "__main__":
    main()
