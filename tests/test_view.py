"""`evalspec view`: the HTML report of runs read back from their directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalspec.cli import app
from examples.three_models import three_model_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_model_run("weather", tmp_path_factory.mktemp("three") / "weather")


def page_data(path: Path) -> dict:
    page = path.read_text(encoding="utf-8")
    return json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])


def test_view_writes_beside_the_run_and_says_where_when_no_browser(run, monkeypatch):
    monkeypatch.setattr("webbrowser.open", lambda url: False)
    result = CliRunner().invoke(app, ["view", str(run)])
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
    result = CliRunner().invoke(app, ["view", str(run), str(run / "results.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "no browser found" not in result.output
    columns = page_data(out)["columns"]
    assert len(columns) == 6 and columns[0] == f"gpt-4o-mini @ {run.as_posix()}"


def test_view_of_something_that_is_not_a_run(tmp_path):
    result = CliRunner().invoke(app, ["view", str(tmp_path), "--no-open"])
    assert result.exit_code == 2
    assert "no results at" in result.output
    assert not (tmp_path / "report.html").exists()
