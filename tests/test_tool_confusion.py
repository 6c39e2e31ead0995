"""Tool confusion: per model, which tool was called where another was expected, counted from
the scored calls of every trial, in the console (80 columns) and results.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support import evalspec_cli

from evalspec.api import write_transcripts
from evalspec.records import ToolCall, Transcript

TOOL = """\
  - name: {name}
    description: {description}
    parameters: {{type: object, properties: {{a: {{type: number}}, b: {{type: number}}}}}}
"""
SUITE = (
    "suite: confusion\nmodels: [careful, hasty]\nrubric: {extra_calls: penalize}\ntools:\n"
    + TOOL.format(name="Math.Add", description="Add two numbers.")
    + TOOL.format(name="Math.Plus", description="Add two numbers too.")
    + TOOL.format(name="Files.Delete", description="Delete a file.")
    + """\
cases:
  - name: add
    user: add 2 and 3
    expect: {tool_calls: [{Math.Add: {a: 2, b: 3}}]}
  - name: add again
    user: add 4 and 5
    expect: {tool_calls: [{Math.Add: {a: 4, b: 5}}]}
  - name: chat
    user: hello
    expect: {no_tool_calls: true}
"""
)


def _transcript(case: str, model: str, trial: int, *calls: str) -> Transcript:
    made = tuple(ToolCall(name, {"a": 2, "b": 3}, "{}", f"c{i}") for i, name in enumerate(calls))
    return Transcript(
        item_id=f"{case}:{model}:{trial}",
        case=case,
        model=model,
        trial=trial,
        tool_calls=made,
        final_answer="done",
    )


def test_which_tool_was_called_instead_is_counted_per_model(tmp_path: Path) -> None:
    suite = tmp_path / "confusion.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    transcripts = tmp_path / "t.jsonl"
    write_transcripts(
        transcripts,
        [
            *(_transcript("add", "careful", k, "Math.Add") for k in range(2)),
            *(_transcript("add again", "careful", k, "Math.Add") for k in range(2)),
            *(_transcript("chat", "careful", k) for k in range(2)),
            # hasty: Math.Plus for Math.Add three times of four, once nothing, a delete in chat
            *(_transcript("add", "hasty", k, "Math.Plus") for k in range(2)),
            _transcript("add again", "hasty", 0, "Math.Plus", "Files.Delete"),
            _transcript("add again", "hasty", 1),
            _transcript("chat", "hasty", 0, "Files.Delete"),
            _transcript("chat", "hasty", 1),
        ],
    )
    out = tmp_path / "results.json"
    done = evalspec_cli(
        [
            "score",
            str(suite),
            "-t",
            str(transcripts),
            "--allow-stale",
            "--out",
            str(out),
            "--html",
            str(tmp_path / "report.html"),
        ],
        env={"COLUMNS": "80"},
    )
    assert done.exit_code == 1, done.output
    lines = done.output.splitlines()
    start = lines.index("tool confusion · hasty (expected → called):")
    assert lines[start + 1 : start + 4] == [
        "  Math.Add → Math.Plus  3 of 4",
        "  (no call expected) → Files.Delete  2",
        "  Math.Add → (no call)  1 of 4",
    ]
    assert "tool confusion · careful" not in done.output  # it never confused a tool
    assert all(len(line) <= 80 for line in lines[start : start + 4])

    models = {m["model"]: m for m in json.loads(out.read_text(encoding="utf-8"))["models"]}
    assert models["hasty"]["tool_confusion"] == [
        {"expected": "Math.Add", "called": "Math.Plus", "count": 3},
        {"expected": "", "called": "Files.Delete", "count": 2},
        {"expected": "Math.Add", "called": "", "count": 1},
    ]
    assert models["careful"]["tool_confusion"] == [
        {"expected": "Math.Add", "called": "Math.Add", "count": 4}
    ]

    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    section = page[
        page.index('<section id="confusion">') : page.index(
            "</section>", page.index('<section id="confusion">')
        )
    ]
    rows = [" ".join(r.split("</td>")[:4]) for r in section.split("<tr><td>")[1:]]
    assert [re.sub(r"<[^>]+>", "", r).split() for r in rows] == [
        ["hasty", "Math.Add", "Math.Plus", "3", "of", "4"],
        ["hasty", "(no", "call", "expected)", "Files.Delete", "2"],
        ["hasty", "Math.Add", "(no", "call)", "1", "of", "4"],
    ]
