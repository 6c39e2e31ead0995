"""`evalspec compare` pairs results by case whatever the models are called: two models of one
run, one model in two runs, or several runs, with a model × case matrix."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from support import evalspec_cli

from evalspec.api import compile_plan, load_suite, run_plan, score, write_reports
from evalspec.records import ReportFiles, RunOptions

ROOT = Path(__file__).resolve().parent.parent
WEATHER = ROOT / "suites" / "weather.yaml"
RECORDINGS = ROOT / "suites" / "weather.recordings.jsonl"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """results.json content of an offline run of the weather suite (model gpt-4o-mini)."""
    out = tmp_path_factory.mktemp("run")
    suite = load_suite(WEATHER)
    outcome = run_plan(
        compile_plan(suite), RunOptions(record="offline", recordings=RECORDINGS, run_dir=out)
    )
    write_reports(score(suite, outcome.transcripts), ReportFiles(results=out / "results.json"))
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def renamed(data: dict, model: str, *, fail_case: str | None = None) -> dict:
    """The same results under another model label; `fail_case` made to fail."""
    new = copy.deepcopy(data)
    for item in (*new["cases"], *new["results"], *new["models"]):
        item["model"] = model
        if fail_case and item.get("case") == fail_case:
            item.update(status="fail", score=0.1, reason="wrong city")
    return new


def write(tmp_path: Path, name: str, data: dict) -> str:
    path = tmp_path / name / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path.parent)


def cli(*args: str):
    return evalspec_cli(list(args))


def test_two_runs_of_differently_named_models_pair_by_case(tmp_path, results):
    case = results["cases"][0]["case"]
    a = write(tmp_path, "a", renamed(results, "mock"))
    b = write(tmp_path, "b", renamed(results, "mock-b", fail_case=case))
    out = cli("compare", a, b, "--json")
    assert out.exit_code == 1, out.output
    data = json.loads(out.stdout)
    n = len(results["cases"])
    assert data["counts"]["regression"] == 1
    assert data["counts"]["unchanged"] == n - 1
    assert data["counts"]["added"] == data["counts"]["removed"] == 0
    assert [c["label"] for c in data["matrix"]["columns"]] == ["mock", "mock-b"]
    first = data["matrix"]["rows"][0]
    assert first["case"] == case and first["change"] == "regression"
    assert [c["status"] for c in first["cells"]] == ["pass", "fail"]


def test_two_models_of_one_run_are_compared_against_the_first(tmp_path, results):
    case = results["cases"][1]["case"]
    both = renamed(results, "mock")
    other = renamed(results, "mock-b", fail_case=case)
    for key in ("cases", "results", "models"):
        both[key] += other[key]
    run = write(tmp_path, "run", both)
    out = cli("compare", run)
    assert out.exit_code == 1
    text = " ".join(out.stdout.split())
    assert "mock → mock-b" in text
    assert "only in" not in text
    lines = out.stdout.splitlines()
    # The regression is the matrix's first row, with both models' cells.
    row = next(line for line in lines if case[:20] in line)
    assert "PASS" in row and "FAIL" in row and "REGRESSION" in row
    assert "unchanged cases not shown" in " ".join(lines)


def test_three_runs_make_a_matrix_and_compare_first_with_last(tmp_path, results):
    case = results["cases"][2]["case"]
    runs = [
        write(tmp_path, "r1", results),
        write(tmp_path, "r2", renamed(results, "gpt-4o-mini", fail_case=case)),
        write(tmp_path, "r3", results),
    ]
    out = cli("compare", *runs, "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    labels = [c["label"] for c in data["matrix"]["columns"]]
    assert labels == [f"gpt-4o-mini @ {r}" for r in runs]
    row = next(r for r in data["matrix"]["rows"] if r["case"] == case)
    assert [c["status"] for c in row["cells"]] == ["pass", "fail", "pass"]
    assert data["counts"]["unchanged"] == len(results["cases"])


def test_compare_needs_two_columns(tmp_path, results):
    out = cli("compare", write(tmp_path, "one", results))
    assert out.exit_code == 2
    assert "nothing to compare" in out.output


def test_compare_markdown_has_the_matrix_and_html_the_models(tmp_path, results):
    case = results["cases"][0]["case"]
    a = write(tmp_path, "a", renamed(results, "mock"))
    b = write(tmp_path, "b", renamed(results, "mock-b", fail_case=case))
    md, page = tmp_path / "cmp.md", tmp_path / "cmp.html"
    cli("compare", a, b, "--markdown", str(md), "--html", str(page))
    assert '<option value="1">mock-b</option>' in page.read_text(encoding="utf-8")
    text = md.read_text(encoding="utf-8")
    assert "| case | mock | mock-b | change |" in text
    assert f"| {case} | PASS" in text and "| regression |" in text
