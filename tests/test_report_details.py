"""Details every report shares: reasons read as one sentence, trials numbered as in the files,
JUnit times from the items' latency. How two reasons are joined is unit-tested in
tests/test_reasons.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from msgspec.structs import replace
from support import evalspec_cli, transcript

from evalspec.api import load_suite, score, write_reports
from evalspec.records import ReportFiles

SUITE = """
suite: details
models: [m]
rubric: {fail_threshold: 0.3, warn_threshold: 0.99}
critics: {user: binary, text: binary}
tools:
  - name: send_dm
    parameters:
      type: object
      properties: {user: {type: string}, text: {type: string}}
cases:
  - name: ok
    user: tell bob hi
    trials: 2
    expect: {tool_calls: [{send_dm: {user: bob, text: hi}}]}
  - name: half
    user: tell joe hello
    expect: {tool_calls: [{send_dm: {user: joe, text: hello}}]}
"""


def test_scored_reasons_never_end_on_a_colon_or_stack_punctuation(write_suite):
    suite = load_suite(write_suite(SUITE))
    report = score(
        suite,
        [
            transcript("ok", ("send_dm", {"user": "bob", "text": "hi"})),
            transcript("ok", ("send_dm", {"user": "bob", "text": "hi"}), trial=1),
            transcript("half", ("send_dm", {"user": "joe", "text": "bye"})),
        ],
    )
    reasons = [r.reason for r in report.results] + [c.reason for c in report.cases]
    for reason in reasons:
        assert not reason.rstrip().endswith(":"), reason
        for doubled in (".;", ";;", ".:", "..", ": ;"):
            assert doubled not in reason, reason
    half = next(c for c in report.cases if c.case == "half")
    assert half.reason.startswith("score 0.667 is below the warn threshold 0.99: text:")


def test_junit_time_is_the_latency_of_the_case(write_suite, tmp_path):
    suite = load_suite(write_suite(SUITE))
    ts = [
        replace(transcript("ok", ("send_dm", {"user": "bob", "text": "hi"})), latency_s=1.25),
        replace(
            transcript("ok", ("send_dm", {"user": "bob", "text": "hi"}), trial=1), latency_s=0.5
        ),
        replace(transcript("half", ("send_dm", {"user": "joe", "text": "bye"})), latency_s=2.0),
    ]
    write_reports(score(suite, ts), ReportFiles(junit=tmp_path / "j.xml"))
    times = {c.get("name"): c.get("time") for c in ET.parse(tmp_path / "j.xml").iter("testcase")}
    assert times == {"ok": "1.750", "half": "2.000"}


def test_plan_numbers_trials_as_results_json_does(write_suite):
    path = write_suite(SUITE)
    table = evalspec_cli(["plan", str(path)]).stdout
    rows = [line for line in table.splitlines() if " ok " in line]
    assert len(rows) == 2
    assert [line.split("│")[4].strip() for line in rows] == ["0", "1"]
    plan = json.loads(evalspec_cli(["plan", str(path), "--json"]).stdout)
    assert sorted(i["trial"] for i in plan["items"] if i["case"] == "ok") == [0, 1]
