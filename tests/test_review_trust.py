"""Review verdicts that can be trusted: stale evidence is found, nothing passes silently, key
destinations are reviewed, and the change itself is named."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from support import evalspec_cli

from evalspec.api import compile_plan, diff, load_suite, load_transcripts, run_plan
from evalspec.records import RunOptions, ToolCall, Transcript

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"


def replay(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    out = tmp_path_factory.mktemp(name)
    suite = load_suite(SUITES / f"{name}.yaml")
    outcome = run_plan(
        compile_plan(suite),
        RunOptions(record="offline", recordings=SUITES / f"{name}.recordings.jsonl", run_dir=out),
    )
    assert not outcome.missing
    return out


@pytest.fixture(scope="module")
def weather_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replay(tmp_path_factory, "weather")


@pytest.fixture(scope="module")
def slack_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replay(tmp_path_factory, "slack")


def edited(tmp_path: Path, name: str, *replacements: tuple[str, str]) -> Path:
    text = (SUITES / f"{name}.yaml").read_text(encoding="utf-8")
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def cli(*args: str):
    return evalspec_cli([str(a) for a in args])


PARIS_30 = (
    "output: {city: Paris, temperature: 21, unit: celsius, sky: sunny}",
    "output: {city: Paris, temperature: 30, unit: celsius, sky: sunny}",
)


# ---------------------------------------------------------------- evidence is checked


def test_changed_simulated_response_flags_exactly_the_cases_that_saw_it(tmp_path, weather_run):
    head = load_suite(edited(tmp_path, "weather", PARIS_30))
    comparison = diff(load_suite(SUITES / "weather.yaml"), head, load_transcripts(weather_run))
    rerun = {c.case for c in comparison.changes if c.rerun}
    assert rerun == {"compare two cities", "current weather in Paris"}
    paris = next(c for c in comparison.changes if c.case == "current weather in Paris")
    assert paris.stale == (
        'get_current_weather {"city": "Paris", "unit": "celsius"}: the tool answers '
        "differently from what the model saw: temperature 21 -> 30",
    )
    assert paris.named == (
        'tool get_current_weather response when {"city": "Paris"}: temperature 21 -> 30',
    )
    # The forecast case also asks about Paris, but another tool: its evidence still holds.
    assert not next(c for c in comparison.changes if c.case == "forecast for tomorrow").rerun
    assert comparison.exit_code == 3
    assert replace(comparison, allow_stale=True).exit_code == 0


def test_stale_evidence_gates_the_cli_unless_accepted(tmp_path, weather_run):
    head = edited(tmp_path, "weather", PARIS_30)
    result = cli("diff", SUITES / "weather.yaml", head, "-t", weather_run)
    assert result.exit_code == 3, result.output
    assert "2 re-run needed" in result.output
    assert "the tool answers differently from what the model saw" in " ".join(result.output.split())
    accepted = cli("diff", SUITES / "weather.yaml", head, "-t", weather_run, "--allow-stale")
    assert accepted.exit_code == 0, accepted.output


SIMULATED = """\
suite: sim
models: [{name: m, model: m}]
tools:
  - name: lookup
    parameters: {type: object, properties: {q: {type: string}}}
    simulate: {model: sim-model, base_url: "http://127.0.0.1:9/v1"}
cases:
  - name: ask
    user: look it up
    expect:
      tool_calls: [{lookup: {q: x}}]
"""


def simulated_transcript(suite_path: Path, output: object) -> Transcript:
    (item,) = compile_plan(load_suite(suite_path)).items
    return Transcript(
        item_id=item.id,
        case="ask",
        model="m",
        tool_calls=(ToolCall("lookup", {"q": "x"}, '{"q": "x"}', "c1", output=output),),
        final_answer="done",
    )


def test_llm_simulated_output_is_checked_against_its_cache_only(tmp_path):
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATED, encoding="utf-8")
    suite = load_suite(path)
    t = simulated_transcript(path, {"answer": 1})
    # No cache: nothing can say what the simulator answers now, and nothing is asked.
    comparison = diff(suite, suite, [t])
    (c,) = comparison.changes
    assert c.rerun and "no cache holds its answer" in c.stale[0]
    cache = tmp_path / ".evalspec-cache" / "sim" / "lookup.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"{'q': 'x'}": {"error": "", "response": {"answer": 1}}}))
    assert not diff(suite, suite, [t]).changes[0].rerun
    cache.write_text(json.dumps({"{'q': 'x'}": {"error": "", "response": {"answer": 2}}}))
    assert diff(suite, suite, [t]).changes[0].rerun


# ---------------------------------------------------------------- nothing passes silently


def test_score_of_another_suites_run_exits_3_naming_what_did_not_match(weather_run):
    result = cli("score", SUITES / "slack.yaml", "-t", weather_run)
    assert result.exit_code == 3, result.output
    assert "6 transcripts are of cases" in result.output
    assert "compare two cities" in result.output
    assert "another suite" in result.output
    # Scoring nothing is never accepted.
    accepted = cli("score", SUITES / "slack.yaml", "-t", weather_run, "--allow-stale")
    assert accepted.exit_code == 3


def test_score_with_unknown_model_label_exits_3(tmp_path, weather_run):
    lines = (weather_run / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    renamed = [json.loads(line) for line in lines]
    renamed[0]["model"] = "gpt-5"
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in renamed) + "\n", encoding="utf-8")
    result = cli("score", SUITES / "weather.yaml", "-t", path)
    assert result.exit_code == 3, result.output
    assert "1 of model 'gpt-5'" in result.output
    accepted = cli("score", SUITES / "weather.yaml", "-t", path, "--allow-stale")
    assert accepted.exit_code == 1  # the weather run has failing cases; those still count


def test_diff_of_another_suites_run_exits_3(weather_run):
    result = cli("diff", SUITES / "slack.yaml", SUITES / "slack.yaml", "-t", weather_run)
    assert result.exit_code == 3, result.output
    assert "no transcript matches the suite" in result.output
    assert "nothing was scored" in result.output
    accepted = cli(
        "diff", SUITES / "slack.yaml", SUITES / "slack.yaml", "-t", weather_run, "--allow-stale"
    )
    assert accepted.exit_code == 3


# ---------------------------------------------------------------- where keys go


SIMULATOR = (
    "      - output: {high: 20, low: 12, sky: cloudy}\n",
    "      - output: {high: 20, low: 12, sky: cloudy}\n    simulate:\n      model: sim\n"
    "      base_url: http://203.0.113.9:8080/v1\n      api_key_env: CI_DEPLOY_TOKEN\n",
)


def test_new_simulator_endpoint_is_listed_first_and_exits_4(tmp_path, weather_run, monkeypatch):
    monkeypatch.setenv("CI_DEPLOY_TOKEN", "ghp_secret")
    head = edited(tmp_path, "weather", SIMULATOR, ("fail_threshold: 0.8", "fail_threshold: 0.7"))
    result = cli("diff", SUITES / "weather.yaml", head, "-t", weather_run, "--allow-stale")
    assert result.exit_code == 4, result.output
    out = " ".join(result.output.split())
    security = out.index("SECURITY simulator of tool get_forecast (new) sends to")
    assert security < out.index("every case: fail_threshold 0.8 -> 0.7") < out.index("BETTER")
    assert "$CI_DEPLOY_TOKEN (plain http" in out
    assert "ghp_secret" not in result.output


def test_a_judge_pointed_elsewhere_is_a_security_change(tmp_path):
    base = load_suite(SUITES / "weather.yaml")
    head = load_suite(
        edited(
            tmp_path,
            "weather",
            (
                "      final_answer:\n        contains: [Paris]\n",
                "      final_answer:\n        contains: [Paris]\n        judge:\n"
                "          model: j\n          criteria: names the warmer city\n"
                "          base_url: https://judge.example.net/v1\n"
                "          api_key_env: CI_DEPLOY_TOKEN\n",
            ),
        )
    )
    assert diff(base, head, []).security == (
        "judge of case 'compare two cities' (new) sends to https://judge.example.net/v1 with "
        "the key in $CI_DEPLOY_TOKEN",
    )
    assert diff(head, head, []).security == ()


def test_changed_model_endpoint_and_key_variable_are_security_changes(tmp_path, slack_run):
    head = edited(
        tmp_path,
        "slack",
        (
            "    api_key_env: OPENAI_API_KEY       # the key's variable, never the key itself\n",
            "    api_key_env: DEPLOY_KEY\n    base_url: https://collector.example.com/v1\n",
        ),
    )
    result = cli("diff", SUITES / "slack.yaml", head, "-t", slack_run, "--json")
    assert result.exit_code == 4
    assert json.loads(result.stdout)["security"] == [
        "model gpt-4o-mini: the provider's default (OPENAI_BASE_URL or OpenAI) with the key in "
        "$OPENAI_API_KEY -> https://collector.example.com/v1 with the key in $DEPLOY_KEY"
    ]


def test_run_refuses_a_key_over_plain_http_to_another_host(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-sent")
    path = tmp_path / "s.yaml"
    path.write_text(
        SIMULATED.replace(
            "models: [{name: m, model: m}]",
            "models: [{name: m, model: m, base_url: 'http://models.example.com/v1'}]",
        ),
        encoding="utf-8",
    )
    result = cli("run", path, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    assert "refusing to send the secret in $OPENAI_API_KEY over plain http" in result.output
    assert "sk-test-not-sent" not in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------- the change is named


def test_stricter_similarity_that_flips_a_match_is_named_even_when_the_score_stays(
    tmp_path, slack_run
):
    head = load_suite(
        edited(
            tmp_path,
            "slack",
            (
                "message: {similarity: 0.75, weight: 0.5}",
                "message: {similarity: 0.99, weight: 0.5}",
            ),
        )
    )
    comparison = diff(load_suite(SUITES / "slack.yaml"), head, load_transcripts(slack_run))
    assert comparison.suite_wide == (
        "message: similarity 0.75 (weight 0.5) -> similarity 0.99 (weight 0.5)",
    )
    general = next(c for c in comparison.changes if c.case == "post to general")
    assert general.kind == "changed"
    assert general.before.score == pytest.approx(general.after.score)
    (row,) = general.rows
    assert row.verdict_only
    shown = cli("diff", SUITES / "slack.yaml", head.path, "-t", slack_run).output
    assert "message (call 1): similarity 0.91 now not matched" in " ".join(shown.split())


def test_every_kind_of_change_is_named_above_the_scores(tmp_path, weather_run):
    head = edited(
        tmp_path,
        "weather",
        ("fail_threshold: 0.8", "fail_threshold: 0.85"),
        ("user: Will it rain in Paris tomorrow?", "user: Does it rain in Paris tomorrow?"),
        (
            "        - get_current_weather: {city: London}\n      final_answer",
            "        - get_current_weather: {city: Berlin}\n      final_answer",
        ),
    )
    result = cli("diff", SUITES / "weather.yaml", head, "-t", weather_run, "--allow-stale")
    out = result.output
    assert "every case: fail_threshold 0.8 -> 0.85" in out
    assert 'changed: user message: "Will it rain in Paris tomorrow?" -> "Does it rain' in out
    assert 'changed: expected call 2 (get_current_weather) city: "London" -> "Berlin"' in out
    # the change is above the rows that explain the movement
    assert out.index('city: "London" -> "Berlin"') < out.index("city (call 2)")


def test_critic_evaluator_and_tool_changes_are_named(tmp_path):
    base = load_suite(SUITES / "weather.yaml")
    head = load_suite(
        edited(
            tmp_path,
            "weather",
            ("unit: binary", "unit: {exact: {case_sensitive: false}, required: true}"),
            ("tool_call_order: {strict: true}", "tool_call_order: {strict: false}"),
            ("description: Weather forecast for a city on a date.", "description: Forecast."),
            (
                '        similarity: {value: "Showers are expected in Paris tomorrow.", '
                "threshold: 0.6}",
                '        similarity: {value: "Showers are expected in Paris tomorrow.", '
                "threshold: 0.8}",
            ),
        )
    )
    comparison = diff(base, head, [])
    assert 'unit: binary -> exact {"case_sensitive": false} (required)' in comparison.suite_wide
    order = next(c for c in comparison.changes if c.case == "now and tomorrow, in order")
    assert "evaluator tool_call_order · strict: true -> false" in order.named
    assert "tool get_forecast description: " in " ".join(comparison.suite_wide)
    forecast = next(c for c in comparison.changes if c.case == "forecast for tomorrow")
    assert "final_answer.similarity · threshold: 0.6 -> 0.8" in forecast.named
    assert all(c.needs_run for c in comparison.changes)  # no transcripts: every case
    assert comparison.exit_code == 3  # scored nothing


def test_console_output_carries_no_terminal_control_codes(tmp_path, weather_run):
    head = edited(
        tmp_path,
        "weather",
        ("  - name: compare two cities", '  - name: "compare \\e[2J\\e]0;x\\a two cities"'),
    )
    result = cli("diff", SUITES / "weather.yaml", head, "-t", weather_run, "--allow-stale")
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "compare \\x1b[2J" in result.output


def test_review_json_lists_every_suite(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    for name in ("weather.yaml", "weather.recordings.jsonl"):
        (repo / "suites" / name).write_bytes((SUITES / name).read_bytes())
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "b"]):
        subprocess.run(
            ["git", "-c", "user.email=t@e.com", "-c", "user.name=t", *args], cwd=repo, check=True
        )
    monkeypatch.chdir(repo)
    result = cli("review", "--base-ref", "main", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["path"] for s in data["suites"]] == ["suites/weather.yaml"]
    assert data["suites"][0]["counts"]["unchanged"] == 6


def test_diff_names_transcripts_of_an_unknown_model_label(tmp_path, weather_run):
    lines = (weather_run / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    data = [json.loads(line) for line in lines]
    for d in data[:2]:
        d["model"] = "gpt-5"
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in data) + "\n", encoding="utf-8")
    result = cli("diff", SUITES / "weather.yaml", SUITES / "weather.yaml", "-t", path)
    assert result.exit_code == 3, result.output
    out = " ".join(result.output.split())
    assert "SKIPPED 2 transcripts have a model label that the suite does not name" in out
    assert "2 need a run" in out  # the cases those transcripts were of have no evidence now
