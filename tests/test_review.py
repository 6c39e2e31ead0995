"""`evalspec diff` and `evalspec compare`: edit a copy of the weather suite, re-score a recorded
run of it, and check that exactly the cases the edit touches are reported, the right way round."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli

from evalspec import api
from evalspec.api import compile_plan, load_suite, load_transcripts, run_plan, score, write_reports
from evalspec.records import ReportFiles, RunOptions

ROOT = Path(__file__).resolve().parent.parent
WEATHER = ROOT / "suites" / "weather.yaml"
RECORDINGS = ROOT / "suites" / "weather.recordings.jsonl"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline run of the shipped weather suite, from its example recordings."""
    out = tmp_path_factory.mktemp("run")
    suite = load_suite(WEATHER)
    outcome = run_plan(
        compile_plan(suite), RunOptions(record="offline", recordings=RECORDINGS, run_dir=out)
    )
    assert not outcome.missing
    write_reports(score(suite, outcome.transcripts), ReportFiles(results=out / "results.json"))
    return out


BERLIN = (
    "        - get_current_weather: {city: Paris}\n        - get_current_weather: {city: London}",
    "        - get_current_weather: {city: Rome}\n        - get_current_weather: {city: Berlin}",
)
"""Expect Rome and Berlin in `compare two cities`: two wrong cities, a pass becomes a fail."""


def edited(tmp_path: Path, *replacements: tuple[str, str], name: str = "head.yaml") -> Path:
    """A copy of the weather suite with each `old` text replaced by `new` (exactly once)."""
    text = WEATHER.read_text(encoding="utf-8")
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def diff(tmp_path: Path, run_dir: Path, *replacements: tuple[str, str], **options: Any):
    """The weather suite diffed against a copy with these replacements, on the run's answers."""
    head = load_suite(edited(tmp_path, *replacements))
    return api.diff(load_suite(WEATHER), head, load_transcripts(run_dir), **options)


def changed(comparison) -> dict[str, str]:
    return {
        c.case: c.kind
        for c in comparison.changes
        if c.kind != "unchanged" or c.rerun or c.needs_run
    }


def test_identical_suites_change_nothing(tmp_path, run_dir):
    comparison = diff(tmp_path, run_dir)
    assert changed(comparison) == {}
    assert comparison.exit_code == 0
    assert comparison.counts()["unchanged"] == 6


def test_lower_fail_threshold_turns_a_fail_into_a_warning(tmp_path, run_dir):
    comparison = diff(tmp_path, run_dir, ("fail_threshold: 0.8", "fail_threshold: 0.7"))
    assert changed(comparison) == {"current weather in New York": "better"}
    (c,) = [c for c in comparison.changes if c.kind == "better"]
    assert (c.before.status, c.after.status) == ("fail", "warn")
    assert c.before.score == pytest.approx(c.after.score)
    assert comparison.exit_code == 0


def test_stricter_critic_changes_exactly_the_cases_it_judges(tmp_path, run_dir):
    # A city must not start with P: every case that looks up Paris loses its city row.
    comparison = diff(
        tmp_path,
        run_dir,
        ("city: {exact: {case_sensitive: false}}", 'city: {regex: {pattern: "^[^P]"}}'),
    )
    assert changed(comparison) == {
        "current weather in Paris": "regression",
        "compare two cities": "worse",
        "forecast for tomorrow": "worse",
    }
    for c in comparison.changes[:3]:
        assert c.after.score < c.before.score
        assert [(r.field, r.before.score, r.after.score) for r in c.rows] == [("city", 1.0, 0.0)]
    assert comparison.changes[0].case == "current weather in Paris"  # regressions first
    assert comparison.exit_code == 1


def test_changed_expected_argument_is_a_regression_and_exits_1(tmp_path, run_dir):
    comparison = diff(
        tmp_path,
        run_dir,
        BERLIN,
    )
    assert changed(comparison) == {"compare two cities": "regression"}
    c = comparison.changes[0]
    assert (c.before.status, c.after.status) == ("pass", "fail")
    assert sorted(r.after.expected for r in c.rows) == ["Berlin", "Rome"]
    assert all(r.field == "city" and r.after.score == 0 for r in c.rows)
    assert comparison.exit_code == 1


def test_pass_to_warn_is_worse_but_does_not_gate(tmp_path, run_dir):
    comparison = diff(
        tmp_path,
        run_dir,
        (
            "- get_current_weather: {city: London}\n      final_answer",
            "- get_current_weather: {city: Berlin}\n      final_answer",
        ),
    )
    assert changed(comparison) == {"compare two cities": "worse"}
    c = comparison.changes[0]
    assert (c.before.status, c.after.status) == ("pass", "warn")
    assert comparison.exit_code == 0


def test_edited_user_message_needs_a_rerun_and_does_not_gate(tmp_path, run_dir):
    comparison = diff(
        tmp_path,
        run_dir,
        ("user: Will it rain in Paris tomorrow?", "user: Does it rain in Paris tomorrow?"),
    )
    assert changed(comparison) == {"forecast for tomorrow": "changed"}
    (c,) = [c for c in comparison.changes if c.rerun]
    assert c.case == "forecast for tomorrow"
    assert c.named == (
        'user message: "Will it rain in Paris tomorrow?" -> "Does it rain in Paris tomorrow?"',
    )
    assert comparison.exit_code == 3  # stale evidence gates by default
    assert replace(comparison, allow_stale=True).exit_code == 0


def test_added_and_removed_cases(tmp_path, run_dir):
    comparison = diff(
        tmp_path,
        run_dir,
        ("  - name: now and tomorrow, in order", "  - name: now and tomorrow, strictly in order"),
    )
    assert changed(comparison) == {
        "now and tomorrow, strictly in order": "added",
        "now and tomorrow, in order": "removed",
    }
    added = next(c for c in comparison.changes if c.kind == "added")
    assert added.needs_run and added.after is None
    assert comparison.exit_code == 3  # a case with no evidence gates by default
    assert replace(comparison, allow_stale=True).exit_code == 0


def cli(*args: str):
    return evalspec_cli(list(args))


def test_cli_diff_prints_the_change_and_writes_markdown(tmp_path, run_dir):
    head = edited(tmp_path, BERLIN)
    md = tmp_path / "diff.md"
    result = cli("diff", str(WEATHER), str(head), "-t", str(run_dir), "--markdown", str(md))
    assert result.exit_code == 1, result.output
    assert "REGRESSION compare two cities  PASS 1.000 → FAIL" in result.output
    assert "city (call 2): 1.00×1 → 0.00×1" in result.output
    text = md.read_text(encoding="utf-8")
    # Neither city alone fails the case (each leaves it at WARN): the row says both did.
    assert (
        "| compare two cities | cause: expected call 1 (get\\_current\\_weather)"
        ' · city: "Paris" -&gt; "Rome" and expected call 2 (get\\_current\\_weather) · city: '
        '"London" -&gt; "Berlin" together (alone, each gives WARN 0.833) | PASS 1.000 | FAIL'
        in text
    )
    assert '- changed: expected call 1 (get\\_current\\_weather) city: "Paris" -&gt;' in text
    assert "| forecast for tomorrow |" not in text  # unchanged cases stay out of the comment


def test_cli_diff_json(tmp_path, run_dir):
    head = edited(tmp_path, ("fail_threshold: 0.8", "fail_threshold: 0.7"))
    result = cli(
        "diff", str(WEATHER), str(head), "-t", str(run_dir / "transcripts.jsonl"), "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["counts"]["better"] == 1 and data["exit_code"] == 0
    ny = next(c for c in data["changes"] if c["case"] == "current weather in New York")
    assert (ny["before"]["status"], ny["after"]["status"]) == ("fail", "warn")


@pytest.mark.parametrize(
    "args",
    [
        ["diff", str(WEATHER), "-t", "{run}"],  # one suite without --base-ref
        ["diff", str(WEATHER), str(WEATHER), "-t", "/nonexistent/run"],
        ["diff", str(WEATHER), str(WEATHER), "--base-ref", "HEAD", "-t", "{run}"],
        ["compare", "/nonexistent/a.json", "/nonexistent/b.json"],
    ],
)
def test_invalid_input_exits_2_without_traceback(args, run_dir):
    result = cli(*[a.replace("{run}", str(run_dir)) for a in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "error:" in result.output


def test_invalid_head_suite_exits_2_with_position(tmp_path, run_dir):
    head = edited(tmp_path, ("fail_threshold: 0.8", "fail_threshold: high"))
    result = cli("diff", str(WEATHER), str(head), "-t", str(run_dir))
    assert result.exit_code == 2
    assert f"{head}:" in result.output and "fail_threshold" in result.output


def test_markdown_diff_escapes_names_and_lists_rows(tmp_path, run_dir):
    diff(
        tmp_path,
        run_dir,
        ("  - name: compare two cities", "  - name: compare <script>x</script> | cities"),
        BERLIN,
        markdown=tmp_path / "comment.md",
        show_unchanged=True,
    )
    text = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert "<script>" not in text
    assert "compare &lt;script&gt;x&lt;/script&gt; \\| cities" in text
    assert "| compare two cities | - | PASS 1.000 | - | removed |" in text


# ---------------------------------------------------------------- --base-ref


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding the weather suite with its tools in an included file."""
    text = WEATHER.read_text(encoding="utf-8")
    start, end = text.index("tools:\n"), text.index("cases:\n")
    (tmp_path / "suites" / "shared").mkdir(parents=True)
    (tmp_path / "suites" / "shared" / "tools.yaml").write_text(text[start:end], encoding="utf-8")
    suite = text[:start] + "tools:\n  - include: shared/tools.yaml\n\n" + text[end:]
    (tmp_path / "suites" / "weather.yaml").write_text(suite, encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def test_base_ref_reads_the_committed_suite(repo, run_dir):
    path = repo / "suites" / "weather.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(*BERLIN), encoding="utf-8")
    result = cli("diff", "--base-ref", "HEAD", str(path), "-t", str(run_dir), "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["before"] == f"HEAD:{path.as_posix()}"
    assert data["counts"]["regression"] == 1
    assert data["counts"]["rerun"] == 0


def test_base_ref_takes_includes_from_the_same_ref(repo, run_dir):
    tools = repo / "suites" / "shared" / "tools.yaml"
    tools.write_text(
        tools.read_text(encoding="utf-8").replace(
            "Current weather for a city.", "Current weather for one city."
        ),
        encoding="utf-8",
    )
    result = cli(
        "diff",
        "--base-ref",
        "HEAD",
        str(repo / "suites" / "weather.yaml"),
        "-t",
        str(run_dir),
        "--json",
    )
    assert result.exit_code == 3, result.output
    # The tool definitions are part of every request: every case now needs a re-run.
    data = json.loads(result.stdout)
    assert data["counts"]["rerun"] == 6
    assert data["suite_wide"] == [
        'tool get_current_weather description: "Current weather for a city." -> '
        '"Current weather for one city."'
    ]


def test_base_ref_missing_include_is_reported(repo, run_dir):
    path = repo / "suites" / "weather.yaml"
    # The tools file was never committed: it exists only in this checkout.
    git(repo, "rm", "-q", "--cached", "suites/shared/tools.yaml")
    git(repo, "commit", "-q", "-m", "untrack the tools file")
    result = cli("diff", "--base-ref", "HEAD", str(path), "-t", str(run_dir))
    assert result.exit_code == 2
    assert "suites/shared/tools.yaml is included but does not exist at HEAD" in result.output


def test_base_ref_new_suite_counts_every_case_as_added(repo, run_dir):
    new = repo / "suites" / "weather2.yaml"
    shutil.copy(repo / "suites" / "weather.yaml", new)
    result = cli(
        "diff", "--base-ref", "HEAD", str(new), "-t", str(run_dir), "--json", "--allow-stale"
    )
    # A new suite is a new place keys go: its endpoints are listed and the review stops (4).
    assert result.exit_code == 4, result.output
    data = json.loads(result.stdout)
    assert data["counts"]["added"] == 6
    assert data["security"] == [
        "new suite: model gpt-4o-mini sends to the provider's default (OPENAI_BASE_URL or "
        "OpenAI) with the key in $OPENAI_API_KEY"
    ]


def test_base_ref_unknown_ref_exits_2(repo, run_dir):
    result = cli(
        "diff",
        "--base-ref",
        "origin/nope",
        str(repo / "suites" / "weather.yaml"),
        "-t",
        str(run_dir),
    )
    assert result.exit_code == 2
    assert "origin/nope" in result.output


# ---------------------------------------------------------------- compare


def test_compare_puts_regressions_first(tmp_path, run_dir):
    head = load_suite(edited(tmp_path, BERLIN))
    scored = score(head, load_transcripts(run_dir))
    write_reports(scored, ReportFiles(results=tmp_path / "b" / "results.json"))
    comparison = api.compare([run_dir, tmp_path / "b"])
    kinds = [c.kind for c in comparison.changes]
    assert kinds == sorted(kinds, key=["regression", "worse", "better", "unchanged"].index)
    assert kinds.count("regression") == 1 and comparison.exit_code == 1
    result = cli("compare", str(run_dir), str(tmp_path / "b"), "--all")
    assert result.exit_code == 1
    assert result.output.index("REGRESSION") < result.output.index("UNCHANGED")


def test_compare_of_a_run_with_itself_exits_0(run_dir):
    result = cli("compare", str(run_dir), str(run_dir / "results.json"), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["counts"]["unchanged"] == 6


@pytest.fixture
def beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose weather suite includes its tools from a file beside it in suites/,
    where `suites/*.yaml` matches it too; the example recordings committed."""
    text = WEATHER.read_text(encoding="utf-8")
    start, end = text.index("tools:\n"), text.index("cases:\n")
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "weather_tools.yaml").write_text(text[start:end].replace("tools:\n", "", 1))
    suite = text[:start] + "tools:\n  - include: weather_tools.yaml\n\n" + text[end:]
    (suites / "weather.yaml").write_text(suite, encoding="utf-8")
    shutil.copy(RECORDINGS, suites / RECORDINGS.name)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_pattern_leaves_out_include_files_and_review_shows_their_change_on_the_suite(beside):
    assert [line for line in cli("validate", "suites/*.yaml").output.splitlines()] == [
        "1 suite valid (6 cases)"
    ]
    tools = beside / "suites" / "weather_tools.yaml"
    text = tools.read_text(encoding="utf-8")
    tools.write_text(text.replace("Current weather for a city.", "Weather now in a city."))
    result = cli("review", "--base-ref", "HEAD", "--json")
    assert result.exit_code == 3, result.output  # every case needs a run: its tools changed
    data = json.loads(result.stdout)
    assert [s["path"] for s in data["suites"]] == ["suites/weather.yaml"]


def test_an_include_file_named_outright_is_still_refused_as_a_suite(beside):
    result = cli("validate", "suites/weather_tools.yaml")
    assert result.exit_code == 2
    assert "weather_tools.yaml:1:3: a suite must be a mapping of keys, not a list" in result.output
    only = cli("validate", "suites/*_tools.yaml")
    assert only.exit_code == 2
    assert "matches only include files (lists of tools or cases), no suite" in only.output


def test_a_change_that_mends_a_suite_the_base_cannot_load_is_reviewed(beside):
    suite = beside / "suites" / "weather.yaml"
    good = suite.read_text(encoding="utf-8")
    suite.write_text(good.replace("cases:\n", "cases:\n  - nme: broken\n", 1), encoding="utf-8")
    git(beside, "commit", "-q", "-am", "a broken suite")
    suite.write_text(good, encoding="utf-8")
    result = cli("review", "--base-ref", "HEAD", "--json")
    assert result.exit_code != 2, result.output  # reviewed, not refused
    data = json.loads(result.stdout)
    (review,) = data["suites"]
    line = good[: good.index("cases:\n")].count("\n") + 2
    notes = " ".join(review["notes"])
    assert f"the suite at HEAD does not load (HEAD:suites/weather.yaml:{line}:5:" in notes
    assert "evalspec-review-" not in result.output  # never the temporary copy's name
    assert review["counts"]["added"] == 6
