"""`evalspec view`: the HTML report of runs read back from their directories."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import evalspec_cli

from examples.three_models import three_model_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_model_run("weather", tmp_path_factory.mktemp("three") / "weather")


def page_data(path: Path) -> dict:
    page = path.read_text(encoding="utf-8")
    return json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])


def test_view_writes_beside_the_run_and_says_where_when_no_browser(run, monkeypatch):
    monkeypatch.setattr("webbrowser.open", lambda url: False)
    result = evalspec_cli(["view", str(run)])
    assert result.exit_code == 0, result.output
    target = run / "report.html"
    assert f"report: {target}" in result.output
    assert "no browser found" in result.output
    data = page_data(target)
    assert data["columns"] == ["gpt-4o-mini", "variant-typos", "variant-no-tools"]
    page = target.read_text(encoding="utf-8")
    for shown in ("2026-", "temperature", "price per million tokens", "score distribution"):
        assert shown in page
    # Conversations come from transcripts.jsonl: every trial of every cell has its messages.
    trials = [t for c in data["cases"] for cell in c["c"] for t in cell[4]]
    assert trials and all(t["m"] for t in trials)
    # The no-tools variant answered in text: its conversation ends with that answer.
    no_tools = [c["c"][2][4][0] for c in data["cases"] if not c["c"][2][4][0]["m"][2][2]]
    assert no_tools and all(t["m"][-1][0] == "assistant" for t in no_tools)


def test_view_of_several_runs_labels_columns_by_run(run, tmp_path, monkeypatch):
    monkeypatch.setattr("webbrowser.open", lambda url: True)
    out = tmp_path / "both.html"
    result = evalspec_cli(["view", str(run), str(run / "results.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "no browser found" not in result.output
    columns = page_data(out)["columns"]
    assert len(columns) == 6 and columns[0] == f"gpt-4o-mini @ {run.as_posix()}"
    # Before and after: the page opens sorted by change, regressions first.
    assert '<option value="change" selected>' in out.read_text(encoding="utf-8")


def test_view_of_something_that_is_not_a_run(tmp_path):
    result = evalspec_cli(["view", str(tmp_path), "--no-open"])
    assert result.exit_code == 2
    assert "no results at" in result.output
    assert not (tmp_path / "report.html").exists()


def test_view_of_a_hand_edited_run(run, tmp_path):
    """A transcript line that is not a transcript is passed over (its trial is shown without a
    conversation); a results file with a value scoring never writes is refused with its place
    (exit 2), whether in a model's summary or in a case."""
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "results.json").write_text(json.dumps(data), encoding="utf-8")
    lines = (run / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first.update(messages=[{"role": "user", "tool_calls": 5}, "x"], usage=[1], latency_s="slow")
    (edited / "transcripts.jsonl").write_text(
        "\n".join([json.dumps(first), "not json", *lines[1:]]), encoding="utf-8"
    )
    result = evalspec_cli(["view", str(edited), "--no-open"])
    assert result.exit_code == 0, result.output
    cases = page_data(edited / "report.html")["cases"]
    trials = {c["n"]: c["c"][0][4][0] for c in cases}
    assert sum("m" not in t for t in trials.values()) == 1  # the edited line's trial
    assert all("m" in t for name, t in trials.items() if name != first["case"])
    assert "m" not in trials[first["case"]]

    data["models"][0].update(mean_score="high")
    (edited / "results.json").write_text(json.dumps(data), encoding="utf-8")
    result = evalspec_cli(["view", str(edited), "--no-open"])
    assert result.exit_code == 2
    assert "models[0].mean_score: expected a number, got text ('high')" in result.output

    data["models"][0].update(mean_score=0.5)
    data["cases"][0]["status"] = "<b>odd</b>"
    (edited / "results.json").write_text(json.dumps(data), encoding="utf-8")
    result = evalspec_cli(["view", str(edited), "--no-open"])
    assert result.exit_code == 2
    assert "cases[0].status: expected one of" in result.output


def test_the_three_model_example_writes_a_page_per_suite(tmp_path, monkeypatch):
    from examples import three_models

    monkeypatch.setattr("sys.argv", ["three_models.py", str(tmp_path)])
    three_models.main()
    for suite in three_models.SUITES:
        assert page_data(tmp_path / suite / "report.html")["columns"] == [
            "gpt-4o-mini",
            "variant-typos",
            "variant-no-tools",
        ]


def test_run_html_shows_conversations_of_a_streamed_run(tmp_path):
    """`run` keeps no transcripts in memory; its page reads them from the run directory."""
    root = Path(__file__).resolve().parent.parent
    page = tmp_path / "r.html"
    result = evalspec_cli(
        [
            "run",
            str(root / "suites" / "weather.yaml"),
            "--record",
            "offline",
            "--out",
            str(tmp_path / "run"),
            "--html",
            str(page),
        ],
    )
    assert result.exit_code == 1, result.output  # two example answers fail on purpose
    trials = [t for c in page_data(page)["cases"] for cell in c["c"] for t in cell[4]]
    assert len(trials) == 6 and all(t["m"] and t["m"][0][0] == "system" for t in trials)


def test_tags_survive_results_json_and_fill_the_tag_filter(write_suite, tmp_path):
    """`view` reads a run back from results.json: its tag filter lists the suite's tags."""
    from support import transcript

    from evalspec.api import load_suite, score, write_reports
    from evalspec.records import ReportFiles

    suite = load_suite(
        write_suite(
            """
suite: tagged
models: [m]
tools:
  - {name: f, parameters: {type: object, properties: {a: {type: string}}}}
cases:
  - {name: one, tags: [smoke, calendar], user: u, expect: {tool_calls: [{f: {a: x}}]}}
  - {name: two, user: u, expect: {tool_calls: [{f: {a: y}}]}}
"""
        )
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    report = score(suite, [transcript("one", ("f", {"a": "x"})), transcript("two", ("f", {}))])
    write_reports(report, ReportFiles(results=run_dir / "results.json"))
    cases = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["cases"]
    assert {c["case"]: c["tags"] for c in cases} == {"one": ["smoke", "calendar"], "two": []}
    result = evalspec_cli(["view", str(run_dir), "--no-open"])
    assert result.exit_code == 0, result.output
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    options = re.findall(r'<option value="([^"]*)">', page.split('id="tag-filter"')[1])
    assert options[:3] == ["", "calendar", "smoke"]
