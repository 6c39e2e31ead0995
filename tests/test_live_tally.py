"""The live counts of an interactive run's progress bar: pass, warn and fail so far, each
transcript scored as it finishes when that is cheap, and `later` when it needs the embedding
model or a judge (scored with the batch at the end, so the event loop never waits on a load).

A unit test of evalspec._report.progress's LiveTally, which it imports: the bar is drawn only on
a terminal, and its counts are not part of a run's result.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import write_e2e_suite

from evalspec import api
from evalspec._report.progress import LiveTally
from evalspec.records import ToolCall, Transcript


def test_progress_counts_pass_warn_fail_so_far_without_loading_embeddings(tmp_path: Path) -> None:
    extra = """\
  - name: fuzzy paris
    user: Weather, roughly Paris?
    critics: {city: similarity}
    expect:
      tool_calls: [{get_weather: {city: Paris}}]
"""
    suite = api.load_suite(write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1", extra=extra))

    def made(case: str, city: str, error: str | None = None) -> Transcript:
        call = ToolCall("get_weather", {"city": city}, json.dumps({"city": city}))
        return Transcript(f"id-{case}-{city}", case, "m1", tool_calls=(call,), error=error)

    tally = LiveTally(suite)
    assert tally.add(made("weather paris", "Paris")) == "pass"
    assert tally.add(made("weather paris", "Lyon")) == "fail"
    assert tally.add(made("weather paris", "Paris", error="HTTP 500")) == "error"
    assert tally.add(made("fuzzy paris", "Paris, France")) == "later"
    assert tally.counts == {
        "pass": 1, "warn": 0, "fail": 1, "error": 1, "user_fault": 0, "captured": 0, "later": 1
    }  # fmt: skip
    assert tally.summary() == "1 pass · 0 warn · 1 fail · 1 errors · 1 scored at the end"
    assert tally.scorer.embedder is None  # nothing heavy was loaded while counting
