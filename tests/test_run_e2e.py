"""End to end: suites in YAML, a real OpenAI-compatible HTTP server on loopback, the real runner.

The fake server answers from a script keyed on the user's message and the model id, and injects
the faults real endpoints produce. Most tests drive the Python API (fast, in process); the exit
codes and command-line selection are checked through the real `evalspec` command.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (
    FakeOpenAI,
    delay_fault,
    drop_fault,
    status_fault,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
)
from support import (
    KEY_ENV,
    ROOT,
    cli,
    free_port,
    in_process,
    results_of,
    run_api,
    scripted,
    tool_messages,
    user_text,
    write_e2e_suite,
)

from evalspec import api


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test-e2e-000000")
    with FakeOpenAI(scripted) as fake:
        yield fake


# --- the agent loop ----------------------------------------------------------------------------


def test_agent_loop_feeds_simulated_output_back(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    report, (t,) = run_api(suite, tmp_path / "run", cases=["weather paris"], models=["m1"])
    assert len(server.requests) == 2
    second = server.requests[1].body["messages"]
    call_id = second[1]["tool_calls"][0]["id"]
    assert second[2] == {"role": "tool", "tool_call_id": call_id, "content": '{"temp": 21}'}
    assert t.final_answer == 'Here you are: {"temp": 21}'
    assert (t.turns, t.finish_reason, t.error) == (2, "stop", None)
    assert t.tool_calls[0].output == {"temp": 21}
    assert t.usage.prompt_tokens == 20 and t.usage.completion_tokens == 10
    assert t.latency_s > 0
    assert [c.status for c in report.cases] == ["pass"]


def test_several_calls_in_one_turn_each_get_their_output(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    report, (t,) = run_api(suite, tmp_path / "run", cases=["two cities"], models=["m1"])
    answers = tool_messages(server.requests[1].body)
    assert [m["content"] for m in answers] == ['{"temp": 21}', '{"temp": 5}']
    assert [(c.arguments, c.turn) for c in t.tool_calls] == [
        ({"city": "Paris"}, 0),
        ({"city": "Oslo"}, 0),
    ]
    assert [c.status for c in report.cases] == ["pass"]


def test_max_turns_stops_a_model_that_never_answers(server: FakeOpenAI, tmp_path: Path) -> None:
    server.responder = lambda body: tool_call_reply("get_weather", {"city": "Paris"})
    suite = write_e2e_suite(tmp_path, server.base_url, max_turns=3)
    _, (t,) = run_api(suite, tmp_path / "run", cases=["weather paris"], models=["m1"])
    assert len(server.requests) == 3
    assert (t.finish_reason, t.turns, len(t.tool_calls)) == ("max_turns", 3, 3)


def test_single_turn_sends_exactly_one_request_per_item(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url, mode="single_turn")
    report, transcripts = run_api(suite, tmp_path / "run")
    assert len(transcripts) == 6
    assert len(server.requests) == 6
    assert not any(tool_messages(r.body) for r in server.requests)
    statuses = {(c.case, c.model): c.status for c in report.cases}
    assert statuses[("weather two cities", "m1")] == "pass"
    assert statuses[("add numbers", "m2")] == "fail"


def test_bad_calls_come_back_as_error_observations_and_the_run_goes_on(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    def respond(body: dict[str, Any]) -> Any:
        seen = tool_messages(body)
        if not seen:
            return tool_calls_reply(("teleport", {"to": "Mars"}), ("get_weather", {"city": 5}))
        if len(seen) == 2:
            return tool_call_reply("get_weather", {"city": "Paris"})
        return text_reply("21 degrees")

    server.responder = respond
    suite = write_e2e_suite(tmp_path, server.base_url)
    _, (t,) = run_api(suite, tmp_path / "run", cases=["weather paris"], models=["m1"])
    observations = [json.loads(m["content"]) for m in tool_messages(server.requests[1].body)]
    assert "unknown tool 'teleport'" in observations[0]["error"]
    assert "get_weather" in observations[0]["error"]  # the model is told what exists
    assert "city" in observations[1]["error"]
    assert (t.error, t.final_answer, t.turns) == (None, "21 degrees", 3)
    assert [c.output for c in t.tool_calls] == [None, None, {"temp": 21}]


def test_malformed_tool_call_json_is_kept_raw_and_fails_readably(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.when(lambda b: not tool_messages(b), tool_call_reply("get_weather", '{"city": "Par'))
    suite = write_e2e_suite(tmp_path, server.base_url)
    report, (t,) = run_api(suite, tmp_path / "run", cases=["weather paris"], models=["m1"])
    call = t.tool_calls[0]
    assert call.arguments is None
    assert call.raw_arguments == '{"city": "Par'
    assert "not valid JSON" in (call.error or "")
    (case,) = report.cases
    assert case.status == "fail"
    assert "not valid JSON" in case.reason


# --- faults ------------------------------------------------------------------------------------

FAULTS = {
    "429 with Retry-After": status_fault(429, retry_after=0.3),
    "500": status_fault(500),
    "answer slower than the timeout": delay_fault(5),
    "dropped connection": drop_fault(),
}


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_transient_faults_are_retried_and_the_item_succeeds(
    server: FakeOpenAI, tmp_path: Path, fault: str
) -> None:
    server.enqueue(FAULTS[fault])
    # Time-outs generous enough for a loaded machine, except where the time-out is the fault.
    slow = fault == "answer slower than the timeout"
    suite = write_e2e_suite(tmp_path, server.base_url, timeout=2 if slow else 30)
    report, (t,) = run_api(suite, tmp_path / "run", cases=["weather paris"], models=["m1"])
    assert t.error is None
    assert len(server.requests) == 3  # the failed attempt, its retry, the second turn
    assert [c.status for c in report.cases] == ["pass"]
    if fault.startswith("429"):
        gap = server.requests[1].at - server.requests[0].at
        assert gap >= 0.3, f"Retry-After 0.3 s not honoured: retried after {gap:.3f} s"


@pytest.mark.slow
def test_verbose_shows_each_retry_and_quiet_does_not(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    server.fail_next(503)
    quiet = cli("run", suite, "--case", "weather paris", "--model", "m1", "--out", tmp_path / "q")
    assert "retry 1 of" not in quiet.stderr
    server.fail_next(503)
    args = ("run", suite, "--case", "weather paris", "--model", "m1", "--out", tmp_path / "v")
    loud = cli(*args, "--record", "record", "-v")
    assert loud.returncode == 0, loud.stderr
    assert "HTTP 503" in loud.stderr and "retry 1 of" in loud.stderr


@pytest.mark.slow
def test_exhausted_retries_make_that_item_an_error(server: FakeOpenAI, tmp_path: Path) -> None:
    server.when(lambda b: "Paris?" in user_text(b), status_fault(503))
    suite = write_e2e_suite(tmp_path, server.base_url, retries=1)
    run_dir = tmp_path / "run"
    proc = cli("run", suite, "--model", "m1", "--out", run_dir)
    assert proc.returncode == 1, proc.stderr
    by_case = {r["case"]: r for r in results_of(run_dir)["results"]}
    assert by_case["weather paris"]["status"] == "error"
    assert "gave up after 2 attempts" in by_case["weather paris"]["reason"]
    assert "HTTP 503" in by_case["weather paris"]["reason"]
    assert by_case["add numbers"]["status"] == "pass"
    assert len({t.item_id for t in api.load_transcripts(run_dir)}) == 3  # nothing lost


def test_a_reply_the_provider_cannot_read_fails_only_its_item(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    garbled = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "tool_calls": [{"id": "c1", "function": "?"}]},
            }
        ]
    }
    server.when(lambda b: "Paris?" in user_text(b), garbled)
    suite = write_e2e_suite(tmp_path, server.base_url)
    report, transcripts = run_api(suite, tmp_path / "run", models=["m1"])
    by_case = {t.case: t for t in transcripts}
    assert "case 'weather paris' on model 'm1'" in (by_case["weather paris"].error or "")
    assert by_case["add numbers"].error is None
    statuses = {c.case: c.status for c in report.cases}
    assert statuses == {
        "weather paris": "error",
        "weather two cities": "pass",
        "add numbers": "pass",
    }
    assert len({t.item_id for t in api.load_transcripts(tmp_path / "run")}) == 3


# --- exit codes and selection through the real command ------------------------------------------


@pytest.mark.slow
def test_exit_code_0_when_all_pass_and_1_when_one_fails(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    ok = cli("run", suite, "--model", "m1", "--out", tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    assert "3 passed" in ok.stdout
    bad = cli("run", suite, "--out", tmp_path / "bad")
    assert bad.returncode == 1, bad.stderr
    statuses = {(c["case"], c["model"]): c["status"] for c in results_of(tmp_path / "bad")["cases"]}
    assert statuses[("add numbers", "m2")] == "fail"
    assert statuses[("add numbers", "m1")] == "pass"


@pytest.mark.slow
def test_exit_code_3_when_the_endpoint_is_unreachable(tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, f"http://127.0.0.1:{free_port()}/v1", retries=0)
    proc = cli("run", suite, "--model", "m1", "--out", tmp_path / "run")
    assert proc.returncode == 3, proc.stderr
    assert "cannot reach the model endpoint" in proc.stderr
    assert "--resume" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_exit_code_3_names_the_missing_key_variable(tmp_path: Path) -> None:
    suite = write_e2e_suite(
        tmp_path, "https://models.example.invalid/v1", key_env="EVALSPEC_NO_SUCH_KEY"
    )
    env = {k: v for k, v in os.environ.items() if k != "EVALSPEC_NO_SUCH_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalspec", "run", str(suite), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert "EVALSPEC_NO_SUCH_KEY" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_case_and_model_select_items(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    proc = cli("run", suite, "--case", "paris", "--model", "m2", "--out", tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    results = results_of(tmp_path / "run")["results"]
    assert [(r["case"], r["model"]) for r in results] == [("weather paris", "m2")]
    assert {r.body["model"] for r in server.requests} == {"fake-2"}


@pytest.mark.slow
def test_trials_run_each_case_n_times_under_its_pass_rule(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    lock = threading.Lock()
    seen: dict[str, int] = {}

    def one_wrong_in_three(body: dict[str, Any]) -> Any:
        user = user_text(body)
        with lock:
            seen[user] = seen.get(user, 0) + 1
            n = seen[user]
        city = "Lyon" if n == 2 else "Paris"
        return tool_call_reply("get_weather", {"city": city})

    server.responder = one_wrong_in_three
    extra = """\
  - name: strict paris
    user: Strict weather in Paris?
    pass_rule: all
    expect:
      tool_calls: [{get_weather: {city: Paris}}]
  - name: lenient paris
    user: Lenient weather in Paris?
    pass_rule: majority
    expect:
      tool_calls: [{get_weather: {city: Paris}}]
"""
    suite = write_e2e_suite(tmp_path, server.base_url, mode="single_turn", extra=extra)
    proc = cli(
        "run", suite, "--case", "strict", "--case", "lenient", "--model", "m1",
        "--trials", "3", "--out", tmp_path / "run",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    data = results_of(tmp_path / "run")
    assert len(data["results"]) == 6
    cases = {c["case"]: c for c in data["cases"]}
    assert (cases["strict paris"]["trials"], cases["strict paris"]["passed"]) == (3, 2)
    assert cases["strict paris"]["status"] == "fail"
    assert cases["lenient paris"]["status"] == "pass"
    assert "2/3 trials passed (rule: majority)" in cases["lenient paris"]["reason"]


def test_shards_cover_every_item_exactly_once(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = api.load_suite(write_e2e_suite(tmp_path, server.base_url))
    everything = {it.id for it in api.compile_plan(suite, trials=2).items}
    one = {it.id for it in api.compile_plan(suite, trials=2, shard=(1, 2)).items}
    two = {it.id for it in api.compile_plan(suite, trials=2, shard=(2, 2)).items}
    assert one and two
    assert one | two == everything and not one & two
    assert one == {it.id for it in api.compile_plan(suite, trials=2, shard=(1, 2)).items}


# --- recordings --------------------------------------------------------------------------------


def test_offline_miss_exits_3_naming_case_and_model(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    proc = in_process("run", suite, "--case", "add", "--record", "offline", "--out", tmp_path / "r")
    assert proc.returncode == 3, proc.stderr
    assert "case 'add numbers' on model 'm1'" in proc.stderr
    assert "case 'add numbers' on model 'm2'" in proc.stderr
    assert server.requests == []


@pytest.mark.slow
def test_recordings_are_written_and_a_second_run_replays_without_http(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url)
    first = cli("run", suite, "--out", tmp_path / "first")
    assert first.returncode == 1, first.stderr
    calls = len(server.requests)
    recordings = tmp_path / "e2e.recordings.jsonl"
    keys = [json.loads(line).get("key") for line in recordings.read_text().splitlines()]
    assert len([k for k in keys if k]) == calls
    second = cli("run", suite, "--out", tmp_path / "second")
    assert second.returncode == 1, second.stderr
    assert len(server.requests) == calls
    assert f"{calls} replayed, 0 called" in second.stdout
    # Items and requests are counted apart, each named (an item may take several requests).
    items = len(results_of(tmp_path / "first")["results"])
    assert items != calls
    said = rf"^{items} items \(case × model × trial\) in [\d.]+s · model requests: "
    counted = (
        rf"0 replayed, {calls} called, 0 failed · {calls} sent \(retries included\) · results: "
    )
    assert re.search(said + counted, first.stdout, re.M)
    first_scores = [
        (r["case"], r["model"], r["score"]) for r in results_of(tmp_path / "first")["results"]
    ]
    second_scores = [
        (r["case"], r["model"], r["score"]) for r in results_of(tmp_path / "second")["results"]
    ]
    assert first_scores == second_scores


def test_a_case_offers_only_its_own_tools(server: FakeOpenAI, tmp_path: Path) -> None:
    """`tools:` on a case limits what the model sees; calling another suite tool is an error."""
    suite = tmp_path / "offered.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            suite: offered
            models: [{{name: m1, model: fake-1, base_url: "{server.base_url}",
                       api_key_env: {KEY_ENV}}}]
            run: {{mode: agent, max_turns: 2, retries: 0, timeout: 5}}
            tools:
              - name: get_weather
                parameters: {{type: object, properties: {{city: {{type: string}}}}}}
                responses: [{{output: {{temp: 21}}}}]
              - name: add
                parameters: {{type: object, properties: {{a: {{type: number}}}}}}
                responses: [{{output: 3}}]
            cases:
              - name: only weather
                user: "Weather in Paris?"
                tools: [get_weather]
                expect: {{tool_calls: [{{get_weather: {{city: Paris}}}}]}}
            """
        )
    )
    server.enqueue(tool_call_reply("add", {"a": 1}), text_reply("done"))
    _, transcripts = run_api(suite, tmp_path / "run")
    first = server.requests[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    call = transcripts[0].tool_calls[0]
    assert call.name == "add" and call.error == "unknown tool 'add'; available tools: get_weather"
