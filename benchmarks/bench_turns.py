"""Replaying multi-turn cases against replaying the same number of single-turn items.

Run: ``.venv/bin/python benchmarks/bench_turns.py [--cases 1000] [--turns 5] [--repeat 3]
[--no-state | --state-only] [--against CHECKOUT]``

Two suites with the same head (the same tool and, by default, the same suite-level `state:` of
100 records, the tool's `behavior:` scanning them, appending to a log and answering with a
record read from the state; with `--no-state` a stateless rule answers 42), each case recorded
first (a scripted provider in this process, through evalspec's own recordings): N cases of
`--turns` user turns, each turn one tool call then a text answer, every turn judged on its call
and its answer; and N single-turn cases of one call and an answer. Both are then run
whole-process with `evalspec run SUITE --record offline` (replay, scoring, results.json),
alternated, and the ratio multi-turn / single-turn is the median of the paired runs' CPU times
(steadier than wall time on a shared machine); wall times are printed too. Goal (issue 22): at
most 2x, "5 turns, state of 100 records". Both variants are measured unless `--no-state` or
`--state-only` picks one. `--against CHECKOUT` runs every command with this tree and with
another checkout (say, main) alternately, each as `python -m evalspec` from its own tree, and
also prints each suite's CPU ratio this/other (median of the pairs).

`--per-request` adds a third suite: as many single-turn items as the multi-turn suite has user
turns (1,000 x 5 = 5,000), the same work request for request, and the ratio against it. A turn
carries what an item carries (a user message, its expectation, two model answers, a call to
judge), so this ratio says whether a turn costs more than an item.

It also prints the floor any implementation faces: the CPU it takes only to read each suite's
inputs (libyaml's events of the suite, every recordings line decoded by msgspec, both C code, no
tree built, nothing checked, run or scored), added to the fixed cost of the whole process (the
same command on a one-case version of each suite). A ratio measured against that floor shows
how much of the 2x is left for parsing, replaying, scoring and writing. And the speedup the 2x
asks for: how many times faster everything beyond the fixed cost would have to run, in both
suites alike, for the ratio to reach 2 (the fixed cost unchanged; were it cut too, more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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

sys.path.insert(0, str(REPO))

HEAD = """\
suite: {name}
models: [{{name: m, model: bench-model, api_key_env: BENCH_KEY}}]
run: {{max_turns: 4, concurrency: 16}}
critics: {{a: binary, b: binary}}
{state}tools:
  - name: add
    description: Add two numbers.
    parameters:
      type: object
      properties: {{a: {{type: integer}}, b: {{type: integer}}}}
      required: [a, b]
{answer}cases:
"""

STATELESS = "    responses: [{output: 42}]\n"
"""The stateless variant (`--no-state`): a rule answers every call with 42."""

STATEFUL = """\
    behavior:
      preconditions:
        - {path: /records, contains: {id: "${args.b}"}, error: "no record ${args.b}"}
      effects:
        - append: /log
          value: {a: "${args.a}", b: "${args.b}", n: "${count/log}"}
      response: {$select: /records, $where: {id: "${args.b}"}, $first: true}
"""
"""The issue's variant: each call scans the 100 records (a precondition), appends to a log of
the conversation's calls (an effect) and answers with a record read from the state."""

RECORDS = 100

PER_REQUEST = "single-turn, one item per turn"


def head(name: str, *, state: bool) -> str:
    """The suite head both suites share: the same tool, and with `state` the same 100 records."""
    if not state:
        return HEAD.format(name=name, state="", answer=STATELESS)
    records = ", ".join(f"{{id: {i}, total: 42, label: record {i}}}" for i in range(RECORDS))
    block = f"state:\n  records: [{records}]\n  log: []\n"
    return HEAD.format(name=name, state=block, answer=STATEFUL)


def multi_turn_suite(n: int, turns: int, *, state: bool = True) -> str:
    out = [head("turns", state=state)]
    for i in range(n):
        out.append(f"  - name: case {i}\n    turns:\n")
        for k in range(turns):
            out.append(
                f"      - user: please add {i} and {k}\n"
                f"        expect:\n"
                f"          tool_calls: [{{add: {{a: {i}, b: {k}}}}}]\n"
                f"          final_answer: {{contains: '42'}}\n"
            )
    return "".join(out)


def single_turn_suite(n: int, *, state: bool = True) -> str:
    out = [head("single", state=state)]
    for i in range(n):
        out.append(
            f"  - name: case {i}\n    user: please add {i} and 0\n"
            f"    expect:\n      tool_calls: [{{add: {{a: {i}, b: 0}}}}]\n"
            f"      final_answer: {{contains: '42'}}\n"
        )
    return "".join(out)


class Scripted:
    """Calls add with the numbers of the last user message, then answers with the sum."""

    async def complete(self, request: Any) -> Any:
        from evalspec._providers.base import ChatResponse

        messages = request.messages
        if messages[-1]["role"] == "tool":
            message = {"role": "assistant", "content": f"The sum is {messages[-1]['content']}."}
            return ChatResponse(message, "stop", {"prompt_tokens": 40, "completion_tokens": 8})
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        a, b = (int(x) for x in re.findall(r"\d+", user)[:2])
        call = {
            "id": f"call_{len(messages)}",
            "type": "function",
            "function": {"name": "add", "arguments": json.dumps({"a": a, "b": b})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ChatResponse(message, "tool_calls", {"prompt_tokens": 40, "completion_tokens": 8})

    async def aclose(self) -> None:
        return None


def record(path: Path) -> int:
    """Record every answer of the suite at `path`; the number of requests recorded."""
    from evalspec._providers.recordings import RecordingProvider, Recordings
    from evalspec._runner import RunOptions, run_plan_async
    from evalspec._runner.run_dir import recordings_path
    from evalspec.api import compile_plan, load_suite

    suite = load_suite(path)
    recordings = Recordings(recordings_path(suite))
    provider = RecordingProvider(recordings, Scripted(), mode="record")  # type: ignore[arg-type]

    async def go() -> None:
        outcome = await run_plan_async(compile_plan(suite), RunOptions(), providers={"m": provider})
        bad = [t for t in outcome.transcripts if t.error]
        if bad:
            raise SystemExit(f"recording failed: {bad[0].error}")
        await provider.aclose()

    asyncio.run(go())
    return len(recordings)


def inputs_cpu(suite: Path, repeat: int) -> float:
    """Best CPU seconds to read `suite`'s inputs and nothing more: libyaml's events of the
    suite (no tree) and every line of its recordings decoded (msgspec)."""
    import msgspec
    import yaml

    from evalspec._runner.run_dir import recordings_path
    from evalspec.api import load_suite

    text = suite.read_text()
    lines = recordings_path(load_suite(suite)).read_bytes().splitlines()
    decode = msgspec.json.decode
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _event in yaml.parse(text, Loader=yaml.CSafeLoader):
            pass
        for line in lines:
            decode(line)
        best = min(best, time.process_time() - start)
    return best


def floor(folder: Path, args: argparse.Namespace, variant: str, state: bool) -> dict[str, float]:
    """Print the floor: the fixed cost of the process plus reading the inputs, per suite;
    return the fixed costs (median CPU seconds of the one-case suites)."""
    ones = {"multi-turn": folder / "turns1.yaml", "single-turn": folder / "single1.yaml"}
    ones["multi-turn"].write_text(multi_turn_suite(1, args.turns, state=state))
    ones["single-turn"].write_text(single_turn_suite(1, state=state))
    for path in ones.values():
        record(path)
    fixed: dict[str, list[float]] = {name: [] for name in ones}

    def once(name: str) -> float:
        out = folder / f"run-one-{name}-{len(fixed[name])}"
        cmd = [*evalspec_cmd(), "run", str(ones[name]), "--record", "offline", "--out", str(out)]
        child = run_child([*cmd, "--json"], cwd=folder)
        if child.returncode not in (0, 1):
            raise SystemExit(f"{name} one-case replay failed: {child.stderr[-2000:]}")
        fixed[name].append(child.cpu_s)
        return child.wall

    interleave({name: lambda n=name: once(n) for name in ones}, args.repeat)
    suites = {"multi-turn": folder / "turns.yaml", "single-turn": folder / "single.yaml"}
    inputs = {name: inputs_cpu(path, args.repeat) for name, path in suites.items()}
    f = {name: statistics.median(cpu) for name, cpu in fixed.items()}
    for name in suites:
        print(
            f"[{variant}] {name}: fixed process cost (one case) {f[name]:.3f} s CPU, "
            f"reading the inputs alone {inputs[name]:.3f} s CPU"
        )
    multi = f["multi-turn"] + inputs["multi-turn"]
    single = f["single-turn"] + inputs["single-turn"]
    print(
        f"[{variant}] inputs alone, multi-turn / single-turn: "
        f"{inputs['multi-turn'] / inputs['single-turn']:.2f}x; floor (fixed cost + inputs "
        f"alone): {multi:.3f} s / {single:.3f} s = {multi / single:.2f}x"
    )
    return f


def measure(root: Path, args: argparse.Namespace, *, state: bool) -> None:
    """Record, replay alternately and report one variant (with or without the state)."""
    variant = "state" if state else "no_state"
    folder = root / variant
    folder.mkdir()
    suites = {"multi-turn": folder / "turns.yaml", "single-turn": folder / "single.yaml"}
    suites["multi-turn"].write_text(multi_turn_suite(args.cases, args.turns, state=state))
    suites["single-turn"].write_text(single_turn_suite(args.cases, state=state))
    if args.per_request:
        suites[PER_REQUEST] = folder / "single_per_turn.yaml"
        suites[PER_REQUEST].write_text(single_turn_suite(args.cases * args.turns, state=state))
    print(
        f"[{variant}] "
        + ("suite state of 100 records, a stateful tool" if state else "stateless rule tool")
    )
    for name, path in suites.items():
        print(f"[{variant}] {name}: {args.cases} cases, {record(path)} model answers recorded")
    trees = {"": None} if args.against is None else {" this": REPO, " other": args.against}
    runs = [(name, tree) for tree in trees for name in suites]
    cpu: dict[tuple[str, str], list[float]] = {run: [] for run in runs}

    def replay(name: str, tree: str) -> float:
        out = folder / f"run-{name}{tree.strip()}-{len(cpu[name, tree])}"
        where = trees[tree]
        if where is None:
            cmd, env = evalspec_cmd(), None
        else:  # each tree imported from its own checkout, the same way
            cmd, env = [PYTHON, "-m", "evalspec"], {"PYTHONPATH": str(where.resolve())}
        cmd = [*cmd, "run", str(suites[name]), "--record", "offline", "--out", str(out), "--json"]
        child = run_child(cmd, cwd=folder, env=env)
        if child.returncode not in (0, 1):
            raise SystemExit(f"{name} replay failed: {child.stderr[-2000:]}")
        results = json.loads((out / "results.json").read_text())["results"]
        if any(r["status"] != "pass" for r in results):
            raise SystemExit(f"{name}: a case did not pass; the benchmark is not measuring")
        cpu[name, tree].append(child.cpu_s)
        return child.wall

    wall = interleave({run: lambda r=run: replay(*r) for run in runs}, args.repeat)
    for name, tree in runs:
        print(f"[{variant}{tree}] {name} wall: {summary(wall[name, tree])}")
        print(f"[{variant}{tree}] {name} cpu:  {summary(cpu[name, tree])}")
    for tree in trees:
        multi, single = ("multi-turn", tree), ("single-turn", tree)
        if args.per_request:
            each = paired_ratio(cpu[multi], cpu[PER_REQUEST, tree])
            print(
                f"[{variant}{tree}] multi-turn / {args.cases * args.turns} single-turn items "
                f"(request for request), cpu: {each:.2f}"
            )
        wall_ratio = paired_ratio(wall[multi], wall[single])
        print(f"[{variant}{tree}] wall ratio (median of pairs): {wall_ratio:.2f}")
        per_turn = statistics.median(cpu[multi]) / args.turns
        per_item = statistics.median(cpu[single])
        print(
            f"[{variant}{tree}] per user turn / per single-turn item (cpu): "
            f"{per_turn / per_item:.2f}"
        )
        goal(
            f"multi_turn_replay_{args.turns}_turns_over_single_turn_cpu_{variant}"
            + (f"_{tree.strip()}" if tree else ""),
            paired_ratio(cpu[multi], cpu[single]),
            "<=",
            2.0,
        )
    if args.against is not None:
        for name in suites:
            ratio = paired_ratio(cpu[name, " this"], cpu[name, " other"])
            print(f"[{variant}] {name} RATIO this/other CPU (median of pairs): {ratio:.3f}")
    fixed = floor(folder, args, variant, state)
    tree = next(iter(trees))  # this tree
    needed(variant, fixed, {name: statistics.median(cpu[name, tree]) for name in fixed})


def needed(variant: str, fixed: dict[str, float], cpu: dict[str, float]) -> None:
    """Print how many times faster everything beyond the fixed cost must run, in both suites
    alike, for multi-turn / single-turn to reach 2: (F_m + V_m/s) = 2 (F_s + V_s/s)."""
    f_m, f_s = fixed["multi-turn"], fixed["single-turn"]
    v_m, v_s = cpu["multi-turn"] - f_m, cpu["single-turn"] - f_s
    if v_m <= 2 * v_s:
        print(f"[{variant}] the 2x needs no speedup beyond the fixed cost")
    elif 2 * f_s <= f_m:
        print(f"[{variant}] no speedup reaches 2x: the fixed costs alone are 2x apart")
    else:
        speedup = (v_m - 2 * v_s) / (2 * f_s - f_m)
        print(
            f"[{variant}] for 2x, all but the fixed cost ({f_m:.3f} s / {f_s:.3f} s) would have "
            f"to run {speedup:.2f}x faster in both suites (beyond it: {v_m:.3f} s / {v_s:.3f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--no-state", action="store_true", help="only the stateless variant")
    only.add_argument("--state-only", action="store_true", help="only the stateful variant")
    parser.add_argument(
        "--against", type=Path, help="another checkout (say, main): both trees, before/after"
    )
    parser.add_argument(
        "--per-request",
        action="store_true",
        help="also replay cases x turns single-turn items: the same work request for request",
    )
    args = parser.parse_args()
    print(f"machine: {machine()}")
    byte_compile()
    variants = [False] if args.no_state else [True] if args.state_only else [True, False]
    with tempfile.TemporaryDirectory(prefix="bench-turns-") as tmp:
        for state in variants:
            measure(Path(tmp), args, state=state)


if __name__ == "__main__":
    main()
