"""What `evalspec run` adds over the model calls themselves, replay speed, and peak memory.

Run: ``.venv/bin/python benchmarks/bench_run.py [--cases 500] [--repeat 3] [--big 10000]``

Measured in one run:
  (a) a local OpenAI-compatible server (tests/fake_openai.py, in its own process) answering
      every request after 50 ms; 500 single-turn cases at concurrency 32: whole-process
      `evalspec run` (fresh recordings file, so every case calls the server) against a plain
      script making the same 500 requests with `AsyncOpenAI` and a Semaphore(32), alternated;
  (b) `evalspec run suites/slack.yaml --record offline` replayed with warm caches;
  (c) peak RSS of a 10,000-case run against the same server answering at once.
For scale: promptfoo needs 11.4 s for (a) on this 2-core machine, the plain script 3.4 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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

SYSTEM = "You are a calculator assistant. Always use the math tools."
TOOLS = [
    {
        "name": name,
        "description": desc,
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    }
    for name, desc in (
        ("add", "Add two numbers."),
        ("subtract", "Subtract b from a."),
        ("multiply", "Multiply two numbers."),
        ("divide", "Divide a by b."),
    )
]

_SERVER = """
import re, sys, time
sys.path.insert(0, sys.argv[1])
from tests.fake_openai import FakeOpenAI, tool_call_reply

def respond(body):
    # Answers "What is A plus B?" with add(A, B): the call every case expects.
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    a, b = (int(x) for x in re.findall(r"-?[0-9]+", user)[:2])
    if sys.argv[3] == "note":  # a text argument for a similarity critic to judge
        return tool_call_reply("add", {"a": a, "b": b, "note": f"the sum of {a} and {b}"})
    return tool_call_reply("add", {"a": a, "b": b})

server = FakeOpenAI(respond, latency_s=float(sys.argv[2])).start()
print(server.base_url, flush=True)
sys.stdin.read()  # serve until the benchmark closes our stdin
server.stop()
"""

_PLAIN = """
import asyncio, json, sys
from openai import AsyncOpenAI

async def main():
    spec = json.load(open(sys.argv[1]))
    client = AsyncOpenAI(base_url=spec["base_url"], api_key="sk-bench", max_retries=0)
    gate = asyncio.Semaphore(32)
    tools = [{"type": "function", "function": t} for t in spec["tools"]]

    async def one(user):
        async with gate:
            reply = await client.chat.completions.create(
                model="fake-model",
                messages=[{"role": "system", "content": spec["system"]},
                          {"role": "user", "content": user}],
                tools=tools,
            )
            return reply.choices[0].message.tool_calls[0].function.arguments

    answers = await asyncio.gather(*(one(u) for u in spec["users"]))
    assert len(answers) == len(spec["users"])

asyncio.run(main())
"""


class Server:
    """The fake server in its own process, so it does not share a GIL with the client.

    `script` starts a server and prints its base url (argv: repo root, latency in seconds,
    then "note" to add a text argument to the answer for a similarity critic, or "-").
    """

    def __init__(self, latency_s: float, script: str = _SERVER, note: bool = False):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [PYTHON, "-c", script, str(REPO), str(latency_s), "note" if note else "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("the fake server did not start")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def users(cases: int) -> list[str]:
    return [f"What is {i} plus {i * 7 % 101}?" for i in range(cases)]


NOTE = {"note": {"type": "string", "description": "What the call does, in words."}}


def tools(similarity: bool) -> list[dict]:
    """The tools; with `similarity`, `add` also takes a `note` that a similarity critic judges."""
    if not similarity:
        return TOOLS
    add = {**TOOLS[0], "parameters": {**TOOLS[0]["parameters"]}}
    add["parameters"]["properties"] = {**add["parameters"]["properties"], **NOTE}
    return [add, *TOOLS[1:]]


def suite_yaml(base_url: str, cases: int, concurrency: int, similarity: bool = False) -> str:
    lines = [
        "suite: bench-run",
        f"system: {json.dumps(SYSTEM)}",
        f"models: [{{name: m, model: fake-model, base_url: {json.dumps(base_url)}, "
        "api_key_env: BENCH_API_KEY}]",
        f"run: {{mode: single_turn, concurrency: {concurrency}, retries: 0}}",
        "critics: {a: binary, b: binary" + (", note: similarity}" if similarity else "}"),
        f"tools: {json.dumps(tools(similarity))}",
        "cases:",
    ]
    for i, user in enumerate(users(cases)):
        a, b = i, i * 7 % 101
        note = f", note: {json.dumps(f'adding {a} and {b}')}" if similarity else ""
        lines.append(
            f"  - {{name: c{i}, user: {json.dumps(user)}, "
            f"expect: {{tool_calls: [{{add: {{a: {a}, b: {b}{note}}}}}]}}}}"
        )
    return "\n".join(lines) + "\n"


ENV = {"BENCH_API_KEY": "sk-bench"}


def bench_overhead(args: argparse.Namespace, tmp: Path) -> None:
    server = Server(latency_s=0.05, note=args.similarity)
    try:
        suite = tmp / "run500.yaml"
        suite.write_text(
            suite_yaml(server.base_url, args.cases, 32, args.similarity), encoding="utf-8"
        )
        spec = tmp / "plain.json"
        spec.write_text(
            json.dumps(
                {
                    "base_url": server.base_url,
                    "system": SYSTEM,
                    "tools": tools(args.similarity),
                    "users": users(args.cases),
                }
            )
        )
        plain_cmd = [PYTHON, "-c", _PLAIN, str(spec)]
        counter = iter(range(1000))
        outputs: list[str] = []
        cpu: dict[str, list[float]] = {"plain": [], "evalspec": []}

        def plain() -> float:
            child = run_child(plain_cmd)
            if child.returncode:
                sys.exit(f"plain script failed: {child.stderr[-2000:]}")
            cpu["plain"].append(child.cpu_s)
            return child.wall

        def evalspec() -> float:
            n = next(counter)
            child = run_child(
                [
                    *evalspec_cmd(),
                    "run",
                    str(suite),
                    "--recordings",
                    str(tmp / f"rec{n}.jsonl"),
                    "--out",
                    str(tmp / f"run{n}"),
                ],
                env={**ENV, "EVALSPEC_CACHE_DIR": str(tmp / "cache")},
            )
            if child.returncode not in (0, 1):
                sys.exit(f"evalspec run failed ({child.returncode}): {child.stderr[-3000:]}")
            outputs.append(child.stdout.strip().splitlines()[-1])
            cpu["evalspec"].append(child.cpu_s)
            return child.wall

        print(f"(a) {args.cases} single-turn cases, concurrency 32, server latency 50 ms")
        if args.similarity:
            # One untimed run fills the embedding cache: the timed runs read it warm.
            warm = evalspec()
            cpu["evalspec"].clear()
            print(f"    similarity critic on a text argument; warm-up run {warm:.2f} s")
        times = interleave({"plain": plain, "evalspec": evalspec}, args.repeat)
        print(f"    plain AsyncOpenAI script: {summary(times['plain'])}")
        print(f"    evalspec run:             {summary(times['evalspec'])}")
        print(f"    evalspec says: {outputs[-1]}")
        print(
            f"    CPU (user+system): plain {summary(cpu['plain'])}; evalspec "
            f"{summary(cpu['evalspec'])}; paired ratio "
            f"{paired_ratio(cpu['evalspec'], cpu['plain']):.3f} (info: wall is the goal)"
        )
        floor = args.cases / 32 * 0.05
        print(f"    floor ({args.cases}/32 rounds x 50 ms): {floor:.2f} s")
        ratio = paired_ratio(times["evalspec"], times["plain"])
        print(f"    best/best ratio: {min(times['evalspec']) / min(times['plain']):.3f}")
        name = "run_vs_plain_asyncopenai_ratio" + ("_similarity" if args.similarity else "")
        goal(name, ratio, "<=", 1.15, "{:.3f}")
    finally:
        server.close()


def bench_replay(args: argparse.Namespace, tmp: Path) -> None:
    cmd = [*evalspec_cmd(), "run", str(REPO / "suites" / "slack.yaml"), "--record", "offline"]
    env = {"EVALSPEC_CACHE_DIR": str(tmp / "slack-cache")}
    walls = []
    for n in range(args.repeat + 1):
        child = run_child([*cmd, "--out", str(tmp / f"slack{n}")], env=env)
        if child.returncode not in (0, 1):
            sys.exit(f"slack replay failed ({child.returncode}): {child.stderr[-3000:]}")
        walls.append(child.wall)
    print(
        f"(b) evalspec run suites/slack.yaml --record offline: first (cold embedding cache) "
        f"{walls[0]:.3f} s; warm: {summary(walls[1:])}"
    )
    goal("slack_replay_warm_seconds", statistics.median(walls[1:]), "<", 1.0, "{:.3f}")


def bench_memory(args: argparse.Namespace, tmp: Path) -> None:
    server = Server(latency_s=0.0)
    try:
        suite = tmp / "big.yaml"
        suite.write_text(suite_yaml(server.base_url, args.big, 32), encoding="utf-8")
        child = run_child(
            [
                *evalspec_cmd(),
                "run",
                str(suite),
                "--recordings",
                str(tmp / "big.rec.jsonl"),
                "--out",
                str(tmp / "big-run"),
            ],
            env={**ENV, "EVALSPEC_CACHE_DIR": str(tmp / "cache")},
        )
        if child.returncode not in (0, 1):
            sys.exit(f"big run failed ({child.returncode}): {child.stderr[-3000:]}")
        last = child.stdout.strip().splitlines()[-1]
        print(
            f"(c) {args.big} cases against the server with no latency: {child.wall:.1f} s, "
            f"peak RSS {child.maxrss_mb:.0f} MiB; {last}"
        )
        goal("run_10000_cases_peak_rss_mb", child.maxrss_mb, "<", 300.0, "{:.0f}")
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big", type=int, default=10000, help="cases of the memory run")
    parser.add_argument("--only", choices=("overhead", "replay", "memory"), action="append")
    parser.add_argument(
        "--similarity",
        action="store_true",
        help="(a) with a similarity critic on a text argument, its embeddings cached warm",
    )
    args = parser.parse_args()
    byte_compile()
    print(f"machine: {machine()}")
    only = set(args.only or ("overhead", "replay", "memory"))
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        if "overhead" in only:
            bench_overhead(args, Path(tmp))
        if "replay" in only:
            bench_replay(args, Path(tmp))
        if "memory" in only:
            bench_memory(args, Path(tmp))


if __name__ == "__main__":
    main()
