"""The Anthropic provider's overhead, and `validate` of a suite whose tools come from an MCP lock.

Run: ``.venv/bin/python benchmarks/bench_anthropic.py [--requests 500] [--repeat 3] [--tools 60]``

Measured in one run:
  (a) a local Messages API server (tests/fake_anthropic.py, in its own process) answering every
      request after 50 ms with a tool_use block; 500 single-turn requests at concurrency 32, each
      in a fresh process: evalspec's provider (AnthropicMessagesProvider behind the tool-name
      mapping, as ModelCalls.provider builds it for a run: neutral request in, neutral message
      out) against a plain script making the same requests with `AsyncAnthropic` and a
      Semaphore(32), alternated;
  (b) whole-process `evalspec validate` of a suite taking its tools from an MCP server through
      its lock file, against the same suite with those tools written out in YAML, alternated;
      and the modules `validate` of the MCP suite loads (`mcp` must not be one).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import (
    PYTHON,
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
from bench_run import Server

SYSTEM = "You are a calculator assistant. Always use the math tools."
TOOL = {
    "name": "add",
    "description": "Add two numbers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}

_SERVER = """
import re, sys
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/tests")
from tests.fake_anthropic import FakeAnthropic, tool_use_reply

def respond(body):
    user = body["messages"][-1]["content"]
    text = user if isinstance(user, str) else user[0]["text"]
    a, b = (int(x) for x in re.findall(r"-?[0-9]+", text)[:2])
    return tool_use_reply(("add", {"a": a, "b": b}))

server = FakeAnthropic(respond, latency_s=float(sys.argv[2])).start()
print(server.base_url, flush=True)
sys.stdin.read()
server.stop()
"""

_PLAIN = """
import asyncio, json, sys
from anthropic import AsyncAnthropic

async def main():
    spec = json.load(open(sys.argv[1]))
    client = AsyncAnthropic(base_url=spec["base_url"], api_key="sk-bench", max_retries=0)
    gate = asyncio.Semaphore(32)

    async def one(user):
        async with gate:
            reply = await client.messages.create(
                model="fake-claude", max_tokens=1024, system=spec["system"],
                messages=[{"role": "user", "content": user}], tools=[spec["tool"]],
            )
            return [b.input for b in reply.content if b.type == "tool_use"][0]

    answers = await asyncio.gather(*(one(u) for u in spec["users"]))
    assert len(answers) == len(spec["users"])

asyncio.run(main())
"""

_PROVIDER = """
import asyncio, json, os, sys
from evalspec._providers.base import ChatRequest
from evalspec._providers.calls import Endpoint, ModelCalls

async def main():
    spec = json.load(open(sys.argv[1]))
    params = {"max_tokens": 1024}
    endpoint = Endpoint(spec["base_url"], "BENCH_API_KEY", provider="anthropic")
    provider = ModelCalls(retries=0).provider(endpoint)
    gate = asyncio.Semaphore(32)
    tool = {"type": "function", "function": {"name": "add",
            "description": spec["tool"]["description"],
            "parameters": spec["tool"]["input_schema"]}}

    async def one(i, user):
        request = ChatRequest(key=str(i), model="fake-claude",
                              messages=({"role": "system", "content": spec["system"]},
                                        {"role": "user", "content": user}),
                              tools=(tool,), params=params)
        async with gate:
            response = await provider.complete(request)
            return response.message["tool_calls"][0]["function"]["arguments"]

    answers = await asyncio.gather(*(one(i, u) for i, u in enumerate(spec["users"])))
    assert len(answers) == len(spec["users"])
    await provider.aclose()

asyncio.run(main())
"""


def bench_provider(args: argparse.Namespace, tmp: Path) -> None:
    server = Server(latency_s=0.05, script=_SERVER)
    try:
        spec = tmp / "spec.json"
        users = [f"What is {i} plus {i * 7 % 101}?" for i in range(args.requests)]
        spec.write_text(
            json.dumps(
                {"base_url": server.base_url, "system": SYSTEM, "tool": TOOL, "users": users}
            )
        )
        env = {"BENCH_API_KEY": "sk-bench", "PYTHONPATH": str(REPO)}

        def timed(script: str) -> float:
            child = run_child([PYTHON, "-c", script, str(spec)], env=env)
            if child.returncode:
                sys.exit(f"script failed: {child.stderr[-2000:]}")
            return child.wall

        print(f"(a) {args.requests} single-turn requests, concurrency 32, server latency 50 ms")
        times = interleave(
            {"plain": lambda: timed(_PLAIN), "evalspec": lambda: timed(_PROVIDER)}, args.repeat
        )
        print(f"    plain AsyncAnthropic script: {summary(times['plain'])}")
        print(f"    evalspec Anthropic provider: {summary(times['evalspec'])}")
        print(f"    floor ({args.requests}/32 rounds x 50 ms): {args.requests / 32 * 0.05:.2f} s")
        ratio = paired_ratio(times["evalspec"], times["plain"])
        goal("anthropic_provider_vs_plain_asyncanthropic_ratio", ratio, "<=", 1.25)
    finally:
        server.close()


def _definitions(count: int) -> list[dict]:
    return [
        {
            "name": f"Ops.Tool{i}",
            "description": f"Operation number {i} on two operands.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "first operand"},
                    "b": {"type": "number", "description": "second operand"},
                    "mode": {"type": "string", "enum": ["fast", "exact"]},
                },
                "required": ["a", "b"],
            },
        }
        for i in range(count)
    ]


def _cases(count: int, tools: int) -> list[str]:
    return [
        f"  - {{name: c{i}, user: 'Apply {i % tools} to {i} and 2', "
        f"expect: {{tool_calls: [{{Ops.Tool{i % tools}: {{a: {i}, b: 2}}}}]}}}}"
        for i in range(count)
    ]


def bench_validate(args: argparse.Namespace, tmp: Path) -> None:
    from evalspec._suite.mcp_lock import lock_path, write_lock

    definitions = _definitions(args.tools)
    head = ["suite: bench-mcp", "models: [m]", "critics: {a: binary, b: binary}"]
    cases = ["cases:", *_cases(args.cases, args.tools)]
    mcp_suite = tmp / "with_lock.yaml"
    command = ["python", "-m", "ops_server"]
    mcp_suite.write_text(
        "\n".join([*head, f"tools: [{{mcp: {{command: {json.dumps(command)}}}}}]", *cases]) + "\n"
    )
    write_lock(lock_path(mcp_suite), {" ".join(command): definitions})
    written = [
        {"name": d["name"], "description": d["description"], "parameters": d["inputSchema"]}
        for d in definitions
    ]
    yaml_suite = tmp / "written_out.yaml"
    yaml_suite.write_text("\n".join([*head, f"tools: {json.dumps(written)}", *cases]) + "\n")

    def timed(path: Path) -> float:
        child = run_child([*evalspec_cmd(), "validate", str(path)])
        if child.returncode:
            sys.exit(f"validate failed: {child.stderr[-2000:]}")
        return child.wall

    print(f"(b) validate: {args.tools} tools from an MCP lock vs written out, {args.cases} cases")
    times = interleave(
        {"written": lambda: timed(yaml_suite), "lock": lambda: timed(mcp_suite)}, args.repeat * 2
    )
    print(f"    tools written out: {summary(times['written'])}")
    print(f"    tools from lock:   {summary(times['lock'])}")
    goal(
        "validate_mcp_lock_vs_written_out_ratio",
        paired_ratio(times["lock"], times["written"]),
        "<=",
        1.0,
    )
    loaded = modules_after(["validate", str(mcp_suite)])
    heavy = sorted(loaded & {"mcp", "anthropic", "openai", "httpx2", "pydantic"})
    goal_flag(
        "validate_mcp_suite_imports_mcp",
        ", ".join(heavy) or "none",
        "mcp" not in loaded,
        "mcp not imported",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tools", type=int, default=60, help="tools of the validate suites")
    parser.add_argument("--cases", type=int, default=300, help="cases of the validate suites")
    parser.add_argument("--only", choices=("provider", "validate"), action="append")
    args = parser.parse_args()
    byte_compile()
    print(f"machine: {machine()}")
    only = set(args.only or ("provider", "validate"))
    with tempfile.TemporaryDirectory(prefix="bench-anthropic-") as tmp:
        if "provider" in only:
            bench_provider(args, Path(tmp))
        if "validate" in only:
            bench_validate(args, Path(tmp))


if __name__ == "__main__":
    main()
