"""The terminal report: several models share one table, and a summary row per model."""

from __future__ import annotations

import json
import re

import msgspec
from support import console_report, transcript

from evalspec.api import load_suite, score
from evalspec.records import Usage

SUITE = """
suite: side-by-side
models:
  - {name: cheap, model: cheap-1, price: {input: 1.0, output: 2.0}}
  - {name: smart, model: smart-1, price: {input: 10, output: 30}}
  - {name: free, model: free-1}
critics: {user: binary}
tools:
  - name: send_dm
    parameters: {type: object, properties: {user: {type: string}}}
cases:
  - name: greet bob
    user: tell bob hi
    trials: 2
    expect: {tool_calls: [{send_dm: {user: bob}}]}
  - name: greet ann
    user: tell ann hi
    expect: {tool_calls: [{send_dm: {user: ann}}]}
"""


def _transcripts():
    """Three models' answers: cheap flaky on greet bob, smart right, free wrong."""
    ts = []
    for model, user in (("cheap", "bob"), ("smart", "bob"), ("free", "zed")):
        for trial in (0, 1):
            t = transcript("greet bob", ("send_dm", {"user": user}), model=model, trial=trial)
            # cheap fails its second trial: pass@2 1.0, pass^2 0.0 for that case.
            if model == "cheap" and trial == 1:
                t = transcript("greet bob", ("send_dm", {"user": "x"}), model=model, trial=1)
            ts.append(
                msgspec.structs.replace(
                    t, usage=Usage(prompt_tokens=1000, completion_tokens=500), latency_s=0.5
                )
            )
        ts.append(transcript("greet ann", ("send_dm", {"user": "ann"}), model=model))
    return ts


def _report(write_suite):
    return score(load_suite(write_suite(SUITE)), _transcripts())


def _text(write_suite, text: str = SUITE, transcripts=None, *, verbose: bool = False) -> str:
    """The console report of `evalspec score` on a terminal 160 columns wide."""
    return console_report(
        write_suite(text), _transcripts() if transcripts is None else transcripts, verbose=verbose
    )


def test_models_share_one_table_with_a_column_each(write_suite):
    lines = _text(write_suite).splitlines()
    header = next(line for line in lines if "cheap" in line and "smart" in line)
    assert "free" in header
    bob = next(line for line in lines if "greet bob" in line)
    # One row, three cells: cheap 1 of 2, smart 2 of 2, free 0 of 2.
    assert "FAIL 1/2 flaky" in bob and "PASS 2/2" in bob and "FAIL 0/2" in bob
    side = lines[: next(i for i, line in enumerate(lines) if line.startswith("why not passed"))]
    assert sum("greet bob" in line for line in side) == 1
    # Trials of greet bob disagree for cheap: named under the table, with its count.
    # Each rate named for what it counts, as compare and review name them.
    said = " ".join(" ".join(lines).split())
    assert "cheap: case pass rate 50% (95% CI 9%–91%)" in said
    assert "trial pass rate 67% (95% CI 21%–94%)" in said
    assert "flaky (trials disagree): greet bob 1/2" in said


def test_summary_row_per_model_with_pass_at_k_tokens_latency_and_cost(write_suite):
    report = _report(write_suite)
    text = _text(write_suite)
    assert "pass@2" in text and "pass^2" in text and "cost" in text
    rows = {line.split()[1]: line.split()[2:] for line in text.splitlines() if "│" in line}
    rows = {k: [c for c in v if c != "│"] for k, v in rows.items()}
    # model | pass rate | mean | pass@2 | pass^2 | tokens | latency | cost
    assert rows["cheap"][0] == "50%"
    assert rows["cheap"][2:4] == ["1.00", "0.50"]  # bob: pass@2 1, pass^2 0; ann: 1 and 1
    assert rows["cheap"][4] == "3,000" and rows["cheap"][5] == "1.0s"
    assert rows["cheap"][6] == "0.0040"  # 2000 in x 1 + 1000 out x 2, per million
    assert rows["smart"][6] == "0.0500"
    assert rows["free"][6] == "-"
    data = json.loads(json.dumps(report.to_dict(), default=str))
    assert data["model_specs"][0] == {
        "name": "cheap",
        "model": "cheap-1",
        "params": {},
        "price": {"input": 1.0, "output": 2.0},
    }
    assert [m["cost"] for m in data["models"]] == [0.004, 0.05, None]


def test_names_that_look_like_markup_are_printed_as_written(write_suite):
    marked = SUITE.replace("name: greet ann", "name: '[bold]ann[/] [/x]'").replace(
        "{name: free, model: free-1}", "{name: '[red]free', model: free-1}"
    )
    ts = [
        transcript("[bold]ann[/] [/x]", ("send_dm", {"user": "ann"}), model=m)
        for m in ("cheap", "smart", "[red]free")
    ]
    text = _text(write_suite, marked, ts)
    assert "[bold]ann[/] [/x]" in text and "[red]free" in text
    single = SUITE.replace("name: greet ann", "name: '[bold]ann[/]'").replace(
        "  - {name: smart, model: smart-1, price: {input: 10, output: 30}}\n"
        "  - {name: free, model: free-1}\n",
        "",
    )
    assert single.count("model: ") == 1  # one model: its own table
    assert "[bold]ann[/]" in _text(write_suite, single, [transcript("[bold]ann[/]", model="cheap")])


def test_several_models_say_why_a_cell_did_not_pass(write_suite):
    """Each failing case x model gets its verdict and its whole reason, the case named once;
    passing cells get none. With --verbose the explanation rows follow."""
    report = _report(write_suite)
    lines = _text(write_suite).splitlines()
    start = lines.index("why not passed")
    end = lines.index(next(line for line in lines[start:] if line.startswith("models")))
    why = lines[start + 1 : end]
    assert [line for line in why if not line.startswith(" ")] == ["greet bob"]  # named once
    assert any(line.strip() == "cheap  FAIL 1/2 flaky 0.750 ±0.250" for line in why)
    assert any(line.strip() == "free  FAIL 0/2 0.500 ±0.000" for line in why)
    reasons = {c.model: c.reason for c in report.cases if c.case == "greet bob"}
    assert reasons["free"] in " ".join(" ".join(why).split())
    assert not any("smart" in line for line in why)  # smart passed every case
    assert not any("greet ann" in line for line in why)
    verbose = _text(write_suite, verbose=True)
    rows = verbose.split("why not passed")[1].split("models")[0]
    # Under each model's line, its worst trial's rows: cheap's second trial got 'x'.
    assert re.search(r"^ +user +x +0\.00×1 Expected 'bob' but got 'x'", rows, re.M)
    assert re.search(r"^ +user +x +0\.00×1 Expected 'bob' but got 'zed'", rows, re.M)
