"""Large suites: limits that allow 50,000 cases, and reports that stay fast at that size."""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support import transcript

from evalspec._report.console import MAX_PROBLEM_ROWS, print_report
from evalspec._report.json_report import write_json
from evalspec._report.records import report_from_results
from evalspec._scoring.stream import StreamingScorer
from evalspec._suite.limits import untrusted
from evalspec._suite.model import Case, Expectation, ExpectedCall, Loc
from evalspec.api import load_suite, score
from evalspec.errors import SpecError


def _suite(cases: int) -> str:
    lines = [
        "suite: many",
        "models: [{name: m, model: x}]",
        "critics: {id: binary}",
        "tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]",
        "cases:",
    ]
    lines += [
        f"  - {{name: c{i}, user: 'q {i}', expect: {{tool_calls: [{{t: {{id: r{i}}}}}]}}}}"
        for i in range(cases)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_own_suites_load_with_no_setting_while_review_keeps_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(20_000), encoding="utf-8")  # ~220,000 values
    assert len(load_suite(path).cases) == 20_000  # a person's own suite: no setting needed
    with untrusted(), pytest.raises(SpecError) as info:  # a pull request's: 10,000 cases
        load_suite(path)
    assert "more than 10000 cases" in str(info.value.problems[0])
    assert "raise the limit with EVALSPEC_MAX_CASES" in str(info.value.problems[0])
    monkeypatch.setenv("EVALSPEC_MAX_CASES", "20000")  # whoever runs the review may raise it
    with untrusted():
        assert len(load_suite(path).cases) == 20_000


@pytest.mark.parametrize(
    ("variable", "low", "refusal"),
    [
        ("EVALSPEC_MAX_SUITE_VALUES", "100", "more than 100 values"),
        ("EVALSPEC_MAX_SUITE_BYTES", "500", "the limit is 500 bytes"),
        ("EVALSPEC_MAX_CASES", "10", "more than 10 cases"),
    ],
)
def test_each_size_limit_can_be_lowered_and_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, low: str, refusal: str
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(20), encoding="utf-8")
    monkeypatch.setenv(variable, low)
    with pytest.raises(SpecError) as info:
        load_suite(path)
    (problem,) = info.value.problems
    assert refusal in str(problem)
    assert str(problem).startswith(f"{path}:") or "many.yaml:" in str(problem)
    monkeypatch.setenv(variable, "10000000")
    assert len(load_suite(path).cases) == 20


def _scored(tmp_path: Path, cases: int) -> Any:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(cases), encoding="utf-8")
    suite = load_suite(path)
    # Every third case calls the tool with the wrong id, and fails.
    made = [transcript(f"c{i}", ("t", {"id": f"r{i}" if i % 3 else "wrong"})) for i in range(cases)]
    return score(suite, made)


def test_results_json_is_streamed_yet_the_same_json(tmp_path: Path) -> None:
    report = _scored(tmp_path, 30)
    write_json(report, tmp_path / "results.json")
    text = (tmp_path / "results.json").read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(report.to_dict(), default=str))
    # One result per line, so a diff of two results files shows the cases that changed.
    assert sum(1 for line in text.splitlines() if line.startswith('    {"item_id"')) == 30


def test_the_console_lists_a_bounded_number_of_failing_cases(tmp_path: Path) -> None:
    report = _scored(tmp_path, 3 * MAX_PROBLEM_ROWS + 30)
    console = Console(record=True, width=200, file=io.StringIO())
    print_report(report, console)
    text = console.export_text()
    failing = MAX_PROBLEM_ROWS + 10
    assert text.count("FAIL") == MAX_PROBLEM_ROWS
    assert f"{failing - MAX_PROBLEM_ROWS} more that did not pass are in results.json" in text
    assert "passing cases not shown" in text


def test_scoring_as_transcripts_finish_reports_what_scoring_at_the_end_does(
    tmp_path: Path,
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(50), encoding="utf-8")
    suite = load_suite(path)
    made = [transcript(f"c{i}", ("t", {"id": f"r{i}" if i % 3 else "x"})) for i in range(50)]
    at_end = score(suite, made)
    streamed = StreamingScorer(suite, order={t.item_id: i for i, t in enumerate(made)}, chunk=7)
    for t in reversed(made):  # finished in another order than planned
        streamed.add(t)
    report = report_from_results(suite, streamed.finish(), streamed.usage)
    assert report.to_dict() == at_end.to_dict()
    assert report.exit_code == at_end.exit_code == 1


def test_a_scorer_forgets_the_judges_of_cases_long_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays flat in the number of cases: judges are remade, not kept for every case,
    and the results do not change."""
    from evalspec._scoring import scorer as scoring

    path = tmp_path / "many.yaml"
    path.write_text(_suite(40), encoding="utf-8")
    suite = load_suite(path)
    made = [transcript(f"c{i}", ("t", {"id": f"r{i}" if i % 3 else "x"})) for i in range(40)]
    made += made[:3]  # the first cases again, after they were forgotten
    expected = score(suite, made).to_dict()
    monkeypatch.setattr(scoring, "MEMO_CASES", 5)
    streamed = StreamingScorer(suite, order={t.item_id: i for i, t in enumerate(made)}, chunk=7)
    for t in made:
        streamed.add(t)
    results = streamed.finish()
    assert len(streamed.scorer._arg_judges) <= 5
    got = report_from_results(suite, results, streamed.usage).to_dict()
    assert sorted(map(repr, got.pop("results"))) == sorted(map(repr, expected.pop("results")))
    assert got == expected


def test_a_suite_over_the_case_limit_is_refused_before_the_files_after_it_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review refuses a 50,000-case suite at its 10,001st case; the files after that one
    (here a missing one) are never read, so the refusal costs one file's worth, not the suite's."""
    head, cases = _suite(300).split("cases:\n", 1)
    lines = cases.splitlines()
    for n in range(2):
        part = "".join(line[2:] + "\n" for line in lines[n * 150 : (n + 1) * 150])
        (tmp_path / f"part{n}.yaml").write_text(part, encoding="utf-8")
    includes = "".join(f"  - include: part{n}.yaml\n" for n in range(3))  # part2: missing
    path = tmp_path / "many.yaml"
    path.write_text(head + "cases:\n" + includes, encoding="utf-8")
    monkeypatch.setenv("EVALSPEC_MAX_CASES", "200")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    (problem,) = info.value.problems
    assert "part1.yaml:51:" in str(problem)
    assert "cases[200]: with this case the suite has more than 200 cases" in str(problem)


def test_the_records_made_for_every_case_behave_as_their_dataclasses_say() -> None:
    """Case, Expectation, ExpectedCall, Loc (and the others made per case) set their slots
    straight through each slot's descriptor, for speed; nothing else about them changes."""
    call = ExpectedCall("add")
    assert call == ExpectedCall("add", {}, (), None, False, Loc())
    assert call.args == {} and call.args is not ExpectedCall("add").args  # a fresh factory dict
    assert ExpectedCall(tool="add", args={"a": 1}).args == {"a": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.tool = "mul"  # type: ignore[misc]
    assert dataclasses.replace(call, tool="mul") == ExpectedCall("mul")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'tool'"):
        ExpectedCall()  # type: ignore[call-arg]
    case = Case("c", (), Expectation((call,)))
    assert case.trials == 1 and case.expect.tool_calls == (call,) and case.loc == Loc()
    shown = str(inspect.signature(ExpectedCall))
    assert shown.startswith("(tool: 'str', args: 'dict[str, Any]' = <factory>, critics:")
