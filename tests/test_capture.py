"""Capture mode: cases with no expectations record what models call, and `evalspec capture
accept` writes those calls into the suite as expectations a person reviews, the rest of the
file as written; the accepted suite validates and replays its recordings with no call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import CAPTURE_CALLS as CALLS
from support import CAPTURE_SUITE as SUITE
from support import ScriptedCalls as Scripted
from support import capture_accept as accept
from support import captured_run

from evalspec import api
from evalspec.errors import SpecError
from evalspec.records import ReportFiles, RunOptions


def offline_report(path: Path, tmp_path: Path) -> Any:
    suite = api.load_suite(path)
    options = RunOptions(record="offline", run_dir=tmp_path / "replay")
    return api.score(suite, api.run_plan(api.compile_plan(suite), options).transcripts)


def test_a_capture_case_is_reported_captured_and_fails_no_gate(tmp_path: Path) -> None:
    path, run_dir = captured_run(tmp_path)
    report = api.score(api.load_suite(path), api.load_transcripts(run_dir / "transcripts.jsonl"))
    status = {(c.case, c.model): c.status for c in report.cases}
    assert status[("look up", "m1")] == "captured"
    assert status[("send note", "m2")] == "captured"
    assert status[("judged", "m1")] == "pass"
    assert report.exit_code == 0
    # Rates count judged cases only: a capture case neither passes nor fails.
    assert all(m.cases == 1 and m.passed == 1 for m in report.models)
    reasons = {c.case: c.reason for c in report.cases}
    assert reasons["look up"].startswith("captured: get_user(")


def test_accept_writes_expectations_keeps_the_rest_and_replays_with_no_call(
    tmp_path: Path, no_network: None
) -> None:
    path, run_dir = captured_run(tmp_path)
    done = accept(path, run_dir)
    assert done.exit_code == 0, done.output
    assert "wrote expectations for 2 case(s)" in done.output
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# The team's new suite: no expectations yet.\n")
    assert "  - name: look up   # keep this comment\n" in text
    assert "expect: {no_tool_calls: true}   # and this one\n" in text
    assert "capture:" not in text
    cases = {c["name"]: c for c in yaml.safe_load(text)["cases"]}
    lookup = cases["look up"]["expect"]["tool_calls"][0]
    assert lookup["args"] == {"user_id": "u-17", "verbose": False}
    # The models disagree on `verbose`: every value seen is acceptable, for review.
    assert lookup["critics"] == {
        "user_id": "exact",
        "verbose": {"one_of": {"values": [False, True]}},
    }
    send = cases["send note"]["expect"]["tool_calls"][0]
    assert send["critics"] == {
        "to": {"exact": {"case_sensitive": False}},
        "text": {"similarity": {"threshold": 0.8}},
        "when": {"datetime": {"tolerance": "0s", "max_difference": "1d"}},
        "amount": {"numeric": {"tolerance": 0.125}},
        "unit": "binary",
    }
    suite = api.load_suite(path)  # validates
    text_expected = suite.cases[1].expect.tool_calls[0].args["text"]
    assert text_expected == "The report is ready {{ secret }}"  # kept as text, no template
    report = offline_report(path, tmp_path)
    assert {c.status for c in report.cases} == {"pass"}
    assert report.exit_code == 0


def test_disagreeing_calls_are_named_in_a_comment(tmp_path: Path) -> None:
    script = {
        ("look up", "m1"): [("get_user", {"user_id": "u-17"})],
        ("look up", "m2"): [("send", {"to": "u-17", "text": "hi"})],
    }
    text = SUITE.replace("  - capture: true\n    name: send note", "  - name: send note").replace(
        "pay her 12.5 eur\n", "pay her 12.5 eur\n    expect: {no_tool_calls: true}\n"
    )
    path, run_dir = captured_run(tmp_path, text, script)
    assert accept(path, run_dir).exit_code == 0
    written = path.read_text(encoding="utf-8")
    assert "# captured from 2 run(s): m1#0, m2#0" in written
    assert "# 1 run(s) called send instead (m2#0)" in written
    api.load_suite(path)


def test_arguments_that_are_not_json_are_named_and_left_out(tmp_path: Path) -> None:
    script = {**CALLS, ("look up", "m2"): [("get_user", '{"user_id": "u-17", oops')]}
    path, run_dir = captured_run(tmp_path, SUITE, script)
    assert accept(path, run_dir).exit_code == 0
    written = path.read_text(encoding="utf-8")
    assert "# the arguments m2#0 gave get_user (call 1) are not a JSON object: left out" in written
    call = yaml.safe_load(written)["cases"][0]["expect"]["tool_calls"][0]
    assert call["args"] == {"user_id": "u-17", "verbose": False}
    api.load_suite(path)


def test_accept_with_model_keeps_that_models_calls_only(tmp_path: Path) -> None:
    path, run_dir = captured_run(tmp_path)
    assert accept(path, run_dir, "--model", "m2").exit_code == 0
    cases = {c["name"]: c for c in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]}
    call = cases["look up"]["expect"]["tool_calls"][0]
    assert call["args"] == {"user_id": "u-17", "verbose": True}
    assert call["critics"]["verbose"] == "binary"


TURNS = """\
suite: chat
models: [{name: m1, model: m1}]
tools:
  - name: get_user
    description: Look up a user.
    parameters: {type: object, properties: {user_id: {type: string}}, required: [user_id]}
    responses: [{output: {name: Ann}}]
cases:
  - name: two turns
    capture: true
    turns:
      - user: Who is u-1?
      - user: And u-2?
      - user: Thanks, bye.
"""


def test_a_multi_turn_capture_case_gets_one_expectation_per_turn(
    tmp_path: Path, no_network: None
) -> None:
    script = {
        ("two turns", "m1", 1): [("get_user", {"user_id": "u-1"})],
        ("two turns", "m1", 2): [("get_user", {"user_id": "u-2"})],
    }
    path, run_dir = captured_run(tmp_path, TURNS, script)
    assert accept(path, run_dir).exit_code == 0
    case = yaml.safe_load(path.read_text(encoding="utf-8"))["cases"][0]
    assert "capture" not in case
    first, second, third = case["turns"]
    assert first["user"] == "Who is u-1?"
    assert first["expect"]["tool_calls"][0]["args"] == {"user_id": "u-1"}
    assert second["expect"]["tool_calls"][0]["args"] == {"user_id": "u-2"}
    assert third["expect"] == {"no_tool_calls": True}
    assert {c.status for c in offline_report(path, tmp_path).cases} == {"pass"}


def test_a_missing_expect_is_still_refused_and_says_how_to_capture(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.replace("    capture: true\n  - capture", "  - capture"), "utf-8")
    with pytest.raises(SpecError) as caught:
        api.load_suite(path)
    problem = caught.value.problems[0]
    assert problem.message == "the case says nothing about what a good model does"
    assert "capture: true" in problem.hint
    assert (problem.line, problem.column) == (31, 5)


def test_a_capture_case_with_expectations_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        SUITE.replace(
            "    expect: {no_tool_calls", "    capture: true\n    expect: {no_tool_calls"
        ),
        "utf-8",
    )
    with pytest.raises(SpecError) as caught:
        api.load_suite(path)
    assert "a capture case has no `expect` yet" in caught.value.problems[0].message


def test_accept_refuses_what_it_cannot_write_and_leaves_the_file(tmp_path: Path) -> None:
    path, _ = captured_run(tmp_path)
    before = path.read_text(encoding="utf-8")
    done = accept(path, tmp_path / "nowhere")
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert "holds no transcripts.jsonl" in done.output
    other = tmp_path / "other"
    other.mkdir()
    (other / "transcripts.jsonl").write_text("", encoding="utf-8")
    done = accept(path, other)
    assert done.exit_code == 2
    assert "case 'look up' left as a capture case: no finished run of it" in done.output
    assert path.read_text(encoding="utf-8") == before


def test_a_capture_flag_written_inline_is_left_for_a_person(tmp_path: Path) -> None:
    block = "  - capture: true\n    name: send note\n    user: Tell Ann the report is ready, "
    assert block in SUITE
    text = SUITE.replace(block, "  - {name: send note, capture: true, user: 'Tell Ann").replace(
        "12.5 eur\n", "12.5 eur'}\n"
    )
    path, run_dir = captured_run(tmp_path, text)
    done = accept(path, run_dir)
    assert done.exit_code == 0
    assert "case 'send note' left as a capture case: " in done.output
    assert "cap.yaml:34:23: `capture: true` is not the last key on its line" in done.output
    assert "  - {name: send note, capture: true, user:" in path.read_text(encoding="utf-8")
    api.load_suite(path)


@pytest.mark.slow
def test_turning_a_judged_case_into_a_capture_case_is_a_regression(tmp_path: Path) -> None:
    judged = "    expect: {tool_calls: [{get_user: {user_id: u-17}}]}\n"
    base, run_dir = captured_run(tmp_path, SUITE.replace("    capture: true\n", judged, 1))
    head = tmp_path / "head.yaml"
    head.write_text(SUITE, "utf-8")  # the pull request stops judging `look up`
    comparison = api.diff(base, head, run_dir / "transcripts.jsonl")
    kinds = {(c.case, c.model): c.kind for c in comparison.changes}
    assert kinds[("look up", "m1")] == "regression"
    assert comparison.exit_code == 1


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pull_request_that_stops_judging_a_case_fails_review(tmp_path: Path) -> None:
    """A pull request turns a passing case into a capture case (its `expect` gone): review,
    replaying the committed recordings, names it a regression and fails (exit 1)."""
    from support import git, review_offline, suites_repo

    suites = tmp_path / "suites"
    suites.mkdir()
    judged = "    expect: {tool_calls: [{get_user: {user_id: u-17}}]}\n"
    path = suites / "cap.yaml"
    path.write_text(SUITE.replace("    capture: true\n", judged, 1), "utf-8")
    api.record_answers(api.load_suite(path), Scripted())
    repo = suites_repo(tmp_path, suites)
    (repo / "suites" / "cap.yaml").write_text(SUITE, "utf-8")
    git(repo, "commit", "-q", "-am", "stop judging look up")
    done = review_offline(repo, "OPENAI_API_KEY")
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    (reviewed,) = json.loads(done.stdout)["suites"]
    kinds = {(c["case"], c["model"]): c["kind"] for c in reviewed["changes"]}
    assert kinds[("look up", "m1")] == kinds[("look up", "m2")] == "regression"


def test_junit_shows_a_captured_case_as_skipped(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    path, run_dir = captured_run(tmp_path)
    report = api.score(api.load_suite(path), api.load_transcripts(run_dir / "transcripts.jsonl"))
    api.write_reports(report, ReportFiles(junit=tmp_path / "junit.xml"))
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    skipped = {c.get("name"): c.find("skipped") for c in cases}
    assert skipped["look up"] is not None and skipped["judged"] is None
    assert skipped["look up"].get("message", "").startswith("captured: get_user(")
