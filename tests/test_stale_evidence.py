"""Stale evidence is caught everywhere, not only in `diff`: a recorded answer to a tool output
the suite no longer gives is re-run by `run --resume`, named by `score` (exit 3 unless
accepted), and a review never calls a suite whose file changed "untouched".

Each test first reproduces the hole as it was reported (the comments say what was seen).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from support import KEY_ENV, evalspec_cli, git, scripted, write_e2e_suite

from evalspec import api
from evalspec.api import load_suite

ROOT = Path(__file__).resolve().parent.parent
PARIS_21, PARIS_30 = "output: {{temp: 21}}", "output: {{temp: 30}}"


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def finished_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A finished run of model m1 (3 cases) against a scripted model on 127.0.0.1."""
    monkeypatch.setenv(KEY_ENV, "sk-test-stale-0000")
    with FakeOpenAI(scripted) as server:
        suite = write_e2e_suite(tmp_path, server.base_url, timeout=30)  # a loaded machine is slow
        run_dir = tmp_path / "run"
        done = cli("run", suite, "--model", "m1", "--out", run_dir)
        assert done.exit_code == 0, done.output
        yield suite, run_dir, server


def paris_outputs(run_dir: Path) -> list[Any]:
    return [
        call.output
        for t in {t.item_id: t for t in api.load_transcripts(run_dir)}.values()  # last wins
        for call in t.tool_calls
        if call.arguments == {"city": "Paris"}
    ]


def test_resume_reruns_items_whose_tool_answers_changed(finished_run):
    suite, run_dir, server = finished_run
    sent = len(server.requests)
    edit(suite, PARIS_21.format(), PARIS_30.format())
    # Reported: "3 resumed", PASS, and the transcripts still held temp 21.
    done = cli("run", suite, "--model", "m1", "--resume", run_dir)
    assert done.exit_code == 0, done.output
    assert "1 resumed, 2 re-run: a tool answers differently now" in done.output
    assert "re-run: 'weather paris' · m1: get_weather" in done.output
    assert "temp 21 -> 30" in done.output
    assert paris_outputs(run_dir) == [{"temp": 30}, {"temp": 30}]
    # The opening requests replay from the recordings; the model is asked again only where
    # it now reads the new output.
    new = server.requests[sent:]
    assert len(new) == 2
    for r in new:
        seen = [m["content"] for m in r.body["messages"] if m["role"] == "tool"]
        assert '{"temp": 30}' in seen, seen
    # Nothing is stale any more: a second resume keeps all three.
    again = cli("run", suite, "--model", "m1", "--resume", run_dir)
    assert "3 resumed" in again.output and "re-run" not in again.output


def test_score_names_stale_transcripts_and_exits_3_unless_accepted(finished_run):
    suite, run_dir, _ = finished_run
    assert cli("score", suite, "-t", run_dir).exit_code == 0
    edit(suite, PARIS_21.format(), PARIS_30.format())
    # Reported: score passed them silently (exit 0).
    done = cli("score", suite, "-t", run_dir)
    assert done.exit_code == 3, done.output
    text = " ".join(done.output.split())
    assert "error: stale: 'weather paris' · m1: get_weather" in text
    assert "error: stale: 'weather two cities' · m1" in text
    assert "'add numbers'" not in text
    assert "2 of 3 transcripts answer requests" in text
    accepted = cli("score", suite, "-t", run_dir, "--allow-stale")
    assert accepted.exit_code == 0, accepted.output
    assert "warning: stale: 'weather paris'" in accepted.output
    # A changed user message is stale too: the transcript answers another question.
    edit(suite, "user: Add 2 and 3", "user: Add 2 and 4")
    assert "stale: 'add numbers' · m1: the request to the model changed" in " ".join(
        cli("score", suite, "-t", run_dir).output.split()
    )


# ---------------------------------------------------------------- review


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "suites", repo / "suites")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def rerecord(suite_path: Path) -> None:
    """Record the suite's answers anew with the scripted model the examples come from."""
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import SCRIPTS, ScriptedProvider

    suite = load_suite(suite_path)
    api.record_answers(suite, ScriptedProvider(SCRIPTS[suite.name]))


def weather_review(repo: Path):
    """The review of the pull request (its comment written beside the repository), and the
    weather suite's."""
    review = api.review(
        ["suites/*.yaml"], base_ref="main", cwd=repo, markdown=repo.parent / "comment.md"
    )
    (weather,) = [s for s in review.suites if s.path == "suites/weather.yaml"]
    return review, weather


def comment(repo: Path) -> str:
    return (repo.parent / "comment.md").read_text(encoding="utf-8")


def test_review_names_a_tool_change_answered_by_new_recordings(repo):
    weather = repo / "suites" / "weather.yaml"
    edit(weather, "temperature: 21, unit", "temperature: 30, unit")
    rerecord(weather)
    git(repo, "commit", "-q", "-am", "warmer Paris, re-recorded")
    # Reported: "Untouched: suites/calendar.yaml (no case changed)" for such a pull request.
    review, result = weather_review(repo)
    assert not result.untouched
    assert review.exit_code == 0
    change = 'tool get_current_weather response when {"city": "Paris"}: temperature 21 -> 30'
    named = {c.case: c.named for c in result.comparison.changes if c.named}
    assert named == {"compare two cities": (change,), "current weather in Paris": (change,)}
    said = comment(repo)
    assert "`suites/weather.yaml`" not in said.split("Untouched:")[-1]
    assert "temperature 21 -&gt; 30" in said


def test_review_names_a_tool_change_no_recording_reaches(repo):
    weather = repo / "suites" / "weather.yaml"
    edit(
        weather,
        "      - when: {city: Tokyo}\n",
        "      - when: {city: Berlin}\n        output: {city: Berlin, temperature: 18}\n"
        "      - when: {city: Tokyo}\n",
    )
    git(repo, "commit", "-q", "-am", "a city no case asks about")
    review, result = weather_review(repo)
    assert not result.untouched
    assert result.comparison.suite_changes == (
        'tool get_current_weather response when {"city": "Berlin"}: (none) -> '
        '{"city": "Berlin", "temperature": 18}',
    )
    assert "### Other changes to suite files" in comment(repo)
    assert review.exit_code == 0


# ---------------------------------------------------------------- every trial is evidence


@pytest.fixture
def three_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A run with --trials 3 of a suite that has no `trials:`: 3 cases × 3 trials."""
    monkeypatch.setenv(KEY_ENV, "sk-test-stale-0000")
    with FakeOpenAI(scripted) as server:
        suite = write_e2e_suite(tmp_path, server.base_url, timeout=30)
        run_dir = tmp_path / "run"
        done = cli("run", suite, "--model", "m1", "--trials", "3", "--out", run_dir)
        assert done.exit_code == 0, done.output
        yield suite, run_dir


def test_score_checks_every_trial_not_only_the_first(three_trials):
    suite, run_dir = three_trials
    edit(suite, PARIS_21.format(), PARIS_30.format())
    # Reported: "2 of 9 transcripts" stale (trial 1 only); trials 2 and 3 scored silently.
    done = cli("score", suite, "-t", run_dir)
    assert done.exit_code == 3, done.output
    text = " ".join(done.output.split())
    assert "6 of 9 transcripts answer requests" in text
    for trial in (2, 3):
        assert f"stale: 'weather paris' · m1 · trial {trial}: get_weather" in text


def test_resume_reruns_every_stale_trial(three_trials):
    suite, run_dir = three_trials
    edit(suite, PARIS_21.format(), PARIS_30.format())
    done = cli("run", suite, "--model", "m1", "--trials", "3", "--resume", run_dir)
    assert done.exit_code == 0, done.output
    assert "3 resumed, 6 re-run: a tool answers differently now" in done.output
    assert paris_outputs(run_dir) == [{"temp": 30}] * 6


def test_diff_scores_both_sides_on_every_recorded_trial(three_trials, tmp_path: Path):
    from evalspec import api

    suite, run_dir = three_trials
    head = tmp_path / "head.yaml"
    head.write_text(suite.read_text(encoding="utf-8") + "description: head\n", encoding="utf-8")
    # Reported: the head side was scored on trial 1 alone ("flaky: 2/3 → 1/1", BETTER).
    comparison = api.diff(suite, head, run_dir)
    m1 = [c for c in comparison.changes if c.model == "m1"]
    assert len(m1) == 3
    for change in m1:
        assert change.before is not None and change.after is not None
        assert len(change.before.results) == len(change.after.results) == 3
        assert change.kind == "unchanged" and not change.trials_differ and not change.unverified


def test_compare_refuses_runs_with_different_trials_and_says_why(three_trials, tmp_path: Path):
    suite, run_dir = three_trials
    one = tmp_path / "one"
    assert cli("run", suite, "--model", "m1", "--out", one).exit_code == 0
    done = cli("compare", run_dir, one, "--json")
    data = json.loads(done.stdout)
    assert done.exit_code == 0, done.output
    assert {c["kind"] for c in data["changes"]} == {"changed"}
    assert all(
        c["trials_differ"]
        == "not compared: the sides ran different trials (3 trials → 1 trial); run both with "
        "the same --trials"
        for c in data["changes"]
    )
    assert data["noise"][0]["pass_rate"]["cases"] == 0
    shown = " ".join(cli("compare", run_dir, one).output.split())
    assert "BETTER" not in shown and "WORSE" not in shown
    assert "not compared: the sides ran different trials (3 trials → 1 trial)" in shown
