"""How `validate` and a replayed `run` grow with the number of cases: time and peak memory.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--sizes 500,5000,50000] [--big] [--repeat 1]
[--profile DIR] [--against CHECKOUT [--beside N] [--record N] [--review N]]``

For each size it writes a generated suite (10 tools; each case offers 3 to 5 of them, expects
one call with 2 arguments judged by a binary and a similarity critic) and, once, its
recordings (synthesised from the plan: one recorded answer per item, nine in ten of them the
expected call, the rest a wrong id). Then it times whole-process `evalspec validate SUITE` and
`evalspec run SUITE --record offline` (replay only: no model is called) and prints the peak
RSS of each, and the hand-written replay's time (below): the growth curve. `--big` adds
200,000 cases. `--profile DIR` also writes cProfile dumps of validate and replay at the largest
size (read them with `python -m pstats`).

`--against CHECKOUT` compares this tree with another checkout of evalspec (say, main) instead:
at each size (the suite's cases in included files of 10,000, the layout large suites use), the
replayed run and the HTML report of its run directory (`evalspec view`), each run `--repeat`
times by both trees alternately (same machine load): CPU and wall seconds, peak RSS, the median
ratio this/other of the pairs, each tree's largest replay against its smallest (issue 37:
<= 10x, and <= 300 MB), and each tree's replay CPU fitted as T(n) = F + c*n over the sizes.
Interleaved with both trees' replays runs the floor, a hand-written replay of the same suite
(`_plain_replay.py`: the positioned tree, the same request keys, the same judgement, the same
output lines, nothing else; the benchmark exits unless its transcripts.jsonl is byte for byte
evalspec's and it passed as many cases):
its own largest/smallest ratio and fit are printed beside the trees', and this tree's largest
replay is held to 2x of it (paired wall; issue 37's 10x restated, benchmarks/README.md).
With `--beside N` it also replays the smallest suite with its own embedding cache and beside
the cache of an N-case suite (vectors synthesised, written the way a run writes them: 1,000 texts
a shard; every second answer reworded, so the replay looks up
embeddings), interleaved (issue 37: <= 1.1x time, <= 1.2x memory). With `--record N` it also
records N cases against a local server answering at once (bench_run's, each answer's note
unlike the expected one), cold embedding cache, against the floor: the same 2N texts embedded
alone by the same model in one batched pass, load included (issue 37: <= 1.5x). With `--review N`
it also reviews a pull request on a git repository holding the N-case suite (over included files
of 10,000, with its recordings) that rewords the expected note of the first file's cases, by both
trees: `evalspec review --base-ref main` with no setting, so review's limit of 10,000 cases for a
pull request's suite applies (issue 37: within 1 GB, and said early: CPU and peak RSS printed).

Goals (issue 13): validate of 50,000 cases <= 5 s and <= 300 MB; replay run of 50,000 cases
<= 10 s and <= 400 MB; peak memory sub-linear in the case count (RSS per case falls as the
suite grows: the 50k/5k memory ratio is printed against the 10x case ratio).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

from _common import (
    PYTHON,
    REPO,
    Child,
    byte_compile,
    evalspec_cmd,
    goal,
    machine,
    paired_ratio,
    run_child,
    summary,
)

K = TypeVar("K", bound=Hashable)
TOOLS = [f"tool_{n}" for n in range(10)]
WORDS = ["report", "launch", "lunch", "review", "budget", "audit", "offsite", "hiring"]
MODEL = "fake-model"


def _q(text: str) -> str:
    return json.dumps(text)


def note_text(i: int) -> str:
    """Case i's `note` argument: the text its similarity critic embeds."""
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} {i}"


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
        note = note_text(i)
        lines.append(
            f"  - {{name: c{i}, user: {_q(f'Please file request {i}: {note}.')}, "
            f"tools: [{', '.join(offered)}], "
            f"expect: {{tool_calls: [{{{offered[0]}: {{id: r{i}, note: {_q(note)}}}}}]}}}}"
        )
    return "\n".join(lines) + "\n"


def reworded(note: str) -> str:
    """An answer's note that is not the expected one word for word: the similarity critic
    embeds both texts (identical texts score 1 without an embedding)."""
    return f"{note}, please"


def write_recordings(suite_path: Path, out: Path, reword_every: int = 0) -> int:
    """One recorded answer per plan item, keyed as the runner keys its first request; with
    `reword_every`, every such item's note is `reworded` (so the replay needs embeddings)."""
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
            if reword_every and n % reword_every == 0:
                args["note"] = reworded(str(args["note"]))
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


def split_suite(text: str, folder: Path, parts: int) -> Path:
    """The suite's head in suite.yaml and its cases spread over `parts` included files."""
    head, cases = text.split("cases:\n", 1)
    lines = cases.splitlines()
    size = -(-len(lines) // parts)
    includes = []
    for p in range(parts):
        chunk = lines[p * size : (p + 1) * size]
        (folder / f"cases{p}.yaml").write_text(
            "".join(line[2:] + "\n" for line in chunk), encoding="utf-8"
        )
        includes.append(f"  - include: cases{p}.yaml\n")
    suite = folder / "suite.yaml"
    suite.write_text(head + "cases:\n" + "".join(includes), encoding="utf-8")
    return suite


def replay_args(suite: Path, recordings: Path, out: Path, record: str = "offline") -> list[str]:
    """`evalspec run` replaying only (no model is called), or with another `--record` mode."""
    return [
        "run",
        str(suite),
        "--record",
        record,
        "--recordings",
        str(recordings),
        "--out",
        str(out),
    ]


def _measure(
    cmd: list[str], repeat: int, env: dict[str, str], out: Path | None = None
) -> tuple[float, float, str]:
    """Median wall time, peak memory and the last line said; `out` (a run directory the
    command writes) is removed before each run, as a run refuses a directory that holds one."""
    walls, rss, last = [], [], ""
    for _ in range(repeat):
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
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


def compare_trees(
    other: Path, sizes: list[int], repeat: int, beside: int, record: int = 0, review: int = 0
) -> None:
    """Replay and HTML render by this tree and by `other`, interleaved: CPU seconds, ratios."""
    trees = {"this": REPO, "other": other.resolve()}
    print(f"this: {REPO}; other: {trees['other']} (both: python -m evalspec)")
    for tree in trees.values():
        byte_compile(tree)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        if review:
            _compare_review(review, tmp, trees, repeat)
        if record:
            _compare_record(record, tmp, trees, repeat)
        if beside:
            _compare_beside(min(sizes), beside, tmp, trees, repeat)
        replays = {n: _compare_size(n, tmp, trees, repeat) for n in sizes}
        if len(sizes) > 1:
            _growth(replays, min(sizes), max(sizes))
            _fit(replays)


def _case_files(n: int, tmp: Path, reword_every: int = 0) -> tuple[Path, Path]:
    """The n-case suite over included files of 10,000 cases, and its recordings."""
    folder = tmp / f"suite{n}"
    folder.mkdir(exist_ok=True)
    suite = split_suite(make_suite(n), folder, -(-n // 10_000))
    recordings = tmp / f"scale{n}-{reword_every}.recordings.jsonl"
    if not recordings.exists():
        write_recordings(suite, recordings, reword_every)
    return suite, recordings


def _tree_runner(tmp: Path, trees: dict[str, Path]) -> Callable[..., Child]:
    """Runs `python -m evalspec ARGS` with one tree's code; exits on a failed command."""

    def run(tree: str, args: list[str], cache: Path | None = None) -> Child:
        env = {"PYTHONPATH": str(trees[tree]), "EVALSPEC_CACHE_DIR": str(cache or tmp / "cache")}
        # Not from the repository root: `python -m` puts the working directory first on the
        # path, so both trees would import the one there.
        child = run_child([PYTHON, "-m", "evalspec", *args], env=env, cwd=tmp)
        if child.returncode not in (0, 1):
            sys.exit(f"{tree}: {' '.join(args[:2])} failed: {child.stderr[-3000:]}")
        return child

    return run


def _compare_size(n: int, tmp: Path, trees: dict[str, Path], repeat: int) -> dict[str, list[Child]]:
    """The n-case replay by both trees and by the hand-written replay, interleaved; then the
    HTML view of a run directory by both trees."""
    suite, recordings = _case_files(n, tmp)
    run = _tree_runner(tmp, trees)
    runs = iter(range(10**6))

    def replay(tree: str) -> Child:
        return run(tree, replay_args(suite, recordings, tmp / f"run{n}-{next(runs)}"))

    def plain() -> Child:
        return plain_replay(suite, recordings, tmp / f"plain{n}")

    page = ["view", str(tmp / f"run{n}-0"), "-o", str(tmp / "page.html"), "--no-open"]
    subjects = {t: (lambda t=t: replay(t)) for t in trees}
    replays = _interleave_children({**subjects, PLAIN: plain}, repeat)
    check_plain_agrees(replays[PLAIN][-1], tmp / f"plain{n}", tmp / f"run{n}-0")
    views = _interleave_children({t: (lambda t=t: run(t, page)) for t in trees}, repeat)
    _print_children(f"{n:>8} {'replay':>9} {PLAIN:>5}", replays[PLAIN])
    for what, children in (("replay", replays), ("html view", views)):
        for tree in trees:
            _print_children(f"{n:>8} {what:>9} {tree:>5}", children[tree])
        cpu = {t: [c.cpu_s for c in children[t]] for t in trees}
        ratio = paired_ratio(cpu["this"], cpu["other"])
        print(f"{n:>8} {what:>9} RATIO this/other CPU: {ratio:.3f}", flush=True)
    for tree in trees:
        wall = paired_ratio([c.wall for c in replays[tree]], [c.wall for c in replays[PLAIN]])
        print(f"{n:>8} {'replay':>9} RATIO {tree}/{PLAIN} wall: {wall:.3f}", flush=True)
    return replays


PLAIN = "plain"
"""The hand-written replay (`_plain_replay.py`): what replaying these suites costs at least."""


def plain_replay(suite: Path, recordings: Path, out: Path) -> Child:
    """`_plain_replay.py` on the suite: the floor of a replay, measured like the trees' runs."""
    script = Path(__file__).with_name("_plain_replay.py")
    child = run_child([PYTHON, str(script), str(suite), str(recordings), str(out)])
    if child.returncode != 0:
        sys.exit(f"the plain replay failed: {child.stderr[-3000:]}")
    return child


def check_plain_agrees(plain: Child, plain_out: Path, run_dir: Path) -> None:
    """Exit unless the plain replay wrote transcripts.jsonl byte for byte as evalspec's run did
    and passed as many cases: a floor that read or judged the answers differently would not be
    doing the same work."""
    said = re.fullmatch(r"(\d+) cases, (\d+) passed", plain.stdout.strip())
    models = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["models"]
    counted = (sum(m["cases"] for m in models), sum(m["passed"] for m in models))
    if said is None or (int(said[1]), int(said[2])) != counted:
        sys.exit(f"the plain replay said {plain.stdout.strip()!r}; evalspec counted {counted}")
    lines = [d / "transcripts.jsonl" for d in (plain_out, run_dir)]
    if not filecmp.cmp(*lines, shallow=False):
        sys.exit(f"the plain replay's {lines[0]} differs from evalspec's {lines[1]}")


def _interleave_children(
    subjects: dict[K, Callable[[], Child]], repeat: int
) -> dict[K, list[Child]]:
    """Each subject `repeat` times, alternating, so machine noise hits all alike."""
    children: dict[K, list[Child]] = {name: [] for name in subjects}
    for _ in range(repeat):
        for name, fn in subjects.items():
            children[name].append(fn())
    return children


def _print_children(label: str, children: list[Child]) -> None:
    print(
        f"{label}: CPU {summary([c.cpu_s for c in children])}; "
        f"wall median {statistics.median(c.wall for c in children):.3f} s; "
        f"peak RSS {max(c.maxrss_mb for c in children):.0f} MiB",
        flush=True,
    )


def _median(children: list[Child], what: str) -> float:
    return statistics.median(float(getattr(c, what)) for c in children)


def _growth(replays: dict[int, dict[str, list[Child]]], small: int, big: int) -> None:
    """Each tree's largest replay against its smallest (medians), the plain replay's the same
    way, the largest's memory, and the largest replay against the plain one (paired)."""
    for tree in replays[big]:
        wall = _median(replays[big][tree], "wall") / _median(replays[small][tree], "wall")
        cpu = _median(replays[big][tree], "cpu_s") / _median(replays[small][tree], "cpu_s")
        rss = max(c.maxrss_mb for c in replays[big][tree])
        print(f"{tree:>5}: replay {big} / {small} cases: wall {wall:.1f}x, CPU {cpu:.1f}x")
        print(f"{tree:>5}: replay {big} peak RSS {rss:.0f} MiB")
        if tree == "this":
            goal(f"replay_{big}_vs_{small}_wall", wall, "<=", 10.0, "{:.1f}")
            goal(f"replay_{big}_peak_rss_mb", rss, "<=", 300.0, "{:.0f}")
    floor = [c.wall for c in replays[big][PLAIN]]
    for tree in replays[big]:
        if tree != PLAIN:
            ratio = paired_ratio([c.wall for c in replays[big][tree]], floor)
            print(f"{tree:>5}: replay {big} / the plain replay of {big}: wall {ratio:.2f}x")
    ratio = paired_ratio([c.wall for c in replays[big]["this"]], floor)
    goal(f"replay_{big}_vs_plain_replay_wall", ratio, "<=", 2.0, "{:.2f}")


def _fit(replays: dict[int, dict[str, list[Child]]]) -> None:
    """Each tree's replay CPU as T(n) = F + c*n (least squares over the sizes' medians): the
    fixed cost F and the cost per item c. T(big) <= 10 T(small) holds when c <= 9F / (big -
    10 small): the ratio tightens as F falls, so c is the figure to compare."""
    sizes = sorted(replays)
    small, big = sizes[0], sizes[-1]
    for tree in replays[big]:
        ts = [_median(replays[n][tree], "cpu_s") for n in sizes]
        mean_n, mean_t = statistics.fmean(sizes), statistics.fmean(ts)
        c = sum((n - mean_n) * (t - mean_t) for n, t in zip(sizes, ts, strict=True)) / sum(
            (n - mean_n) ** 2 for n in sizes
        )
        f = mean_t - c * mean_n
        ten = 9 * f / (big - 10 * small)
        needs = f"10x at {big} / {small} needs c <= {ten * 1e6:.1f} us with this F"
        print(
            f"{tree:>5}: replay CPU T(n) = {f:.3f} s + {c * 1e6:.1f} us x n "
            f"({needs if f > 0 else 'no fixed cost to speak of: no c makes 10x'})"
        )


def _compare_beside(small: int, big: int, tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    """The small replay with its own cache, then beside the big suite's cache, both trees."""
    suite, recordings = _case_files(small, tmp, reword_every=2)
    caches = {"alone": tmp / "cache-alone", "beside": tmp / "cache-beside"}
    synth_cache(caches["alone"], small)
    synth_cache(caches["beside"], big)
    run = _tree_runner(tmp, trees)
    runs = iter(range(10**6))

    def replay(tree: str, cache: str) -> Child:
        out = tmp / f"beside-{next(runs)}"
        return run(tree, replay_args(suite, recordings, out), caches[cache])

    subjects = {(t, c): (lambda t=t, c=c: replay(t, c)) for t in trees for c in caches}
    children = _interleave_children(subjects, repeat)
    for (tree, cache), measured in children.items():
        _print_children(f"{small} cases, cache {cache:>6} ({tree:>5})", measured)
    for tree in trees:
        alone, near = children[(tree, "alone")], children[(tree, "beside")]
        wall = paired_ratio([c.wall for c in near], [c.wall for c in alone])
        cpu = paired_ratio([c.cpu_s for c in near], [c.cpu_s for c in alone])
        rss = max(c.maxrss_mb for c in near) / max(c.maxrss_mb for c in alone)
        print(f"{tree:>5}: beside/alone wall {wall:.3f}, CPU {cpu:.3f}, peak RSS {rss:.3f}")
        if tree == "this":
            goal(f"replay_{small}_beside_{big}_cache_wall", wall, "<=", 1.1)
            goal(f"replay_{small}_beside_{big}_cache_rss", rss, "<=", 1.2)


_ENCODE_ALONE = """
import sys, time
from evalspec._scoring.embeddings import load_sentence_transformer, model_text
texts = open(sys.argv[1], encoding="utf-8").read().split("\\n")
model = load_sentence_transformer(None)
model.encode([model_text(t) for t in texts], batch_size=64, normalize_embeddings=True,
             convert_to_numpy=True, show_progress_bar=False)
"""
"""The floor: the same texts embedded in one batched pass by the same model, load included."""


def _compare_record(cases: int, tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    """Recording `cases` cases against a server that answers at once, cold embedding cache
    (each answer's note differs from the expected one: both are embedded), by both trees,
    against embedding those texts alone in one batched pass."""
    from bench_run import ENV, Server, suite_yaml

    server = Server(latency_s=0.0, note=True)
    try:
        suite = tmp / f"record{cases}.yaml"
        suite.write_text(suite_yaml(server.base_url, cases, 32, True), encoding="utf-8")
        texts = tmp / "record-texts.txt"
        notes = [
            (f"adding {i} and {i * 7 % 101}", f"the sum of {i} and {i * 7 % 101}")
            for i in range(cases)
        ]
        texts.write_text("\n".join(t for pair in notes for t in pair), encoding="utf-8")
        runs = iter(range(10**6))

        def record(tree: str) -> Child:
            n = next(runs)
            env = {**ENV, "PYTHONPATH": str(trees[tree]), "EVALSPEC_CACHE_DIR": str(tmp / f"rc{n}")}
            args = replay_args(suite, tmp / f"rec{n}.jsonl", tmp / f"record-run{n}", "auto")
            child = run_child([PYTHON, "-m", "evalspec", *args], env=env, cwd=tmp)
            if child.returncode not in (0, 1):
                sys.exit(f"{tree}: record failed: {child.stderr[-3000:]}")
            return child

        def alone() -> Child:
            env = {"PYTHONPATH": str(trees["this"])}
            return run_child([PYTHON, "-c", _ENCODE_ALONE, str(texts)], env=env, cwd=tmp)

        subjects: dict[str, Callable[[], Child]] = {"embed alone": alone}
        subjects.update({t: (lambda t=t: record(t)) for t in trees})
        children = _interleave_children(subjects, repeat)
    finally:
        server.close()
    for name, measured in children.items():
        _print_children(f"record {cases} cases, {name:>11}", measured)
    floor = [c.wall for c in children["embed alone"]]
    for tree in trees:
        ratio = paired_ratio([c.wall for c in children[tree]], floor)
        print(f"{tree:>5}: recording / embedding alone, wall: {ratio:.2f}x")
        if tree == "this":
            goal(f"record_{cases}_vs_embedding_alone_wall", ratio, "<=", 1.5, "{:.2f}")


def _review_repo(cases: int, tmp: Path) -> Path:
    """A repository whose `main` holds the suite and its recordings, and whose checked-out
    branch rewords the expected note of every case in the first included file."""
    from bench_review import git as _git

    suite, recordings = _case_files(cases, tmp)
    repo = tmp / f"review{cases}"
    (repo / "suites").mkdir(parents=True)
    for part in suite.parent.iterdir():
        (repo / "suites" / part.name).write_bytes(part.read_bytes())
    (repo / "suites" / "suite.recordings.jsonl").write_bytes(recordings.read_bytes())
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "change")
    first = repo / "suites" / "cases0.yaml"
    text = first.read_text(encoding="utf-8")
    first.write_text(re.sub(r'note: "([^"]*)"', r'note: "\1 now"', text), encoding="utf-8")
    _git(repo, "commit", "-qam", "reword the first file's notes")
    return repo


_RAISED = ("EVALSPEC_MAX_CASES", "EVALSPEC_MAX_SUITE_BYTES", "EVALSPEC_MAX_SUITE_VALUES")
"""The limits `main` raises for the replays (suites this large are the operator's choice)."""


def _compare_review(cases: int, tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    """`evalspec review` of the change, no limit raised, by both trees interleaved."""
    repo = _review_repo(cases, tmp)
    args = ["review", "suites/*.yaml", "--base-ref", "main", "--markdown", str(tmp / "c.md")]

    def review(tree: str) -> Child:
        env = {"PYTHONPATH": str(trees[tree]), "EVALSPEC_CACHE_DIR": str(tmp / "review-cache")}
        for limit in _RAISED:
            env[limit] = ""  # review's own limits, as with no setting (empty: unreadable)
        child = run_child([PYTHON, "-m", "evalspec", *args], env=env, cwd=repo)
        if child.returncode not in (0, 1, 2):
            sys.exit(f"{tree}: review failed: {child.stderr[-3000:]}")
        return child

    children = _interleave_children({t: (lambda t=t: review(t)) for t in trees}, repeat)
    for tree, measured in children.items():
        _print_children(f"review of {cases} cases, {tree:>5}", measured)
        said = (measured[-1].stderr.strip().splitlines() or [""])[0]
        print(f"{tree:>5}: exit {measured[-1].returncode}: {said[:160]}")
    cpu = {t: [c.cpu_s for c in children[t]] for t in trees}
    print(f"review RATIO this/other CPU: {paired_ratio(cpu['this'], cpu['other']):.3f}")
    rss = max(c.maxrss_mb for c in children["this"])
    goal(f"review_{cases}_peak_rss_mb", rss, "<=", 1024.0, "{:.0f}")


def synth_cache(cache: Path, cases: int, chunk: int = 1_000) -> None:
    """The embedding cache a run of the `cases`-case suite leaves (random unit vectors for its
    notes and their rewordings, the texts its similarity critic compares), written as a run
    writes it."""
    sys.path.insert(0, str(REPO))
    import numpy as np

    from evalspec._scoring.embeddings import EmbeddingStore

    texts = [text for i in range(cases) for text in (note_text(i), reworded(note_text(i)))]
    store = EmbeddingStore(cache_dir=cache / "embeddings")
    rng = np.random.default_rng(0)
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        store.uncached(part)  # as a run does: look first, so shards merge as they pile up
        vectors = rng.standard_normal((len(part), 384)).astype(np.float32)
        store.add(part, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


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
    parser.add_argument(
        "--beside", type=int, default=0, help="with --against: cache of this many cases"
    )
    parser.add_argument(
        "--record", type=int, default=0, help="with --against: record this many cases"
    )
    parser.add_argument(
        "--review", type=int, default=0, help="with --against: review a change of this suite"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big:
        sizes.append(200_000)
    if args.against:
        print(f"machine: {machine()}")
        compare_trees(args.against, sizes, args.repeat, args.beside, args.record, args.review)
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
            f"{'replay s':>9} {'MiB':>6} {'KiB/case':>9} {'plain s':>8}  run says"
        )
        for n in sizes:
            suite = tmp / f"scale{n}.yaml"
            suite.write_text(make_suite(n), encoding="utf-8")
            recordings = tmp / f"scale{n}.recordings.jsonl"
            write_recordings(suite, recordings)
            v_wall, v_rss, _ = _measure([*cli, "validate", str(suite)], args.repeat, env)
            replay = [*cli, *replay_args(suite, recordings, tmp / f"run{n}")]
            r_wall, r_rss, said = _measure(replay, args.repeat, env, tmp / f"run{n}")
            plains = [plain_replay(suite, recordings, tmp / "plain") for _ in range(args.repeat)]
            check_plain_agrees(plains[-1], tmp / "plain", tmp / f"run{n}")
            p_wall = statistics.median(c.wall for c in plains)
            curve[n] = {"v_wall": v_wall, "v_rss": v_rss, "r_wall": r_wall, "r_rss": r_rss}
            print(
                f"{n:>8} {v_wall:>11.2f} {v_rss:>6.0f} {v_rss * 1024 / n:>9.1f} "
                f"{r_wall:>9.2f} {r_rss:>6.0f} {r_rss * 1024 / n:>9.1f} {p_wall:>8.2f}  "
                f"{said[:80]}",
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
