"""Importing traced conversations streams: peak memory stays flat in their number.

Run: ``.venv/bin/python benchmarks/bench_import_traces.py [--small 1000] [--large 10000]``

Writes two JSON Lines files of OTLP exports (one conversation per line, each different: its
own user text, call arguments and tool answer), imports each with
`evalspec import traces FILE --out suite.yaml --transcripts t.jsonl --redact email` in a child
process, and compares the children's peak RSS. Goal: the large import's peak within 1.15x the
small one's (memory flat in the number of conversations); its time is reported.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import evalspec_cmd, goal, machine, run_child


def conversation(i: int) -> str:
    """One OTLP export line: a chat span with the whole conversation, and its root span."""
    trace = f"{i:032x}"
    messages = [
        {
            "role": "user",
            "parts": [{"type": "text", "content": f"Where is order {i}? I am u{i}@example.com"}],
        },
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": f"c{i}",
                    "name": "find_order",
                    "arguments": {"order_id": str(i), "verbose": i % 2 == 0},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": f"c{i}",
                    "response": {"status": "shipped", "day": f"2026-01-{i % 28 + 1:02d}"},
                }
            ],
        },
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"Order {i} shipped."}]}]

    def attr(key: str, value: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": value}}

    chat = {
        "traceId": trace,
        "spanId": "1",
        "parentSpanId": "0",
        "name": "chat",
        "startTimeUnixNano": "2",
        "attributes": [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.request.model", "gpt-4o"),
            attr("gen_ai.input.messages", json.dumps(messages)),
            attr("gen_ai.output.messages", json.dumps(answer)),
        ],
    }
    root = {"traceId": trace, "spanId": "0", "name": "agent", "startTimeUnixNano": "1"}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [chat, root]}]}]})


def write_traces(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(conversation(i) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000)
    args = parser.parse_args()
    print(machine())
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="bench-traces-") as tmp:
        for n in (args.small, args.large):
            source = Path(tmp) / f"traces-{n}.jsonl"
            write_traces(source, n)
            out, runs = Path(tmp) / f"suite-{n}.yaml", Path(tmp) / f"t-{n}.jsonl"
            cmd = [*evalspec_cmd(), "import", "traces", str(source), "--out", str(out)]
            child = run_child([*cmd, "--transcripts", str(runs), "--redact", "email"])
            if child.returncode != 0:
                raise SystemExit(child.stderr[-2000:])
            size = source.stat().st_size / 2**20
            print(
                f"{n} conversations ({size:.1f} MiB of spans): {child.wall:.2f} s, "
                f"peak RSS {child.maxrss_mb:.1f} MiB, suite {out.stat().st_size / 2**20:.1f} MiB"
            )
            peaks[n] = child.maxrss_mb
    goal(
        f"peak RSS, {args.large} against {args.small} conversations (flat)",
        peaks[args.large] / peaks[args.small],
        "<=",
        1.15,
        "{:.3f}x",
    )


if __name__ == "__main__":
    main()
