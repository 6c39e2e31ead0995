"""Which library declares evalspec's file records: msgspec or pydantic v2, by measurement.

Run: ``.venv/bin/python benchmarks/bench_records.py [--repeat 5] [--lines 10000]``

Measured in one run, interleaved:
  (a) whole-process import of each library (what declaring one record costs: msgspec's Struct
      and JSON decoder; pydantic's BaseModel and TypeAdapter) against `import yaml, jsonschema`,
      the floor `evalspec validate` is held to (within 3x);
  (b) decoding N real transcript lines (the 1.0 fixtures in tests/data/records_v1, cycled) into
      typed records, against plain `json.loads` into dicts, in this process.
The same three records (Transcript, ToolCall, Usage) are declared in both libraries here, with
the same fields and the same strictness, so only the library differs.
"""

import argparse
import statistics
import time
from typing import Any

from _common import PYTHON, REPO, interleave, machine, paired_ratio, run_child, summary

FIXTURES = REPO / "tests" / "data" / "records_v1"

IMPORTS = {
    "yaml+jsonschema": "import yaml, jsonschema",
    "msgspec": "import msgspec; msgspec.Struct; msgspec.json.Decoder",
    "pydantic": "import pydantic; pydantic.BaseModel; pydantic.TypeAdapter",
}


def transcript_lines(n: int) -> list[bytes]:
    lines = [
        line
        for path in sorted(FIXTURES.glob("*/transcripts.jsonl"))
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]
    return [lines[i % len(lines)] for i in range(n)]


def msgspec_decoder() -> Any:
    import msgspec

    class ToolCall(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        name: str
        arguments: dict[str, Any] | None = None
        raw_arguments: str = ""
        id: str = ""
        output: Any = None
        error: str | None = None
        turn: int = 0

    class Usage(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        prompt_tokens: int = 0
        completion_tokens: int = 0

    class Transcript(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        item_id: str
        case: str
        model: str
        trial: int = 0
        messages: tuple[dict[str, Any], ...] = ()
        tool_calls: tuple[ToolCall, ...] = ()
        final_answer: str | None = None
        finish_reason: str | None = None
        usage: Usage = msgspec.field(default_factory=Usage)
        latency_s: float = 0.0
        turns: int = 0
        error: str | None = None
        source: str = "live"
        version: int = 1

    decoder = msgspec.json.Decoder(Transcript)
    return decoder.decode


def pydantic_decoder() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    strict = ConfigDict(extra="forbid", frozen=True, strict=True)

    class ToolCall(BaseModel):
        model_config = strict
        name: str
        arguments: dict[str, Any] | None = None
        raw_arguments: str = ""
        id: str = ""
        output: Any = None
        error: str | None = None
        turn: int = 0

    class Usage(BaseModel):
        model_config = strict
        prompt_tokens: int = 0
        completion_tokens: int = 0

    class Transcript(BaseModel):
        model_config = strict
        item_id: str
        case: str
        model: str
        trial: int = 0
        messages: tuple[dict[str, Any], ...] = ()
        tool_calls: tuple[ToolCall, ...] = ()
        final_answer: str | None = None
        finish_reason: str | None = None
        usage: Usage = Field(default_factory=Usage)
        latency_s: float = 0.0
        turns: int = 0
        error: str | None = None
        source: str = "live"
        version: int = 1

    return Transcript.model_validate_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    print(f"machine: {machine()}")

    def imported(code: str) -> float:
        return run_child([PYTHON, "-c", code]).cpu_s

    print(f"(a) whole-process import, CPU seconds, {args.repeat} interleaved runs each")
    times = interleave({k: (lambda c=c: imported(c)) for k, c in IMPORTS.items()}, args.repeat)
    base = times["yaml+jsonschema"]
    for name, values in times.items():
        print(f"    {name:16} {summary(values)}")
    for name in ("msgspec", "pydantic"):
        print(
            f"    RATIO import {name} / import yaml+jsonschema: "
            f"{paired_ratio(times[name], base):.2f}"
        )

    import json

    lines = transcript_lines(args.lines)
    decoders = {
        "json.loads": json.loads,
        "msgspec": msgspec_decoder(),
        "pydantic": pydantic_decoder(),
    }
    for decode in decoders.values():  # all three read the same lines the same way
        decode(lines[0])

    def decoding(decode: Any) -> float:
        start = time.perf_counter()
        for line in lines:
            decode(line)
        return time.perf_counter() - start

    print(f"(b) decoding {len(lines)} real transcript lines, {args.repeat} interleaved runs each")
    runs = interleave({k: (lambda d=d: decoding(d)) for k, d in decoders.items()}, args.repeat)
    for name, values in runs.items():
        print(f"    {name:16} {summary(values)}")
    for name in ("msgspec", "pydantic"):
        ratio = paired_ratio(runs[name], runs["json.loads"])
        print(f"    RATIO typed decode {name} / json.loads: {ratio:.2f}")
    per_line = statistics.median(runs["msgspec"]) / len(lines) * 1e6
    print(f"    msgspec: {per_line:.1f} µs per line")


if __name__ == "__main__":
    main()
