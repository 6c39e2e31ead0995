"""How `validate` and a replayed `run` grow with the number of cases: time and peak memory.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--sizes 500,5000,50000] [--big] [--repeat 1]
[--profile DIR] [--against CHECKOUT]``

For each size it writes a generated suite (10 tools; each case offers 3 to 5 of them, expects
one call with 2 arguments judged by a binary and a similarity critic) and, once, its
recordings (synthesised from the plan: one recorded answer per item, nine in ten of them the
expected call, the rest a wrong id). Then it times whole-process `evalspec validate SUITE` and
`evalspec run SUITE --record offline` (replay only: no model is called) and prints the peak
RSS of each: the growth curve. `--big` adds 200,000 cases. `--profile DIR` also writes cProfile
dumps of validate and replay at the largest size (read them with `python -m pstats`).

`--against CHECKOUT` compares this tree with another checkout of evalspec (say, main) instead:
at each size, the replayed run and the HTML report of its run directory (`evalspec view`), each
run `--repeat` times by both trees alternately (same machine load), CPU seconds, with the
median ratio this/other of the pairs.

Goals (issue 13): validate of 50,000 cases <= 5 s and <= 300 MB; replay run of 50,000 cases
<= 10 s and <= 400 MB; peak memory sub-linear in the case count (RSS per case falls as the
suite grows: the 50k/5k memory ratio is printed against the 10x case ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _common import (
    PYTHON,
    REPO,
    byte_compile,
    evalspec_cmd,
    goal,
    interleave,
    machine,
    paired_ratio,
    run_child,
    summary,
)

TOOLS = [f"tool_{n}" for n in range(10)]
WORDS = ["report", "launch", "lunch", "review", "budget", "audit", "offsite", "hiring"]
MODEL = "fake-model"


def _q(text: str) -> str:
    return json.dumps(text)


def make_suite(cases: int) -> str:
    """A suite with `cases` cases; each line of YAML is one case (flow style, compact)."""
    lines = [
        f"suite: scale-{cases}",
        "system: You are a helpful assistant with tools.",
        f"models: [{{name: m, model: {MODEL}, base_url: 'http://127.0.0.1:9/v1'}}]",
        "run: {mode: single_turn, concurrency: 32}",
        "critics: {id: binary, note: similarity}",
        "tools:",
    ]
    for name in TOOLS:
        lines.append(
            f"  - {{name: {name}, description: {_q('Benchmark tool ' + name + '.')}, "
            "parameters: {type: object, properties: {id: {type: string}, "
            "note: {type: string}}, required: [id, note]}, responses: [{output: {ok: true}}]}"
        )
    lines.append("cases:")
    for i in range(cases):
        offered = [TOOLS[(i + k) % len(TOOLS)] for k in range(3 + i % 3)]
        note = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} {i}"
        lines.append(
            f"  - {{name: c{i}, user: {_q(f'Please file request {i}: {note}.')}, "
            f"tools: [{', '.join(offered)}], "
            f"expect: {{tool_calls: [{{{offered[0]}: {{id: r{i}, note: {_q(note)}}}}}]}}}}"
        )
    return "\n".join(lines) + "\n"


def write_recordings(suite_path: Path, out: Path) -> int:
    """One recorded answer per plan item, keyed as the runner keys its first request."""
    sys.path.insert(0, str(REPO))
    from evalspec._plan import compile_plan, request_key
    from evalspec._suite.validate import load_suite

    suite = load_suite(suite_path)
    plan = compile_plan(suite)
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for n, item in enumerate(plan.items, start=1):
            call = item.case.expect.tool_calls[0]
            args = dict(call.args)
            if n % 10 == 0:
                args["id"] = "wrong"
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": call.tool, "arguments": json.dumps(args)},
                    }
                ],
            }
            entry = {
                "key": request_key(item.model, list(item.messages), list(item.tools), item.trial),
                "model": MODEL,
                "label": item.label,
                "request": {
                    "messages": list(item.messages),
                    "tools": list(item.tools),
                    "params": {},
                },
                "response": {
                    "message": message,
                    "finish_reason": "tool_calls",
                    "usage": {"prompt_tokens": 120, "completion_tokens": 20},
                    "latency_s": 0.05,
                },
                "recorded_at": "2026-11-23T00:00:00+00:00",
            }
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
    return n


def replay_args(suite: Path, recordings: Path, out: Path) -> list[str]:
    """`evalspec run` replaying only (no model is called)."""
    return [
        "run",
        str(suite),
        "--record",
        "offline",
        "--recordings",
        str(recordings),
        "--out",
        str(out),
    ]


def _measure(cmd: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float, str]:
    walls, rss, last = [], [], ""
    for _ in range(repeat):
        child = run_child(cmd, env=env)
        if child.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd[:3])} failed ({child.returncode}): {child.stderr[-3000:]}")
        walls.append(child.wall)
        rss.append(child.maxrss_mb)
        last = (child.stdout.strip().splitlines() or [""])[-1]
    return statistics.median(walls), max(rss), last


def _profile(suite: Path, recordings: Path, out_dir: Path, tmp: Path) -> None:
    """cProfile dumps of the two commands, run in-process through the CLI entry point."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, argv in (
        ("validate", ["validate", str(suite)]),
        ("replay", replay_args(suite, recordings, tmp / "profile-run")),
    ):
        dump = out_dir / f"{name}.prof"
        code = (
            "import cProfile, sys\n"
            "from evalspec._cli import app\n"
            "def main():\n"
            "    try:\n"
            f"        app({argv!r}, prog_name='evalspec')\n"
            "    except SystemExit:\n"
            "        pass\n"
            f"cProfile.run('main()', {str(dump)!r})\n"
        )
        run_child([PYTHON, "-c", code], env={"EVALSPEC_CACHE_DIR": str(tmp / "cache")})
        print(f"    profile of {name}: {dump} (python -m pstats {dump})")


def compare_trees(other: Path, sizes: list[int], repeat: int) -> None:
    """Replay and HTML render by this tree and by `other`, interleaved: CPU seconds, ratios."""
    trees = {"this": REPO, "other": other.resolve()}
    print(f"this: {REPO}; other: {trees['other']} (both: python -m evalspec)")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        for n in sizes:
            _compare_size(n, Path(tmp_name), trees, repeat)


def _compare_size(n: int, tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    suite = tmp / f"scale{n}.yaml"
    suite.write_text(make_suite(n), encoding="utf-8")
    recordings = tmp / f"scale{n}.recordings.jsonl"
    write_recordings(suite, recordings)
    runs = iter(range(10**6))

    def cpu(tree: str, args: list[str]) -> float:
        env = {"PYTHONPATH": str(trees[tree]), "EVALSPEC_CACHE_DIR": str(tmp / "cache")}
        # Not from the repository root: `python -m` puts the working directory first on the
        # path, so both trees would import the one there.
        child = run_child([PYTHON, "-m", "evalspec", *args], env=env, cwd=tmp)
        if child.returncode not in (0, 1):
            sys.exit(f"{tree}: {' '.join(args[:2])} failed: {child.stderr[-3000:]}")
        return child.cpu_s

    def replay(tree: str) -> float:
        return cpu(tree, replay_args(suite, recordings, tmp / f"run{n}-{next(runs)}"))

    page = ["view", str(tmp / f"run{n}-0"), "-o", str(tmp / "page.html"), "--no-open"]
    replays = interleave({t: (lambda t=t: replay(t)) for t in trees}, repeat)
    views = interleave({t: (lambda t=t: cpu(t, page)) for t in trees}, repeat)
    for what, times in (("replay", replays), ("html view", views)):
        for tree in trees:
            print(f"{n:>8} {what:>9} {tree:>5}: {summary(times[tree])}")
        ratio = paired_ratio(times["this"], times["other"])
        print(f"{n:>8} {what:>9} RATIO this/other CPU: {ratio:.3f}", flush=True)


def main() -> None:
    # Suites this large are refused unless the machine's operator allows them.
    os.environ.setdefault("EVALSPEC_MAX_CASES", "1000000")
    os.environ.setdefault("EVALSPEC_MAX_SUITE_BYTES", str(256 * 1024 * 1024))
    os.environ.setdefault("EVALSPEC_MAX_SUITE_VALUES", str(100_000_000))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000", help="case counts, comma-separated")
    parser.add_argument("--big", action="store_true", help="add 200,000 cases")
    parser.add_argument("--repeat", type=int, default=1, help="runs per command and size")
    parser.add_argument("--profile", type=Path, help="write cProfile dumps here (largest size)")
    parser.add_argument("--against", type=Path, help="another checkout: before/after ratios")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big:
        sizes.append(200_000)
    if args.against:
        print(f"machine: {machine()}")
        compare_trees(args.against, sizes, args.repeat)
        return

    byte_compile()
    print(f"machine: {machine()}")
    cli = evalspec_cmd()
    curve: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        env = {"EVALSPEC_CACHE_DIR": str(tmp / "cache")}
        print(
            f"{'cases':>8} {'validate s':>11} {'MiB':>6} {'KiB/case':>9} "
            f"{'replay s':>9} {'MiB':>6} {'KiB/case':>9}  run says"
        )
        for n in sizes:
            suite = tmp / f"scale{n}.yaml"
            suite.write_text(make_suite(n), encoding="utf-8")
            recordings = tmp / f"scale{n}.recordings.jsonl"
            write_recordings(suite, recordings)
            v_wall, v_rss, _ = _measure([*cli, "validate", str(suite)], args.repeat, env)
            replay = [*cli, *replay_args(suite, recordings, tmp / f"run{n}")]
            r_wall, r_rss, said = _measure(replay, args.repeat, env)
            curve[n] = {"v_wall": v_wall, "v_rss": v_rss, "r_wall": r_wall, "r_rss": r_rss}
            print(
                f"{n:>8} {v_wall:>11.2f} {v_rss:>6.0f} {v_rss * 1024 / n:>9.1f} "
                f"{r_wall:>9.2f} {r_rss:>6.0f} {r_rss * 1024 / n:>9.1f}  {said[:80]}",
                flush=True,
            )
        if args.profile:
            n = sizes[-1]
            _profile(tmp / f"scale{n}.yaml", tmp / f"scale{n}.recordings.jsonl", args.profile, tmp)

    if 50_000 in curve:
        c = curve[50_000]
        goal("validate_50000_cases_seconds", c["v_wall"], "<=", 5.0, "{:.2f}")
        goal("validate_50000_cases_peak_rss_mb", c["v_rss"], "<=", 300.0, "{:.0f}")
        goal("replay_50000_cases_seconds", c["r_wall"], "<=", 10.0, "{:.2f}")
        goal("replay_50000_cases_peak_rss_mb", c["r_rss"], "<=", 400.0, "{:.0f}")
    if 5_000 in curve and 50_000 in curve:
        for key, label in (("v_rss", "validate"), ("r_rss", "replay")):
            growth = curve[50_000][key] / curve[5_000][key]
            goal(f"{label}_peak_rss_growth_5k_to_50k", growth, "<", 10.0, "{:.2f}")


if __name__ == "__main__":
    main()
