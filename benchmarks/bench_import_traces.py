"""Importing traced conversations streams: peak memory stays flat in their number.

Run: ``.venv/bin/python benchmarks/bench_import_traces.py [--small 1000] [--large 10000]
[--turns-apart] [--record]``

Writes two JSON Lines files of OTLP exports (one conversation per line, each different: its
own user text, call arguments and tool answer), imports each with
`evalspec import traces FILE --out suite.yaml --transcripts t.jsonl --redact email` in a child
process, and compares the children's peak RSS. With `--turns-apart`, each conversation is
two traces (two user turns) linked by `gen_ai.conversation.id`, every first turn written
before any second one: the import reads the file twice (an index of offsets, then each
conversation's lines). With `--record`, the import also writes the recordings (the suite run
once offline against the traced answers). Goal: the large import's peak within 1.15x the
small one's (memory flat in the number of conversations); its time is reported.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import evalspec_cmd, goal, machine, run_child


def conversation(i: int, named: bool = False) -> str:
    """One OTLP export line: a chat span with the whole conversation, and its root span
    (`named`: the root span names the conversation, `gen_ai.conversation.id`)."""
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
    if named:
        root["attributes"] = [attr("gen_ai.conversation.id", f"conv-{i}")]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [chat, root]}]}]})


def second_turn(i: int) -> str:
    """The conversation's second user turn, its own trace naming the same conversation."""
    said = {"role": "user", "parts": [{"type": "text", "content": f"Thanks, {i}"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "You are welcome."}]}
    attributes = {
        "gen_ai.conversation.id": f"conv-{i}",
        "gen_ai.input.messages": json.dumps([said]),
        "gen_ai.output.messages": json.dumps([answer]),
    }
    span = {
        "traceId": f"{i:031x}b",
        "spanId": "0",
        "name": "chat",
        "startTimeUnixNano": "9",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def write_traces(path: Path, n: int, apart: bool) -> None:
    """`apart`: each conversation two traces, every first turn written before any second."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(conversation(i, apart) + "\n")
        for i in range(n if apart else 0):
            fh.write(second_turn(i) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000)
    parser.add_argument(
        "--turns-apart",
        action="store_true",
        help="each conversation two traces linked by gen_ai.conversation.id, far apart",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="also write the recordings (--record): the suite is then run offline once",
    )
    args = parser.parse_args()
    print(machine())
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="bench-traces-") as tmp:
        for n in (args.small, args.large):
            source = Path(tmp) / f"traces-{n}.jsonl"
            write_traces(source, n, args.turns_apart)
            out, runs = Path(tmp) / f"suite-{n}.yaml", Path(tmp) / f"t-{n}.jsonl"
            cmd = [*evalspec_cmd(), "import", "traces", str(source), "--out", str(out)]
            more = ["--record"] if args.record else []
            child = run_child([*cmd, "--transcripts", str(runs), "--redact", "email", *more])
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
