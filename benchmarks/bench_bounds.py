"""Bounds by trust: a person's large suite runs with default settings; a hostile pull request
is refused within review's budget.

Run: ``.venv/bin/python benchmarks/bench_bounds.py [--cases 50000] [--parts 10]``

1. A 50,000-case suite split over 10 included files (bench_scale.py's cases), validated and
   replayed with no EVALSPEC_* limit set: time and peak memory, against the same cases in one
   file (the baseline, in the same run).
2. Hostile pull requests under `evalspec review` (default limits, default 600 s budget): a 99 KB
   suite of 10,000 matrix rows x `trials: 100` (before: 41-71 s, 1.7 GB), 100,000 tools (before:
   151 s, 1 GB to validate), one 1 MB text aliased over a 10,000-row matrix (before: 66 s to
   validate, 121 s to review), 2,000 x 2,000 calls in one case (before: 121 s, 2.9 GB), a
   catastrophic `pattern` (before: no end), a link and a 300 MB asset in the base (before:
   exit 1; 597 MB peak). Each must end with its exit code, in seconds and under 300 MB.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import byte_compile, evalspec_cmd, goal, machine, run_child
from bench_review import git
from bench_scale import make_suite, replay_args, split_suite, write_recordings

LIMIT_VARIABLES = [name for name in os.environ if name.startswith("EVALSPEC_MAX")]


def own_suite(cases: int, parts: int, tmp: Path) -> None:
    cli = evalspec_cmd()
    env = {"EVALSPEC_CACHE_DIR": str(tmp / "cache")}
    text = make_suite(cases)
    (tmp / "split").mkdir()
    split = split_suite(text, tmp / "split", parts)
    whole = tmp / "whole.yaml"
    whole.write_text(text, encoding="utf-8")
    recordings = tmp / "recordings.jsonl"
    write_recordings(split, recordings)
    raised = {
        **env,
        "EVALSPEC_MAX_SUITE_BYTES": str(256 * 1024 * 1024),
        "EVALSPEC_MAX_SUITE_VALUES": str(100_000_000),
    }
    rows = {}
    for name, suite, extra in (("one file", whole, raised), ("includes", split, env)):
        v = run_child([*cli, "validate", str(suite)], env=extra)
        r = run_child([*cli, *replay_args(suite, recordings, tmp / f"run-{name}")], env=extra)
        rows[name] = (v, r)
        print(
            f"  {name:<9} validate {v.wall:6.2f} s {v.maxrss_mb:5.0f} MiB (exit {v.returncode})"
            f"   replay {r.wall:6.2f} s {r.maxrss_mb:5.0f} MiB (exit {r.returncode})"
            f"   {(v.stdout + v.stderr).strip().splitlines()[-1][:70]}"
        )
    (v, r), (v0, r0) = rows["includes"], rows["one file"]
    goal(f"validate_{cases}_cases_over_includes_exit", v.returncode, "<=", 0, "{:.0f}")
    # Exit 1: one answer in ten is wrong, so some cases fail; 2 would be a refusal.
    goal(f"replay_{cases}_cases_over_includes_exit", r.returncode, "<=", 1, "{:.0f}")
    goal("validate_includes_vs_one_file_time", v.wall / v0.wall, "<=", 1.5, "{:.2f}")
    goal("validate_includes_vs_one_file_rss", v.maxrss_mb / v0.maxrss_mb, "<=", 1.5, "{:.2f}")
    goal("replay_includes_vs_one_file_rss", r.maxrss_mb / r0.maxrss_mb, "<=", 1.5, "{:.2f}")
    goal(f"validate_{cases}_over_includes_peak_rss_mb", v.maxrss_mb, "<=", 300.0, "{:.0f}")
    goal(f"replay_{cases}_over_includes_peak_rss_mb", r.maxrss_mb, "<=", 400.0, "{:.0f}")


MINI = """\
suite: mini
models: [gpt-4o-mini]
tools:
  - name: get_weather
    parameters: {type: object, properties: {city: {type: string, pattern: PATTERN}}}
cases:
"""


def hostile_prs() -> dict[str, dict[str, str | bytes]]:
    """Files each pull request adds, by name."""
    rows = ", ".join(str(i) for i in range(10_000))
    plan = MINI.replace("cases:\n", "trials: 100\ncases:\n") + (
        "  - name: 'w {{ n }}'\n    matrix: {n: [" + rows + "]}\n"
        "    user: Weather?\n    expect: {tool_calls: [{get_weather: {city: Paris}}]}\n"
    )
    tools = "suite: mini\nmodels: [gpt-4o-mini]\ntools:\n" + "".join(
        f"  - {{name: t{i}, parameters: {{type: object, properties: {{a: {{type: string}}}}}}}}\n"
        for i in range(100_000)
    )
    tools += "cases:\n  - {name: c, user: hi, expect: {tool_calls: [{t0: {a: x}}]}}\n"
    alias = MINI.replace("cases:\n", f'vars: {{big: &b "{"x" * 1_000_000}"}}\ncases:\n') + (
        "  - name: 'w {{ t | length }} {{ n }}'\n    matrix:\n      t: ["
        + ", ".join(["*b"] * 10_000)
        + "]\n    user: Weather?\n    expect: {tool_calls: [{get_weather: {city: Paris}}]}\n"
    )
    calls = "".join(f"        - get_weather: {{city: c{i}}}\n" for i in range(2000))
    many = MINI + ("  - name: w\n    user: Weather?\n    expect:\n      tool_calls:\n" + calls)
    evil = MINI.replace("PATTERN", "'^(a+)+$'") + (
        "  - name: w\n    user: Weather?\n"
        f"    expect: {{tool_calls: [{{get_weather: {{city: '{'a' * 34}!'}}}}]}}\n"
    )
    return {
        "plan of 10,000 rows x 100 trials": {"suites/p.yaml": plan.replace("PATTERN", "'.*'")},
        "100,000 tools": {"suites/p.yaml": tools},
        "1 MB aliased over 10,000 rows": {"suites/p.yaml": alias.replace("PATTERN", "'.*'")},
        "2,000 expected calls in one case": {"suites/p.yaml": many.replace("PATTERN", "'.*'")},
        "pattern ^(a+)+$": {"suites/p.yaml": evil},
    }


def hostile_review(tmp: Path) -> None:
    cli = evalspec_cmd()
    env = {"EVALSPEC_CACHE_DIR": str(tmp / "cache")}
    for name, files in hostile_prs().items():
        repo = tmp / "pr" / name.replace(" ", "_").replace(",", "")
        (repo / "suites").mkdir(parents=True)
        (repo / "suites" / "ok.yaml").write_text(
            MINI.replace("PATTERN", "'.*'")
            + "  - {name: c, user: hi, expect: {tool_calls: [{get_weather: {city: x}}]}}\n",
            encoding="utf-8",
        )
        (repo / "link").symlink_to("/etc")
        with open(repo / "asset.bin", "wb") as fh:  # 300 MB of base the review never needs
            fh.truncate(300 * 1024 * 1024)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "base")
        git(repo, "checkout", "-q", "-b", "pr")
        for rel, content in files.items():
            (repo / rel).write_text(str(content), encoding="utf-8")
        child = run_child([*cli, "review", "--base-ref", "main"], env=env, cwd=repo)
        said = (child.stdout + child.stderr).strip().splitlines()[-1][:110]
        code = child.returncode
        print(f"  {name:<34} {child.wall:6.2f} s {child.maxrss_mb:5.0f} MiB exit {code}")
        print(f"      {said}")
        key = name.split(" ")[0].replace(",", "")
        goal(f"review_{key}_exit_2", float(child.returncode == 2), ">=", 1.0, "{:.0f}")
        goal(f"review_{key}_seconds", child.wall, "<=", 60.0, "{:.1f}")
        goal(f"review_{key}_peak_rss_mb", child.maxrss_mb, "<=", 300.0, "{:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--skip-own", action="store_true", help="only the hostile reviews")
    args = parser.parse_args()
    for name in LIMIT_VARIABLES:  # default settings: what a person gets without configuring
        del os.environ[name]
    byte_compile()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_own:
            print(f"{args.cases} cases, default settings (one file: limits raised, the baseline)")
            own_suite(args.cases, args.parts, tmp)
        print("hostile pull requests under `evalspec review --base-ref main`")
        hostile_review(tmp)


if __name__ == "__main__":
    main()
