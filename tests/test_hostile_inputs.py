# ruff: noqa: E501  (each expected line is one exact message, kept whole to be read as a user sees it)
"""Hostile inputs beyond suites: imported files, transcripts and results, and command-line paths.

Every entry builds one hostile input in a fresh directory, runs the command a user would, and
pins the exact error line and exit code: a clear `file:line:col: what; how to fix` (or `error:
...`) with exit code 2, never a traceback, never a hang. Suites have their own corpus in
tests/invalid/.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import evalspec_cli

SUITE = """\
suite: mini
models: [gpt-4o-mini]
tools:
  - name: get_weather
    parameters: {type: object, properties: {city: {type: string}}}
cases:
  - name: weather
    user: Weather in Paris?
    expect:
      tool_calls:
        - get_weather: {city: Paris}
"""

TRANSCRIPT = {
    "item_id": "i1",
    "case": "weather",
    "model": "gpt-4o-mini",
    "trial": 0,
    "messages": [],
    "tool_calls": [
        {
            "name": "get_weather",
            "arguments": {"city": "Paris"},
            "raw_arguments": "",
            "id": "c1",
            "turn": 0,
        }
    ],
    "final_answer": None,
    "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    "latency_s": 0.1,
    "turns": 1,
    "source": "live",
}

RESULTS = {
    "suite": "mini",
    "cases": [
        {"case": "weather", "model": "gpt-4o-mini", "status": "pass", "score": 1.0, "reason": ""}
    ],
    "results": [
        {
            "item_id": "i1",
            "case": "weather",
            "model": "gpt-4o-mini",
            "trial": 0,
            "score": 1.0,
            "status": "pass",
            "reason": "",
            "rows": [
                {
                    "field": "city",
                    "expected": "Paris",
                    "actual": "Paris",
                    "score": 1.0,
                    "weight": 1.0,
                    "reason": "same",
                    "critic": "exact",
                    "call": 0,
                    "match": True,
                }
            ],
            "evaluators": {},
            "details": {},
        }
    ],
}


@dataclass(frozen=True)
class Hostile:
    """One hostile input: how to make it, the command to run, what must be printed."""

    make: Callable[[Path], None]
    args: list[str]
    expected: str
    """The exact line the command prints (the last line of its output, or the first when the
    command reports several problems and a count)."""
    code: int = 2


def write(name: str, content: str | bytes) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    return make


def files(*makers: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        for m in makers:
            m(d)

    return make


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def transcript(**changes: object) -> dict:
    return {**TRANSCRIPT, **changes}


def results(**changes: object) -> dict:
    return {**RESULTS, **changes}


def result_row(**changes: object) -> dict:
    r = dict(RESULTS["results"][0])
    r["rows"] = [{**r["rows"][0], **changes}]
    return results(results=[r])


def case_entry(**changes: object) -> dict:
    return results(cases=[{**RESULTS["cases"][0], **changes}])


def mkdir(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).mkdir(parents=True, exist_ok=True)


def fifo(name: str) -> Callable[[Path], None]:
    return lambda d: os.mkfifo(d / name)


def symlink_loop(name: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        (d / name).symlink_to(f"{name}.other")
        (d / f"{name}.other").symlink_to(name)

    return make


def sparse(name: str, size: int) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        with open(d / name, "wb") as fh:
            fh.truncate(size)

    return make


NESTED = "[" * 5000 + "]" * 5000
SUITE_FILE = write("s.yaml", SUITE)
BFCL_Q = '{"id": "simple_0", "question": [[{"role": "user", "content": "Weather in Paris?"}]], "function": [{"name": "get_weather", "description": "d", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}\n'
BFCL_A = '{"id": "simple_0", "ground_truth": [{"get_weather": {"city": ["Paris"]}}]}\n'
BFCL_SUITE = files(write("q.json", BFCL_Q), write("a.json", BFCL_A))


def otel_attr(value: dict) -> str:
    span = {
        "traceId": "t",
        "spanId": "s",
        "name": "tool",
        "attributes": [{"key": "tool.name", "value": value}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


ONE_RESULT = (
    "1 result entries read: 1 transcript(s) of cases of s.yaml (0 errored: each fails), "
    "0 skipped, 0 refused"
)

IMPORTERS: dict[str, Hostile] = {
    # BFCL question and answer files
    "bfcl empty file": Hostile(
        files(write("q.json", ""), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:1: the file is empty: it holds no BFCL records; name a BFCL .json file",
    ),
    "bfcl only blank lines": Hostile(
        files(write("q.json", "\n\n  \n"), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:1: the file is empty: it holds no BFCL records; name a BFCL .json file",
    ),
    "bfcl not utf-8": Hostile(
        files(write("q.json", b'{"id": "caf\xe9"}\n'), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:12: is not valid UTF-8 text (byte 0xe9); save the file as UTF-8",
    ),
    "bfcl deeply nested": Hostile(
        files(
            write("q.json", '{"id": "x", "question": ' + NESTED + "}\n"), write("a.json", BFCL_A)
        ),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:224: record line-1 refused: the JSON nests deeper than 200 levels; check that it is a BFCL question file",
    ),
    "bfcl NaN": Hostile(
        files(write("q.json", '{"id": "x", "n": NaN}\n'), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:1: record line-1 refused: invalid JSON: NaN is not a number JSON allows; check that it is a BFCL question file",
    ),
    "bfcl huge exponent": Hostile(
        files(write("q.json", '{"id": "x", "n": 1e999}\n'), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:1: record line-1 refused: invalid JSON: 1e999 is too large for a number; check that it is a BFCL question file",
    ),
    "bfcl record not an object": Hostile(
        files(write("q.json", BFCL_Q + "5\n"), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "2 question entries read: 1 imported as cases, 1 refused (each stands as a case tagged import-refused that fails)",
        0,
    ),
    "bfcl record without id": Hostile(
        files(write("q.json", '{"question": []}\n'), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:1: record line-1 refused: every record must be a JSON object with an 'id', got an object with keys 'question'; check that it is a BFCL question file",
    ),
    "bfcl torn line": Hostile(
        files(write("q.json", BFCL_Q + '{"id": "simple_1", "quest'), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "2 question entries read: 1 imported as cases, 1 refused (each stands as a case tagged import-refused that fails)",
        0,
    ),
    "bfcl function not a list": Hostile(
        files(
            write(
                "q.json",
                '{"id": "simple_0", "question": [[{"role": "user", "content": "hi"}]], "function": 5}\n',
            ),
            write("a.json", BFCL_A),
        ),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:1: record simple_0 refused: its 'function' is not a list of named function docs; check that it is a BFCL question file with its possible answers",
    ),
    "bfcl question a directory": Hostile(
        files(mkdir("q.json"), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:1: is a directory, not a regular file; name a file inside it",
    ),
    "bfcl question /dev/zero": Hostile(
        write("a.json", BFCL_A),
        ["import", "bfcl", "/dev/zero", "a.json", "--out", "s.yaml"],
        "/dev/zero:1:1: is a character device, not a regular file; name a regular file",
    ),
    "bfcl question a FIFO": Hostile(
        files(fifo("q.json"), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:1: is a named pipe (FIFO), not a regular file; name a regular file",
    ),
    "bfcl question a symlink loop": Hostile(
        files(symlink_loop("q.json"), write("a.json", BFCL_A)),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "q.json:1:1: is a symbolic link that loops back on itself; point the link at a file",
    ),
    "bfcl --out a directory": Hostile(
        files(BFCL_SUITE, mkdir("out")),
        ["import", "bfcl", "q.json", "a.json", "--out", "out"],
        "error: --out out is a directory; name a file to write (in it or elsewhere)",
    ),
    "bfcl answer entry empty": Hostile(
        files(
            write("q.json", BFCL_Q), write("a.json", '{"id": "simple_0", "ground_truth": [{}]}\n')
        ),
        ["import", "bfcl", "q.json", "a.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: a.json:1:1: record simple_0 refused: {} is not one {function: arguments}; check that it is a BFCL question file with its possible answers",
    ),
    # BFCL results
    "bfcl-results lone surrogate in a call": Hostile(
        files(
            SUITE_FILE,
            write("r.json", '{"id": "weather", "result": "[get_weather(city=\'\\ud800\')]"}\n'),
        ),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        ONE_RESULT,
        0,
    ),
    "bfcl-results ... in a call": Hostile(
        files(
            SUITE_FILE, write("r.json", '{"id": "weather", "result": "[get_weather(city=...)]"}\n')
        ),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        ONE_RESULT,
        0,
    ),
    "bfcl-results lone surrogate in JSON arguments": Hostile(
        files(
            SUITE_FILE,
            write(
                "r.json", '{"id": "weather", "result": [{"get_weather": {"city": "\\udfff"}}]}\n'
            ),
        ),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        ONE_RESULT,
        0,
    ),
    "bfcl-results result missing": Hostile(
        files(SUITE_FILE, write("r.json", '{"id": "weather"}\n')),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        "error: every record was refused, nothing written: r.json:1:1: record weather refused: it has no 'result': got an object with keys 'id'; check that it is a BFCL result file ({id, result} lines)",
    ),
    "bfcl-results empty": Hostile(
        files(SUITE_FILE, write("r.json", "")),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        "r.json:1:1: the file is empty: it holds no BFCL records; name a BFCL .json file",
    ),
    "bfcl-results deeply nested call": Hostile(
        files(
            SUITE_FILE,
            write(
                "r.json",
                json.dumps(
                    {
                        "id": "weather",
                        "result": "[get_weather(city=" + "[" * 3000 + "]" * 3000 + ")]",
                    }
                )
                + "\n",
            ),
        ),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        ONE_RESULT,
        0,
    ),
    "bfcl-results call text of 2 MB": Hostile(
        files(
            SUITE_FILE,
            write("r.json", json.dumps({"id": "weather", "result": "x" * 2_000_000}) + "\n"),
        ),
        ["import", "bfcl-results", "s.yaml", "r.json", "--out", "t.jsonl"],
        ONE_RESULT,
        0,
    ),
    # OpenTelemetry
    "otel intValue abc": Hostile(
        write("spans.json", otel_attr({"intValue": "abc"})),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "error: every record was refused, nothing written: spans.json:1:1: record trace t refused: span 1: intValue 'abc' is not a number; check that it is an OpenTelemetry JSON export",
    ),
    "otel doubleValue NaN text": Hostile(
        write("spans.json", otel_attr({"doubleValue": "NaN"})),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "error: every record was refused, nothing written: spans.json:1:1: record trace t refused: span 1: doubleValue 'NaN' is not a finite number; check that it is an OpenTelemetry JSON export",
    ),
    "otel bytesValue not base64": Hostile(
        write("spans.json", otel_attr({"bytesValue": "%%%"})),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "1 trace(s) read: 1 tool call(s), 0 final answer(s)",
        0,
    ),
    "otel attribute value a number": Hostile(
        write("spans.json", otel_attr(5)),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "error: every record was refused, nothing written: spans.json:1:1: record trace t refused: span 1: an attribute value must be an object, got 5; check that it is an OpenTelemetry JSON export",
    ),
    "otel lone surrogate": Hostile(
        write("spans.json", otel_attr({"stringValue": "\\ud800"}).replace("\\\\ud800", "\\ud800")),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "1 trace(s) read: 1 tool call(s), 0 final answer(s)",
        0,
    ),
    "otel not utf-8": Hostile(
        write("spans.json", b'{"name": "\xff"}'),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "spans.json:1:11: is not valid UTF-8 text (byte 0xff); save the file as UTF-8",
    ),
    "otel deeply nested": Hostile(
        write("spans.json", NESTED),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "spans.json:1:201: the JSON nests deeper than 200 levels; flatten it: evalspec's files never need this much nesting",
    ),
    "otel empty file": Hostile(
        write("spans.json", ""),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "spans.json:1:1: invalid JSON: Expecting value; check the file is JSON",
    ),
    "otel Infinity": Hostile(
        write("spans.json", '[{"name": "x", "startTimeUnixNano": Infinity}]'),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "spans.json:1:1: invalid JSON: Infinity is not a number JSON allows; write a finite number",
    ),
    "otel spans not a list": Hostile(
        write("spans.json", '{"resourceSpans": [{"scopeSpans": [{"spans": 5}]}]}'),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "error: spans.json is not a valid OpenTelemetry JSON file: a value has the wrong type ('int' object is not iterable); check that it is OpenTelemetry JSON output",
    ),
    "otel a directory": Hostile(
        mkdir("spans.json"),
        ["import", "otel", "spans.json", "--case", "weather", "--out", "t.jsonl"],
        "spans.json:1:1: is a directory, not a regular file; name a file inside it",
    ),
    # StableToolBench
    "stabletoolbench queries a number": Hostile(
        write("q.json", "5"),
        ["import", "stabletoolbench", "q.json", "--out", "s.yaml"],
        "q.json:1:1: the file holds no query: a test_instruction file is a JSON list of queries (or an object of them by id), got a number; name a StableToolBench solvable_queries/test_instruction file",
    ),
    "stabletoolbench query not an object": Hostile(
        write("q.json", "[5]"),
        ["import", "stabletoolbench", "q.json", "--out", "s.yaml"],
        "error: every record was refused, nothing written: q.json:1:1: record query-1 refused: the query is not an object, got a number; check that it is a StableToolBench file",
    ),
    "stabletoolbench not utf-8": Hostile(
        write("q.json", b'["\xfe"]'),
        ["import", "stabletoolbench", "q.json", "--out", "s.yaml"],
        "q.json:1:3: is not valid UTF-8 text (byte 0xfe); save the file as UTF-8",
    ),
    "stabletoolbench deeply nested": Hostile(
        write("q.json", NESTED),
        ["import", "stabletoolbench", "q.json", "--out", "s.yaml"],
        "q.json:1:201: the JSON nests deeper than 200 levels; flatten it: evalspec's files never need this much nesting",
    ),
    "stabletoolbench-answers a list": Hostile(
        write("c.json", "[1, 2]"),
        ["import", "stabletoolbench-answers", "c.json", "--out", "t.jsonl"],
        "c.json:1:1: a converted answer file must be a JSON object of answers by query id, got a list of 2; name a model_predictions_converted file",
    ),
    "stabletoolbench-answers record a number": Hostile(
        write("c.json", '{"q1": 5}'),
        ["import", "stabletoolbench-answers", "c.json", "--out", "t.jsonl"],
        "error: every record was refused, nothing written: c.json:1:1: record q1 refused: the answer is not an object, got a number; check that it is a model_predictions_converted answer file",
    ),
    "stabletoolbench-answers NaN": Hostile(
        write("c.json", '{"q1": NaN}'),
        ["import", "stabletoolbench-answers", "c.json", "--out", "t.jsonl"],
        "c.json:1:1: invalid JSON: NaN is not a number JSON allows; write a finite number",
    ),
}

SCORE = ["score", "s.yaml", "-t", "t.jsonl"]
COMPARE = ["compare", "a.json", "b.json"]
GOOD_RESULTS = write("a.json", json.dumps(RESULTS))

TRANSCRIPTS: dict[str, Hostile] = {
    "case a number": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(case=5)))),
        SCORE,
        "t.jsonl:1:1: not a transcript: case: expected text, got a number (5); each line must be one transcript, as `evalspec run` writes it",
    ),
    "model missing": Hostile(
        files(
            SUITE_FILE,
            write("t.jsonl", jsonl({k: v for k, v in TRANSCRIPT.items() if k != "model"})),
        ),
        SCORE,
        "t.jsonl:1:1: not a transcript: model: is missing; each line must be one transcript, as `evalspec run` writes it",
    ),
    "prompt_tokens text": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(usage={"prompt_tokens": "x"})))),
        SCORE,
        "t.jsonl:1:1: not a transcript: usage.prompt_tokens: expected a whole number of 0 or more, got text ('x'); each line must be one transcript, as `evalspec run` writes it",
    ),
    "completion_tokens negative": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(usage={"completion_tokens": -1})))),
        SCORE,
        "t.jsonl:1:1: not a transcript: usage.completion_tokens: expected a whole number of 0 or more, got a number (-1); each line must be one transcript, as `evalspec run` writes it",
    ),
    "usage a list": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(usage=[1])))),
        SCORE,
        "t.jsonl:1:1: not a transcript: usage: expected a JSON object, got a list; each line must be one transcript, as `evalspec run` writes it",
    ),
    "trial true": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(trial=True)))),
        SCORE,
        "t.jsonl:1:1: not a transcript: trial: expected a whole number of 0 or more, got true/false (true); each line must be one transcript, as `evalspec run` writes it",
    ),
    "latency text": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(latency_s="fast")))),
        SCORE,
        "t.jsonl:1:1: not a transcript: latency_s: expected a number, got text ('fast'); each line must be one transcript, as `evalspec run` writes it",
    ),
    "tool_calls an object": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(tool_calls={"name": "x"})))),
        SCORE,
        "t.jsonl:1:1: not a transcript: tool_calls: expected a list, got an object; each line must be one transcript, as `evalspec run` writes it",
    ),
    "tool call without name": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(tool_calls=[{"arguments": {}}])))),
        SCORE,
        "t.jsonl:1:1: not a transcript: tool_calls[0].name: is missing; each line must be one transcript, as `evalspec run` writes it",
    ),
    "tool call arguments text": Hostile(
        files(
            SUITE_FILE,
            write(
                "t.jsonl",
                jsonl(transcript(tool_calls=[{"name": "get_weather", "arguments": "city=Paris"}])),
            ),
        ),
        SCORE,
        "t.jsonl:1:1: not a transcript: tool_calls[0].arguments: expected a JSON object or null, got text ('city=Paris'); each line must be one transcript, as `evalspec run` writes it",
    ),
    "messages null": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(messages=None)))),
        SCORE,
        "t.jsonl:1:1: not a transcript: messages: expected a list, got null; each line must be one transcript, as `evalspec run` writes it",
    ),
    "tool_calls null": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(tool_calls=None)))),
        SCORE,
        "t.jsonl:1:1: not a transcript: tool_calls: expected a list, got null; each line must be one transcript, as `evalspec run` writes it",
    ),
    "message a number": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(messages=[5])))),
        SCORE,
        "t.jsonl:1:1: not a transcript: messages[0]: expected a JSON object, got a number (5); each line must be one transcript, as `evalspec run` writes it",
    ),
    "final answer a number": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(transcript(final_answer=42)))),
        SCORE,
        "t.jsonl:1:1: not a transcript: final_answer: expected text or null, got a number (42); each line must be one transcript, as `evalspec run` writes it",
    ),
    "line a list": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(TRANSCRIPT) + "[1, 2]\n")),
        SCORE,
        "t.jsonl:2:1: not a transcript: the line: expected a JSON object, got a list; each line must be one transcript, as `evalspec run` writes it",
    ),
    "line a number": Hostile(
        files(SUITE_FILE, write("t.jsonl", "5\n")),
        SCORE,
        "t.jsonl:1:1: not a transcript: the line: expected a JSON object, got a number (5); each line must be one transcript, as `evalspec run` writes it",
    ),
    "line text": Hostile(
        files(SUITE_FILE, write("t.jsonl", '"hello"\n')),
        SCORE,
        "t.jsonl:1:1: not a transcript: the line: expected a JSON object, got text ('hello'); each line must be one transcript, as `evalspec run` writes it",
    ),
    "line null": Hostile(
        files(SUITE_FILE, write("t.jsonl", "null\n")),
        SCORE,
        "t.jsonl:1:1: not a transcript: the line: expected a JSON object, got null; each line must be one transcript, as `evalspec run` writes it",
    ),
    "line torn": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(TRANSCRIPT) + '{"item_id": "i2", "ca')),
        SCORE,
        "t.jsonl:2:19: invalid JSON: Unterminated string starting at; check the file is JSON",
    ),
    "5,000 levels of nesting": Hostile(
        files(SUITE_FILE, write("t.jsonl", '{"item_id": ' + NESTED + "}\n")),
        SCORE,
        "t.jsonl:1:212: the JSON nests deeper than 200 levels; flatten it: evalspec's files never need this much nesting",
    ),
    "NaN latency": Hostile(
        files(
            SUITE_FILE,
            write("t.jsonl", json.dumps(transcript(latency_s=0.5)).replace("0.5", "NaN") + "\n"),
        ),
        SCORE,
        "t.jsonl:1:1: invalid JSON: NaN is not a number JSON allows; write a finite number",
    ),
    "not utf-8": Hostile(
        files(SUITE_FILE, write("t.jsonl", b'{"item_id": "\xc3\x28"}\n')),
        SCORE,
        "t.jsonl:1:14: is not valid UTF-8 text (byte 0xc3); save the file as UTF-8",
    ),
    "a JSON list that is not of transcripts": Hostile(
        files(SUITE_FILE, write("t.jsonl", "[5]")),
        SCORE,
        "t.jsonl:1:1: not a transcript: [0]: expected a JSON object, got a number (5); each line must be one transcript, as `evalspec run` writes it",
    ),
    "transcripts /dev/zero": Hostile(
        SUITE_FILE,
        ["score", "s.yaml", "-t", "/dev/zero"],
        "/dev/zero:1:1: is a character device, not a regular file; name a regular file",
    ),
    "transcripts a FIFO": Hostile(
        files(SUITE_FILE, fifo("t.jsonl")),
        SCORE,
        "t.jsonl:1:1: is a named pipe (FIFO), not a regular file; name a regular file",
    ),
    # results.json read by compare
    "results status bogus": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(case_entry(status="bogus")))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: cases[0].status: expected one of captured, error, fail, pass, user_fault, warn, got text ('bogus'); pass a results.json written by evalspec run or score",
    ),
    "results case a number": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(case_entry(case=5)))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: cases[0].case: expected text, got a number (5); pass a results.json written by evalspec run or score",
    ),
    "results score text": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(case_entry(score="high")))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: cases[0].score: expected a number, got text ('high'); pass a results.json written by evalspec run or score",
    ),
    "results score NaN": Hostile(
        files(
            GOOD_RESULTS,
            write("b.json", json.dumps(RESULTS).replace('"score": 1.0', '"score": NaN', 1)),
        ),
        COMPARE,
        "b.json:1:1: invalid JSON: NaN is not a number JSON allows; write a finite number",
    ),
    "results score Infinity": Hostile(
        files(
            GOOD_RESULTS,
            write("b.json", json.dumps(RESULTS).replace('"score": 1.0', '"score": Infinity', 1)),
        ),
        COMPARE,
        "b.json:1:1: invalid JSON: Infinity is not a number JSON allows; write a finite number",
    ),
    "results cases missing": Hostile(
        files(GOOD_RESULTS, write("b.json", '{"suite": "mini"}')),
        COMPARE,
        "b.json:1:1: not an evalspec results file: cases: is missing; pass a results.json written by evalspec run or score",
    ),
    "results cases an object": Hostile(
        files(GOOD_RESULTS, write("b.json", '{"cases": {}}')),
        COMPARE,
        "b.json:1:1: not an evalspec results file: cases: expected a list, got an object; pass a results.json written by evalspec run or score",
    ),
    "results a list": Hostile(
        files(GOOD_RESULTS, write("b.json", "[]")),
        COMPARE,
        "b.json:1:1: not an evalspec results file: the file: expected a JSON object, got a list; pass a results.json written by evalspec run or score",
    ),
    "results row weight text": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(result_row(weight="x")))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: results[0].rows[0].weight: expected a number, got text ('x'); pass a results.json written by evalspec run or score",
    ),
    "results row unknown key": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(result_row(colour="red")))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: results[0].rows[0]: unknown key 'colour'; pass a results.json written by evalspec run or score",
    ),
    "results row call text": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(result_row(call="first")))),
        COMPARE,
        "b.json:1:1: not an evalspec results file: results[0].rows[0].call: expected a whole number of 0 or more or null, got text ('first'); pass a results.json written by evalspec run or score",
    ),
    "results evaluator score text": Hostile(
        files(
            GOOD_RESULTS,
            write(
                "b.json",
                json.dumps(
                    results(results=[{**RESULTS["results"][0], "evaluators": {"order": "x"}}])
                ),
            ),
        ),
        COMPARE,
        "b.json:1:1: not an evalspec results file: results[0].evaluators.order: expected a number, got text ('x'); pass a results.json written by evalspec run or score",
    ),
    "results 5,000 levels of nesting": Hostile(
        files(GOOD_RESULTS, write("b.json", '{"cases": ' + NESTED + "}")),
        COMPARE,
        "b.json:1:210: the JSON nests deeper than 200 levels; flatten it: evalspec's files never need this much nesting",
    ),
    "results not utf-8": Hostile(
        files(GOOD_RESULTS, write("b.json", b'{"suite": "\xff"}')),
        COMPARE,
        "b.json:1:12: is not valid UTF-8 text (byte 0xff); save the file as UTF-8",
    ),
    "results empty": Hostile(
        files(GOOD_RESULTS, write("b.json", "")),
        COMPARE,
        "b.json:1:1: invalid JSON: Expecting value; check the file is JSON",
    ),
    "results /dev/zero": Hostile(
        GOOD_RESULTS,
        ["compare", "a.json", "/dev/zero"],
        "/dev/zero:1:1: is a character device, not a regular file; name a regular file",
    ),
}

PATHS: dict[str, Hostile] = {
    "run --out names a file": Hostile(
        files(SUITE_FILE, write("out", "")),
        ["run", "s.yaml", "--out", "out"],
        "error: --out out is a file, not a directory; name a directory",
    ),
    "run --out under a file": Hostile(
        files(SUITE_FILE, write("out", "")),
        ["run", "s.yaml", "--out", "out/run1"],
        "error: --out out/run1: out is a file, so nothing can be written in it",
    ),
    "run --junit names a directory": Hostile(
        files(SUITE_FILE, mkdir("reports")),
        ["run", "s.yaml", "--junit", "reports"],
        "error: --junit reports is a directory; name a file to write (in it or elsewhere)",
    ),
    "run --html names a directory": Hostile(
        files(SUITE_FILE, mkdir("reports")),
        ["run", "s.yaml", "--html", "reports"],
        "error: --html reports is a directory; name a file to write (in it or elsewhere)",
    ),
    "run --markdown names a directory": Hostile(
        files(SUITE_FILE, mkdir("reports")),
        ["run", "s.yaml", "--markdown", "reports"],
        "error: --markdown reports is a directory; name a file to write (in it or elsewhere)",
    ),
    "run --junit names a device": Hostile(
        SUITE_FILE,
        ["run", "s.yaml", "--junit", "/dev/null"],
        "error: --junit /dev/null is not a regular file; name a file to write",
    ),
    "run --recordings names a directory": Hostile(
        files(SUITE_FILE, mkdir("rec")),
        ["run", "s.yaml", "--recordings", "rec"],
        "error: --recordings rec is a directory; name a file to write (in it or elsewhere)",
    ),
    "score --out names a directory": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(TRANSCRIPT)), mkdir("res")),
        ["score", "s.yaml", "-t", "t.jsonl", "--out", "res"],
        "error: --out res is a directory; name a file to write (in it or elsewhere)",
    ),
    "score --html under a file": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(TRANSCRIPT)), write("res", "")),
        ["score", "s.yaml", "-t", "t.jsonl", "--html", "res/r.html"],
        "error: --html res/r.html: res is a file, so nothing can be written in it",
    ),
    "compare --markdown names a directory": Hostile(
        files(GOOD_RESULTS, write("b.json", json.dumps(RESULTS)), mkdir("md")),
        ["compare", "a.json", "b.json", "--markdown", "md"],
        "error: --markdown md is a directory; name a file to write (in it or elsewhere)",
    ),
    "diff --markdown names a directory": Hostile(
        files(SUITE_FILE, write("t.jsonl", jsonl(TRANSCRIPT)), mkdir("md")),
        ["diff", "s.yaml", "s.yaml", "-t", "t.jsonl", "--markdown", "md"],
        "error: --markdown md is a directory; name a file to write (in it or elsewhere)",
    ),
    "merge --out names a file": Hostile(
        files(mkdir("r1"), write("out", "")),
        ["merge", "r1", "--out", "out"],
        "error: --out out is a file, not a directory; name a directory",
    ),
    "run --resume with transcripts a FIFO": Hostile(
        files(SUITE_FILE, mkdir("r1"), fifo("r1/transcripts.jsonl")),
        ["run", "s.yaml", "--record", "offline", "--resume", "r1"],
        "r1/transcripts.jsonl:1:1: is a named pipe (FIFO), not a regular file; name a regular file",
    ),
    "run --resume with run.json a FIFO": Hostile(
        files(SUITE_FILE, mkdir("r1"), fifo("r1/run.json")),
        ["run", "s.yaml", "--record", "offline", "--resume", "r1"],
        "r1/run.json:1:1: is a named pipe (FIFO), not a regular file; name a regular file",
    ),
    "validate a directory": Hostile(
        mkdir("suites"),
        ["validate", "suites"],
        "suites:1:1: is a directory, not a YAML file; name a .yaml file inside it",
    ),
    "validate /dev/zero": Hostile(
        lambda d: None,
        ["validate", "/dev/zero"],
        "/dev/zero:1:1: is a character device, not a regular file; name a regular file",
    ),
    "validate a FIFO": Hostile(
        fifo("s.yaml"),
        ["validate", "s.yaml"],
        "s.yaml:1:1: is a named pipe (FIFO), not a regular file; name a regular file",
    ),
    "validate a symlink loop": Hostile(
        symlink_loop("s.yaml"),
        ["validate", "s.yaml"],
        "s.yaml:1:1: is a symbolic link that loops back on itself; point the link at a file",
    ),
    "validate a 17 MB file": Hostile(
        sparse("s.yaml", 17 * 1024 * 1024),
        ["validate", "s.yaml"],
        "s.yaml:1:1: the file is 17825792 bytes; the limit is 16777216 bytes; split it into several suites, or raise the limit with EVALSPEC_MAX_SUITE_BYTES",
    ),
    "validate ** beside symlinks to .": Hostile(
        files(
            SUITE_FILE,
            write("sub/t.yaml", SUITE),
            lambda d: (d / "loop").symlink_to("."),
            lambda d: (d / "sub" / "up").symlink_to(".."),
        ),
        ["validate", "**/*.yaml"],
        "2 suites valid (2 cases)",
        0,
    ),
    "score transcripts a directory without transcripts": Hostile(
        files(SUITE_FILE, mkdir("run")),
        ["score", "s.yaml", "-t", "run"],
        "error: no transcripts at run/transcripts.jsonl; pass a run directory or a transcripts.jsonl",
    ),
    "compare a directory without results": Hostile(
        files(GOOD_RESULTS, mkdir("run")),
        ["compare", "a.json", "run"],
        "error: no results at run/results.json; pass a run directory or a results.json",
    ),
}


BIG_PLAN = SUITE.replace("cases:\n", "trials: 1000\ncases:\n").replace(
    "  - name: weather\n",
    "  - name: 'weather {{ n }}'\n    matrix: {n: [" + ", ".join(map(str, range(2000))) + "]}\n",
)

LIMITS: dict[str, Hostile] = {
    "plan of 2,000,000 requests": Hostile(
        write("s.yaml", BIG_PLAN),
        ["plan", "s.yaml"],
        "error: the plan has 2000000 items (cases × models × trials); the limit is 1000000: run fewer trials or models, or split the suite",
    ),
    "run of 2,000,000 requests": Hostile(
        write("s.yaml", BIG_PLAN),
        ["run", "s.yaml", "--record", "offline"],
        "error: the plan has 2000000 items (cases × models × trials); the limit is 1000000: run fewer trials or models, or split the suite",
    ),
}


def run_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Hostile) -> tuple[int, str]:
    case.make(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = evalspec_cli(case.args)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Hostile) -> str:
    code, output = run_cli(tmp_path, monkeypatch, case)
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    shown = lines[-1] if not lines[-1].endswith(" found") else lines[0]
    assert (code, shown) == (case.code, case.expected), output
    return output


@pytest.mark.parametrize("name", list(IMPORTERS))
def test_importers(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(tmp_path, monkeypatch, IMPORTERS[name])


@pytest.mark.parametrize("name", list(TRANSCRIPTS))
def test_transcripts_and_results(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check(tmp_path, monkeypatch, TRANSCRIPTS[name])


@pytest.mark.parametrize("name", list(PATHS))
def test_cli_paths(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(tmp_path, monkeypatch, PATHS[name])
    assert not (tmp_path / "runs").exists(), "a refused command started a run"


def test_imported_calls_keep_what_json_cannot_hold_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`...` and half a surrogate pair inside a BFCL call become text a transcript can store."""
    check(tmp_path, monkeypatch, IMPORTERS["bfcl-results ... in a call"])
    (line,) = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["tool_calls"][0]["arguments"] == {"city": "..."}
    (tmp_path / "t.jsonl").unlink()
    (tmp_path / "r.json").write_text(
        '{"id": "weather", "result": [{"get_weather": {"city": "Par\\udfffis"}}]}\n',
        encoding="utf-8",
    )
    code, _ = run_cli(
        tmp_path,
        monkeypatch,
        Hostile(lambda d: None, IMPORTERS["bfcl-results ... in a call"].args, ""),
    )
    assert code == 0
    (line,) = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["tool_calls"][0]["arguments"] == {"city": "Par\ufffdis"}


# ------------------------------------------------------------------ --base-ref: the base from git


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
    )


def _base_ref_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str) -> tuple[int, str]:
    """Commit `base` as suites/s.yaml, put the good suite on top, diff against HEAD."""
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "suites" / "s.yaml").write_text(base, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "suites" / "s.yaml").write_text(SUITE, encoding="utf-8")
    (repo / "t.jsonl").write_text(jsonl(TRANSCRIPT), encoding="utf-8")
    case = Hostile(
        lambda d: None, ["diff", "--base-ref", "HEAD", "suites/s.yaml", "-t", "t.jsonl"], ""
    )
    return run_cli(repo, monkeypatch, case)


BASE_REF: dict[str, tuple[str, str]] = {
    "include: .": (
        SUITE.replace("tools:\n", "tools:\n  - include: .\n"),
        "error: --base-ref HEAD: suites is included but is a directory at HEAD, not a file; an include names a .yaml file",
    ),
    'include: ""': (
        SUITE.replace("tools:\n", 'tools:\n  - include: ""\n'),
        "HEAD:suites/s.yaml:4:14: tools[0].include: include needs a file path; include: tools.yaml",
    ),
    "include: ..": (
        SUITE.replace("tools:\n", "tools:\n  - include: ..\n"),
        "error: --base-ref HEAD: . is included but is a directory at HEAD, not a file; an include names a .yaml file",
    ),
    "a mistake in the base": (
        SUITE.replace("user: Weather", "usr: Weather"),
        "HEAD:suites/s.yaml:8:5: cases[0]: unknown key 'usr'; did you mean 'user'?",
    ),
    "a template bomb in the base": (
        SUITE.replace("Weather in Paris?", "\"{{ 'a' * 300000000 }}\""),
        "HEAD:suites/s.yaml:8:11: cases[0].user: template stopped: the template repeats a value to more than 1000000 characters or items; templates are for filling in values; write large or repeated data out",
    ),
    "YAML nested too deeply to find its includes": (
        SUITE + "vars: {x: " + "[" * 3000 + "]" * 3000 + "}\n",
        "HEAD:suites/s.yaml:12:73: the data nests deeper than 64 levels; flatten it: a suite never needs this much nesting",
    ),
}


@pytest.mark.parametrize("name", list(BASE_REF))
def test_base_ref(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, expected = BASE_REF[name]
    code, output = _base_ref_diff(tmp_path, monkeypatch, base)
    assert "Traceback" not in output and "evalspec-base-" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    shown = lines[-1] if not lines[-1].endswith(" found") else lines[0]
    assert (code, shown) == (2, expected), output


@pytest.mark.parametrize("name", list(LIMITS))
def test_cli_limits(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(tmp_path, monkeypatch, LIMITS[name])
    assert not (tmp_path / "runs").exists(), "a refused command started a run"
