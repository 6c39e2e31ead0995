"""Large suites: limits that allow 50,000 cases, and reports that stay fast at that size.

Scoring as transcripts finish, with memory flat in the number of cases, is unit-tested in
tests/test_streaming_scorer.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import console_report, git, many_cases_suite, transcript

from evalspec import api
from evalspec.api import load_suite, score, write_reports
from evalspec.errors import SpecError
from evalspec.records import ReportFiles


@pytest.mark.slow
def test_own_suites_load_with_no_setting_while_review_keeps_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "suites").mkdir()
    path = tmp_path / "suites" / "many.yaml"
    path.write_text(many_cases_suite(20_000), encoding="utf-8")  # ~220,000 values
    assert len(load_suite(path).cases) == 20_000  # a person's own suite: no setting needed
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "pr")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "a pull request adds the suite")
    with pytest.raises(SpecError) as info:  # a pull request's: 10,000 cases
        api.review(base_ref="main", cwd=tmp_path)
    assert "more than 10000 cases" in str(info.value.problems[0])
    assert "raise the limit with EVALSPEC_MAX_CASES" in str(info.value.problems[0])
    monkeypatch.setenv("EVALSPEC_MAX_CASES", "20000")  # whoever runs the review may raise it
    (reviewed,) = api.review(base_ref="main", cwd=tmp_path).suites
    assert reviewed.comparison is not None and len(reviewed.comparison.changes) == 20_000


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
    path.write_text(many_cases_suite(20), encoding="utf-8")
    monkeypatch.setenv(variable, low)
    with pytest.raises(SpecError) as info:
        load_suite(path)
    (problem,) = info.value.problems
    assert refusal in str(problem)
    assert str(problem).startswith(f"{path}:") or "many.yaml:" in str(problem)
    monkeypatch.setenv(variable, "10000000")
    assert len(load_suite(path).cases) == 20


def _made(cases: int) -> list[Any]:
    """Every third case calls the tool with the wrong id, and fails."""
    return [transcript(f"c{i}", ("t", {"id": f"r{i}" if i % 3 else "wrong"})) for i in range(cases)]


def _scored(tmp_path: Path, cases: int) -> Any:
    path = tmp_path / "many.yaml"
    path.write_text(many_cases_suite(cases), encoding="utf-8")
    return score(load_suite(path), _made(cases))


def test_results_json_is_streamed_yet_the_same_json(tmp_path: Path) -> None:
    report = _scored(tmp_path, 30)
    write_reports(report, ReportFiles(results=tmp_path / "results.json"))
    text = (tmp_path / "results.json").read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(report.to_dict(), default=str))
    # One result per line, so a diff of two results files shows the cases that changed.
    assert sum(1 for line in text.splitlines() if line.startswith('    {"item_id"')) == 30


def test_the_console_lists_a_bounded_number_of_failing_cases(tmp_path: Path) -> None:
    cases = 630
    path = tmp_path / "many.yaml"
    path.write_text(many_cases_suite(cases), encoding="utf-8")
    text = console_report(path, _made(cases), width=200)
    failing = cases // 3
    shown = text.count("FAIL")
    assert 0 < shown < failing
    assert f"{failing - shown} more that did not pass are in results.json" in text
    assert "passing cases not shown" in text


def test_a_suite_over_the_case_limit_is_refused_before_the_files_after_it_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review refuses a 50,000-case suite at its 10,001st case; the files after that one
    (here a missing one) are never read, so the refusal costs one file's worth, not the suite's."""
    head, cases = many_cases_suite(300).split("cases:\n", 1)
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
