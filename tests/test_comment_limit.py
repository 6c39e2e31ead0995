"""A diff's pull-request comment kept under a size limit: the explanations of the last cases
are left out (and it says so), while the table of changed cases stays whole.

A unit test of evalspec._compare.markdown's `limit`, which it imports: GitHub's limit (65,536
characters) is the one a user meets, and a comparison that long is slow to build; the same
text under a smaller limit shows the rule.
"""

from __future__ import annotations

from pathlib import Path

from evalspec import api
from evalspec._compare.markdown import render_diff_markdown
from evalspec.records import RunOptions

ROOT = Path(__file__).resolve().parent.parent
WEATHER = ROOT / "suites" / "weather.yaml"


def test_markdown_diff_respects_the_comment_size_limit(tmp_path: Path) -> None:
    suite = api.load_suite(WEATHER)
    recordings = WEATHER.with_name("weather.recordings.jsonl")
    options = RunOptions(record="offline", recordings=recordings, run_dir=tmp_path / "run")
    outcome = api.run_plan(api.compile_plan(suite), options)
    text = WEATHER.read_text(encoding="utf-8")
    cities = "{city: Paris}\n        - get_current_weather: {city: London}"
    assert text.count(cities) == 1
    head = tmp_path / "head.yaml"
    head.write_text(
        text.replace(cities, cities.replace("Paris", "Rome").replace("London", "Berlin"))
    )
    comparison = api.diff(suite, api.load_suite(head), outcome.transcripts)
    full = render_diff_markdown(comparison)
    assert "<details>" in full
    short = render_diff_markdown(comparison, limit=len(full) - 10)
    assert "<details>" not in short and "left out" in short
    assert "| compare two cities | cause: expected call 1" in short
