"""Anthropic models in a suite: validation, tool-name mapping, keys kept secret (the request
ids of each provider are in tests/test_request_keys.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, last_turn_has_tool_results, text_reply, tool_use_reply
from fake_openai import status_fault
from support import in_process

from evalspec import api
from evalspec.errors import SpecError
from evalspec.records import RunRequest

KEY = "sk-ant-test-SECRET-24680"
KEY_ENV = "EVALSPEC_TEST_CLAUDE_KEY"

SUITE = """\
suite: claude
models:
  - {{name: claude, model: fake-claude, provider: anthropic, base_url: "{url}"{key}}}
run: {{timeout: 5, retries: 1}}
critics: {{city: binary}}
tools:
  - name: Weather.Get
    parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
    responses: [{{output: {{temp: 21}}}}]
cases:
  - name: paris
    user: Weather in Paris?
    expect: {{tool_calls: [{{Weather.Get: {{city: Paris}}}}]}}
  - name: oslo
    user: Weather in Oslo?
    expect: {{tool_calls: [{{Weather.Get: {{city: Oslo}}}}]}}
"""


def write(tmp_path: Path, url: str = "http://127.0.0.1:9", key: str = "") -> Path:
    path = tmp_path / "claude.yaml"
    path.write_text(SUITE.format(url=url, key=key), encoding="utf-8")
    return path


def test_anthropic_models_read_their_own_key_variable_by_default(tmp_path: Path) -> None:
    [model] = api.load_suite(write(tmp_path)).models
    assert (model.provider, model.api_key_env) == ("anthropic", "ANTHROPIC_API_KEY")
    [named] = api.load_suite(write(tmp_path, key=f", api_key_env: {KEY_ENV}")).models
    assert named.api_key_env == KEY_ENV


def test_an_unknown_provider_is_a_suite_problem(tmp_path: Path) -> None:
    path = write(tmp_path)
    path.write_text(path.read_text().replace("provider: anthropic", "provider: gemini"))
    with pytest.raises(SpecError) as caught:
        api.load_suite(path)
    [problem] = caught.value.problems
    assert problem.line == 3
    assert "gemini" in str(problem) and "anthropic" in str(problem)


NAMES_SUITE = """\
suite: names
models:
  - {{name: claude, model: fake-claude, provider: anthropic, base_url: "{url}"}}
tools:
{tools}
cases:
  - name: all four
    user: Add them every way.
    expect: {{tool_calls: [{calls}]}}
"""
COLLIDING = ("Math.Add", "Math_Add", "Math_Add_2", "Math-Add")


def _every_tool(body: dict[str, Any]) -> Any:
    """Calls each tool offered, by the name it was offered under; then answers."""
    if last_turn_has_tool_results(body):
        return text_reply("Added.")
    return tool_use_reply(*((tool["name"], {}) for tool in body["tools"]))


def test_colliding_wire_names_stay_distinct_and_map_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names the API refuses are sent in a safe form, distinct from every other tool's, and the
    model's calls are read back under the suite's names."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    tools = "\n".join(
        f"  - {{name: '{n}', parameters: {{type: object}}, responses: [{{output: {i}}}]}}"
        for i, n in enumerate(COLLIDING)
    )
    calls = ", ".join(f"{{'{n}': {{}}}}" for n in COLLIDING)
    with FakeAnthropic(_every_tool) as server:
        path = tmp_path / "names.yaml"
        path.write_text(NAMES_SUITE.format(url=server.base_url, tools=tools, calls=calls), "utf-8")
        result = api.run(RunRequest(path, out=tmp_path / "run"))
        offered = [t["name"] for t in server.requests[0].body["tools"]]
    assert offered == ["Math_Add_3", "Math_Add", "Math_Add_2", "Math-Add"]
    (transcript,) = api.load_transcripts(result.run_dir)
    assert [c.name for c in transcript.tool_calls] == list(COLLIDING)
    assert result.exit_code == 0, result.report.results[0].reason


def _echoing(body: dict[str, Any]) -> Any:
    if last_turn_has_tool_results(body):
        return text_reply("It is 21 degrees.")
    text = body["messages"][0]["content"][0]["text"]
    if "Oslo" in text:
        return status_fault(500, message=f"overloaded; your key {KEY} / Bearer {KEY}")
    return tool_use_reply(("Weather_Get", {"city": "Paris"}))


@pytest.mark.slow
def test_run_against_anthropic_keeps_the_key_out_of_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeAnthropic(_echoing) as server:
        suite = write(tmp_path, server.base_url, key=f", api_key_env: {KEY_ENV}")
        proc = in_process("run", suite, "--verbose", "--out", tmp_path / "run")
        sent = {
            r.headers.get("x-api-key") or r.headers.get("authorization") for r in server.requests
        }
    assert proc.returncode == 1, proc.stderr
    assert any(KEY in (s or "") for s in sent)  # the key reached the server
    for text in (proc.stdout, proc.stderr):
        assert KEY not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    [paris, oslo] = sorted(
        (json.loads(line) for line in (tmp_path / "run" / "transcripts.jsonl").open()),
        key=lambda t: t["case"],
    )[::-1]
    assert paris["tool_calls"][0]["name"] == "Weather.Get"
    assert paris["final_answer"] == "It is 21 degrees."
    assert paris["finish_reason"] == "stop"
    assert "HTTP 500" in oslo["error"] and "***" in oslo["error"]


@pytest.mark.slow
def test_401_from_anthropic_names_the_variable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeAnthropic() as server:
        server.when(lambda body: True, status_fault(401, message=f"invalid x-api-key {KEY}"))
        suite = write(tmp_path, server.base_url, key=f", api_key_env: {KEY_ENV}")
        proc = in_process("run", suite, "--out", tmp_path / "run")
    assert proc.returncode == 3
    assert KEY_ENV in proc.stderr and KEY not in proc.stderr
