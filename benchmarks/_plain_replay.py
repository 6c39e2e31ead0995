"""A hand-written replay of `bench_scale.py`'s suites: the floor a replay is held to.

What any replay of these suites must do for each case, written plainly, the cheapest obvious
way: read the case with its positions (`_positioned_tree.py`: reading the same files with
`yaml.load(Loader=CSafeLoader)` costs 9x more), key its request as evalspec keys it (sha256 of
the canonical JSON of model, messages and offered tools), take its recorded answer (its line
found by key, decoded with `json.loads` when the replay reaches it), judge the expected call
(name, then each argument: equal or not; the suites' similarity critic scores identical texts
1 without an embedding, and these recordings reword nothing), and write the transcript's line,
the result's line and the case's line (the fields evalspec writes; transcripts.jsonl byte for
byte evalspec's). No check, no limit, no statistics, no resumable run directory.

Usage: python _plain_replay.py SUITE RECORDINGS OUT_DIR. It prints "N cases, P passed" (the
benchmark holds P to what evalspec's run counted, and its transcripts.jsonl to evalspec's).
"""

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from _positioned_tree import read

CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
LINE = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
PASS_AT = 0.9
MAX_TURNS, MODE = 8, "single_turn"
"""The run settings an item's id is made of (the language's default turns; the suites' mode)."""


def digest(text: str) -> str:
    """A content id, as evalspec makes one."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def offered_tools(head: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool as a request offers it."""
    return {
        t["name"]: {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
            },
        }
        for t in head["tools"]
    }


def recorded_answers(path: str) -> dict[str, str]:
    """Each recorded answer's line by its request's key, decoded when the replay reaches it
    (as evalspec's index does: 50,000 entries decoded up front, their dicts all alive at
    once, cost 1.1 s more in collections and memory; `key` is their first field)."""
    answers = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            start = line.index('"key": "') + 8
            answers[line[start : line.index('"', start)]] = line
    return answers


def judged(case: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[float, list[Any]]:
    """The case's score and its rows: the expected tool called, then each argument equal."""
    ((tool, expected),) = case["expect"]["tool_calls"][0].items()
    got = calls[0] if calls else None
    name = got["name"] if got else None
    rows = [row("tool_selection", tool, name, name == tool, "tool_selection")]
    if got is None or name != tool:
        return 0.0, rows
    for argument, want in expected.items():
        have = got["arguments"].get(argument)
        critic = "binary" if argument == "id" else "similarity"
        rows.append(row(argument, want, have, have == want, critic))
    return sum(r["score"] for r in rows) / len(rows), rows


def row(field: str, expected: Any, actual: Any, match: bool, critic: str) -> dict[str, Any]:
    """One row of a result, with the fields and the kind of reason evalspec writes."""
    reason = (
        f"Got {actual!r}, exactly as expected."
        if match
        else f"Expected {expected!r} but got {actual!r}."
    )
    return {
        "field": field,
        "expected": expected,
        "actual": actual,
        "score": float(match),
        "weight": 1.0,
        "reason": reason,
        "critic": critic,
        "call": 0,
        "match": match,
    }


def cases_of(head: dict[str, Any], base: str) -> Iterator[dict[str, Any]]:
    """The suite's cases in order, each included file's read when its turn comes."""
    for entry in head["cases"]:
        if "include" in entry:
            yield from read(os.path.join(base, entry["include"]))
        else:
            yield entry


def replay(suite_path: str, recordings: str, out: str) -> tuple[int, int]:
    base = os.path.dirname(suite_path)
    head = read(suite_path)
    model, tools, answers = head["models"][0], offered_tools(head), recorded_answers(recordings)
    results: list[str] = []
    summaries: list[str] = []
    passed = 0
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "transcripts.jsonl"), "w", encoding="utf-8") as lines:
        for case in cases_of(head, base):
            messages = [
                {"role": "system", "content": head["system"]},
                {"role": "user", "content": case["user"]},
            ]
            payload = {
                "messages": messages,
                "model": model["model"],
                "params": {},
                "tools": [tools[name] for name in case["tools"]],
                "trial": 0,
                "v": 1,
            }
            key = digest(CANONICAL.encode(payload))
            item_id = digest(f'{{"first":"{key}","max_turns":{MAX_TURNS},"mode":"{MODE}"}}')
            response = json.loads(answers[key])["response"]
            message = response["message"]
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": json.loads(call["function"]["arguments"]),
                    "raw_arguments": call["function"]["arguments"],
                    "output": {"ok": True},
                    "error": None,
                    "turn": 0,
                }
                for call in message.get("tool_calls") or []
            ]
            said = [
                {"role": "tool", "tool_call_id": c["id"], "content": json.dumps(c["output"])}
                for c in calls
            ]
            score, rows = judged(case, calls)
            status = "pass" if score >= PASS_AT else "fail"
            passed += status == "pass"
            transcript = {
                "case": case["name"],
                "error": None,
                "final_answer": None,
                "finish_reason": response["finish_reason"],
                "item_id": item_id,
                "latency_s": response["latency_s"],
                "messages": [*messages, message, *said],
                "model": model["name"],
                "source": "replay",
                "tool_calls": calls,
                "trial": 0,
                "turns": 1,
                "usage": response["usage"],
                "version": 1,
            }
            lines.write(LINE.encode(transcript) + "\n")
            reason = "" if status == "pass" else f"score {score:.3f} is below {PASS_AT}"
            result = {
                "item_id": item_id,
                "case": case["name"],
                "model": model["name"],
                "trial": 0,
                "score": score,
                "status": status,
                "reason": reason,
                "rows": rows,
                "evaluators": {},
                "details": {},
            }
            results.append(LINE.encode(result))
            summary = {
                "case": case["name"],
                "model": model["name"],
                "status": status,
                "score": score,
                "trials": 1,
                "passed": int(status == "pass"),
                "tags": [],
            }
            summaries.append(LINE.encode(summary))
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as fh:
        fh.write('{\n  "cases": [\n    ' + ",\n    ".join(summaries) + "\n  ],\n")
        fh.write('  "results": [\n    ' + ",\n    ".join(results) + "\n  ]\n}\n")
    return len(results), passed


if __name__ == "__main__":
    cases, passed = replay(*sys.argv[1:4])
    print(f"{cases} cases, {passed} passed")
