"""What declared faults cost a replay: deciding them is O(1) per call.

Run: ``.venv/bin/python benchmarks/bench_faults.py [--cases 1000] [--repeat 41]``

Two suites of --cases cases (written to a temporary folder), each case a conversation that calls
three tools and answers: one suite without faults, one with faults on every tool (a seeded
latency on half the calls, and an error whose `when` no call matches, so every call is checked
against both). Each is recorded once with a scripted model, then replayed offline in-process
(`compile_plan` and `run_plan`, no scoring).

The measurement is made to hold on a shared machine: each suite loaded once, one warm-up
replay of each (imports, caches), a garbage collection before each timed replay and none
during it, the two interleaved in ABBA order (a drift in load hits both alike), and each replay
timed in CPU seconds of this process (other processes' load does not count; wall seconds are
shown beside). The figure is the median over the rounds of the paired ratio faults / plain,
each pair measured back to back; an A/A run of this harness (plain against itself, 21 rounds,
load average 10 on 2 CPUs) gave 0.94 and 1.00.

Goal: replay with faults / replay without <= 1.1 (median of the paired CPU-time ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, goal, machine, paired_ratio, summary

sys.path.insert(0, str(REPO))

TOOLS = ("lookup", "charge", "notify")

FAULTS = """\
    faults:
      - {kind: latency, seconds: 0.5, rate: 0.5, seed: 3}
      - {kind: error, status: 503, when: {id: never}}
"""


def suite_text(n: int, *, faults: bool) -> str:
    tools = "".join(
        f"""\
  - name: {name}
    parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}
    responses: [{{output: {{ok: true, tool: {name}}}}}]
{FAULTS if faults else ""}"""
        for name in TOOLS
    )
    cases = "".join(
        f"""\
  - name: case {i}
    user: Handle order {i}.
    expect: {{tool_calls: [{", ".join(f"{{{t}: {{id: '{i}'}}}}" for t in TOOLS)}]}}
"""
        for i in range(n)
    )
    return (
        f"suite: bench-faults\nmodels: [m]\nrun: {{max_turns: 5}}\ntools:\n{tools}cases:\n{cases}"
    )


class Scripted:
    """Calls the three tools in turn with the order's number, then answers."""

    async def complete(self, request: Any) -> Any:
        from evalspec._providers.base import ChatResponse

        messages = request.messages
        done = sum(1 for m in messages if m["role"] == "tool")
        usage = {"prompt_tokens": 40, "completion_tokens": 8}
        if done >= len(TOOLS):
            return ChatResponse({"role": "assistant", "content": "Done."}, "stop", usage)
        user = next(m["content"] for m in messages if m["role"] == "user")
        order = user.split()[-1].rstrip(".")
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": TOOLS[done], "arguments": json.dumps({"id": order})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ChatResponse(message, "tool_calls", usage)

    async def aclose(self) -> None:
        return None


def replay(suite: Any) -> tuple[float, float]:
    """CPU and wall seconds of one offline replay of `suite` (plan and run; the plan's ids
    hash the faults, so it is timed with the replay)."""
    from evalspec._runner import RunOptions, run_plan_async
    from evalspec.api import compile_plan

    gc.collect()
    gc.disable()  # a collection falls where it falls: not timed in one replay and not the other
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        plan = compile_plan(suite)
        outcome = asyncio.run(run_plan_async(plan, RunOptions(record="offline")))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        gc.enable()
    bad = [t for t in outcome.transcripts if t.error]
    if bad:
        raise SystemExit(f"replay failed: {bad[0].error}")
    return cpu, wall


def measure(paths: dict[str, Path], repeat: int) -> dict[str, list[tuple[float, float]]]:
    """Each suite loaded once, a warm-up replay of each, then `repeat` rounds in ABBA order:
    (cpu, wall) per replay."""
    from evalspec.api import load_suite

    suites = {name: load_suite(path) for name, path in paths.items()}
    for suite in suites.values():
        replay(suite)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
    names = list(paths)
    for r in range(repeat):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(replay(suites[name]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    from evalspec.api import load_suite, record_answers

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, faulted in (("plain", False), ("faults", True)):
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(suite_text(args.cases, faults=faulted), encoding="utf-8")
            record_answers(load_suite(path), Scripted())  # type: ignore[arg-type]
            paths[name] = path
        times = measure(paths, args.repeat)
    for name, values in times.items():
        print(f"{name}: CPU {summary([c for c, _ in values])}")
        print(f"{name}: wall {summary([w for _, w in values])}")
    cpu = {name: [c for c, _ in values] for name, values in times.items()}
    wall = {name: [w for _, w in values] for name, values in times.items()}
    print(f"wall-clock ratio (not the goal): {paired_ratio(wall['faults'], wall['plain']):.3f}")
    print(f"best / best CPU (not the goal): {min(cpu['faults']) / min(cpu['plain']):.3f}")
    goal("replay with faults / without (CPU)", paired_ratio(cpu["faults"], cpu["plain"]), "<=", 1.1)


if __name__ == "__main__":
    main()
