"""What tool variants cost: a run with two variants against the two runs it stands for.

Run: ``.venv/bin/python benchmarks/bench_variants.py [--cases 500] [--repeat 5]``

Three suites of --cases cases (written to a temporary folder), each case one request that
calls one of three tools: `v1` and `v2` offer the tools with two versions of their
descriptions; `both` offers v1's and declares `variants: [v1, v2 (v2's descriptions)]`. Each
is recorded once with a scripted model, then `evalspec.run` replays it offline (plan, replay,
scoring, results.json and reports, in-process): the run of `both` against the runs of `v1`
and of `v2` one after the other, alternated so machine noise hits both alike.

Goal: run with 2 variants / (run of v1 + run of v2) <= 1.05 (median of the paired ratios).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, goal, interleave, machine, paired_ratio, summary

sys.path.insert(0, str(REPO))

TOOLS = ("lookup", "charge", "notify")
DESCRIPTIONS = {
    "v1": {t: "Do it by id." for t in TOOLS},
    "v2": {t: f"The {t} of one order, by its id." for t in TOOLS},
}


def suite_text(n: int, version: str, *, variants: bool) -> str:
    tools = "".join(
        f"""\
  - name: {name}
    description: {DESCRIPTIONS[version][name]}
    parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}
    responses: [{{output: {{ok: true, tool: {name}}}}}]
"""
        for name in TOOLS
    )
    declared = ""
    if variants:
        edits = "".join(
            f"      {name}: {{description: {DESCRIPTIONS['v2'][name]!r}}}\n" for name in TOOLS
        )
        declared = f"variants:\n  - name: v1\n  - name: v2\n    tools:\n{edits}"
    cases = "".join(
        f"""\
  - name: case {i}
    user: Handle order {i} with {tool}.
    expect: {{tool_calls: [{{{tool}: {{id: '{i}'}}}}]}}
"""
        for i, tool in zip(range(n), itertools.cycle(TOOLS), strict=False)
    )
    return (
        "suite: bench-variants\nmodels: [m]\nrun: {mode: single_turn}\n"
        f"tools:\n{tools}{declared}cases:\n{cases}"
    )


class Scripted:
    """Calls the tool the user names with the order's number."""

    async def complete(self, request: Any) -> Any:
        from evalspec.plugins import ChatResponse

        words = next(m["content"] for m in request.messages if m["role"] == "user").split()
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": words[-1].rstrip("."), "arguments": json.dumps({"id": words[2]})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ChatResponse(message, "tool_calls", {"prompt_tokens": 40, "completion_tokens": 8})

    async def aclose(self) -> None:
        return None


def replay(paths: list[Path], out: Path) -> float:
    """Seconds to run each suite offline, one after the other, into fresh run directories."""
    from evalspec.api import run
    from evalspec.records import RunRequest

    began = time.perf_counter()
    for path in paths:
        done = run(RunRequest(path, record="offline", out=out / f"{path.stem}-{time.time_ns()}"))
        if done.exit_code != 0:
            raise SystemExit(f"{path.name}: exit code {done.exit_code}")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from evalspec.api import load_suite, record_answers

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = {}
        for name, version, variants in (
            ("v1", "v1", False),
            ("v2", "v2", False),
            ("both", "v1", True),
        ):
            path = folder / f"{name}.yaml"
            path.write_text(suite_text(args.cases, version, variants=variants), encoding="utf-8")
            record_answers(load_suite(path), Scripted())  # type: ignore[arg-type]
            paths[name] = path
        runs = folder / "runs"
        times = interleave(
            {
                "one run, 2 variants": lambda: replay([paths["both"]], runs),
                "two runs, v1 then v2": lambda: replay([paths["v1"], paths["v2"]], runs),
            },
            args.repeat,
        )
    for name, values in times.items():
        print(f"{name}: {summary(values)}")
    ratio = paired_ratio(times["one run, 2 variants"], times["two runs, v1 then v2"])
    goal("run with 2 variants / two separate runs", ratio, "<=", 1.05)


if __name__ == "__main__":
    main()
