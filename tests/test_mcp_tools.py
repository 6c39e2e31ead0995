"""Tools from MCP servers: a real SDK server over stdio and streamable HTTP, the lock file, live
execution recorded into the response cache, and a two-model suite (OpenAI and Anthropic fakes)
that runs live and then offline with identical results."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, last_turn_has_tool_results, tool_use_reply
from fake_anthropic import text_reply as claude_text
from fake_openai import FakeOpenAI, text_reply, tool_calls_reply

from evalspec import api
from evalspec.errors import SpecError
from evalspec.records import RunOptions

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SERVER = str(ROOT / "tests" / "mcp_server.py")
KEY_ENV = "EVALSPEC_TEST_KEY"

SUITE = """\
suite: reach
models:
  - {{name: gpt, model: fake-gpt, base_url: "{openai}", api_key_env: {key}}}
  - {{name: claude, model: fake-claude, provider: anthropic, base_url: "{anthropic}", \
api_key_env: {key}}}
run: {{timeout: 20, retries: 1, concurrency: 4}}
critics: {{a: binary, b: binary, path: binary}}
tools:
  - mcp:
      {source}
      include: ["Math.*", "Files.*", "Text.*"]
      exclude: ["Text.*"]
      execute: true
      responses:
        Math.Multiply: [{{output: 42}}]
cases:
  - name: add
    user: Add 2 and 3
    expect: {{tool_calls: [{{Math.Add: {{a: 2, b: 3}}}}]}}
  - name: delete
    user: Delete notes.txt
    expect: {{tool_calls: [{{Files.Delete: {{path: notes.txt}}}}]}}
  - name: multiply twice
    user: Multiply 6 by 7 and 2 by 3
    expect: {{tool_calls: [{{Math.Multiply: {{a: 6, b: 7}}}}, {{Math.Multiply: {{a: 2, b: 3}}}}]}}
"""

# What each scripted model does for a user message: tool calls by their wire names.
SCRIPT: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "Add 2 and 3": [("Math_Add", {"a": 2, "b": 3})],
    "Delete notes.txt": [("Files_Delete", {"path": "notes.txt"})],
    "Multiply 6 by 7 and 2 by 3": [
        ("Math_Multiply", {"a": 6, "b": 7}),
        ("Math_Multiply", {"a": 2, "b": 3}),
    ],
}


def _openai_responder(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return text_reply(
            "results: " + " ".join(m["content"] for m in messages[2:] if m["role"] == "tool")
        )
    user = next(m["content"] for m in messages if m["role"] == "user")
    return tool_calls_reply(*SCRIPT[user])


def _anthropic_responder(body: dict[str, Any]) -> Any:
    if last_turn_has_tool_results(body):
        results = [b["content"] for b in body["messages"][-1]["content"]]
        return claude_text("results: " + " ".join(results))
    user = body["messages"][0]["content"][0]["text"]
    return tool_use_reply(*SCRIPT[user])


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAI, FakeAnthropic]]:
    monkeypatch.setenv(KEY_ENV, "sk-test-mcp-KEY-789")
    with FakeOpenAI(_openai_responder) as gpt, FakeAnthropic(_anthropic_responder) as claude:
        yield gpt, claude


def _write_suite(tmp_path: Path, models: tuple[FakeOpenAI, FakeAnthropic], source: str) -> Path:
    gpt, claude = models
    path = tmp_path / "reach.yaml"
    text = SUITE.format(openai=gpt.base_url, anthropic=claude.base_url, key=KEY_ENV, source=source)
    path.write_text(text, encoding="utf-8")
    return path


def _stdio_source() -> str:
    return f"command: [{json.dumps(sys.executable)}, {json.dumps(SERVER)}, --log, calls.jsonl]"


def _calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _refresh(path: Path) -> subprocess.CompletedProcess[str]:
    """`evalspec tools refresh` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "tools", "refresh", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def _run(path: Path, record: str) -> list[Any]:
    plan = api.compile_plan(api.load_suite(path))
    return api.run_plan(plan, RunOptions(record=record)).transcripts


def _observed(transcripts: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            t.model,
            t.case,
            t.final_answer,
            t.error,
            tuple(
                (c.name, json.dumps(c.arguments), json.dumps(c.output), c.error)
                for c in t.tool_calls
            ),
        )
        for t in transcripts
    )


def test_validate_without_a_lock_names_the_refresh_command(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    with pytest.raises(SpecError) as caught:
        api.load_suite(path)
    [problem] = caught.value.problems
    assert "reach.tools.lock.json" in problem.message
    assert "evalspec tools refresh" in problem.hint
    assert (problem.line, problem.column) == (9, 7)  # the `mcp:` mapping
    assert _calls(tmp_path) == []


def test_refresh_over_stdio_locks_definitions_and_validate_reads_only_the_lock(
    tmp_path, models
) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    outcome = api.refresh_tools(path)
    lock = tmp_path / "reach.tools.lock.json"
    assert outcome.lock_file == lock
    assert outcome.changed == ["+Math.Add", "+Math.Multiply", "+Text.Upper", "+Files.Delete"]
    data = json.loads(lock.read_text())
    [(key, entry)] = data["servers"].items()
    assert key.endswith("mcp_server.py --log calls.jsonl")
    add = entry["tools"][0]
    assert add["name"] == "Math.Add" and add["description"] == "Add two numbers."
    assert add["inputSchema"]["required"] == ["a", "b"]
    before = lock.read_bytes()
    assert api.refresh_tools(path).changed == []
    assert lock.read_bytes() == before  # an unchanged server rewrites the same bytes

    suite = api.load_suite(path)
    assert [t.name for t in suite.tools] == ["Math.Add", "Math.Multiply", "Files.Delete"]
    # validate in a fresh interpreter: the mcp package is never imported
    probe = (
        "import sys; from evalspec.api import load_suite; "
        f"load_suite({str(path)!r}); print('mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_edited_lock_shows_as_a_changed_definition(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    api.refresh_tools(path)
    lock = tmp_path / "reach.tools.lock.json"
    data = json.loads(lock.read_text())
    [entry] = data["servers"].values()
    entry["tools"][0]["description"] = "stale"
    del entry["tools"][1]
    lock.write_text(json.dumps(data))
    assert sorted(api.refresh_tools(path).changed) == ["+Math.Multiply", "~Math.Add"]


def test_filters_naming_no_tool_are_reported(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    api.refresh_tools(path)
    path.write_text(path.read_text().replace('"Text.*"]', '"Text.*", "Mth.*"]'))
    with pytest.raises(SpecError, match=r"'Mth\.\*' matches no tool the server listed"):
        api.load_suite(path)


def test_two_models_run_live_on_the_server_then_offline_identically(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    api.refresh_tools(path)
    live = _run(path, "auto")
    assert all(t.source == "live" and t.error is None for t in live)
    by_key = {(t.model, t.case): t for t in live}

    add = by_key[("claude", "add")].tool_calls[0]
    assert (add.name, add.arguments, add.output, add.error) == (
        "Math.Add",
        {"a": 2, "b": 3},
        5.0,
        None,
    )
    delete = by_key[("gpt", "delete")].tool_calls[0]
    assert delete.output is None and "Files.Delete" in delete.error
    # simulated responses answer before the server: Multiply never reached it
    assert [c.output for c in by_key[("claude", "multiply twice")].tool_calls] == [42, 42]
    assert sorted(c["tool"] for c in _calls(tmp_path)) == [
        "Files.Delete",
        "Math.Add",
    ]  # each distinct call once: the second model replayed the recorded output
    cache = tmp_path / "reach.mcp_cache" / "mcp" / "mcp_server"
    assert json.loads((cache / "Math.Add.json").read_text()) == {
        "{'a': 2, 'b': 3}": {"error": "", "response": 5.0}
    }
    assert json.loads((cache / "Files.Delete.json").read_text())["{'path': 'notes.txt'}"]["error"]

    report = api.score(api.load_suite(path), live)
    assert {(c.model, c.case, c.status) for c in report.cases} >= {("gpt", "add", "pass")}

    gpt, claude = models
    asked = len(gpt.requests) + len(claude.requests)
    offline = _run(path, "offline")
    assert all(t.source == "replay" for t in offline)
    assert _observed(offline) == _observed(live)
    assert len(gpt.requests) + len(claude.requests) == asked
    assert len(_calls(tmp_path)) == 2  # the server was not started again
    suite = api.load_suite(path)
    scored = [
        sorted((c.model, c.case, c.status, c.score) for c in api.score(suite, ts).cases)
        for ts in (live, offline)
    ]
    assert scored[0] == scored[1]
    assert {m for m, *_ in scored[0]} == {"gpt", "claude"}


def test_streamable_http_server_lists_and_answers(
    tmp_path, models, http_server, monkeypatch
) -> None:
    monkeypatch.setenv("EVALSPEC_TEST_MCP_TOKEN", "tok-SECRET-1")
    token = "Bearer ${EVALSPEC_TEST_MCP_TOKEN}"
    source = f'url: "{http_server}"\n      headers: {{Authorization: "{token}"}}'
    path = _write_suite(tmp_path, models, source)
    outcome = api.refresh_tools(path)
    assert outcome.servers == {
        http_server: ["Math.Add", "Math.Multiply", "Text.Upper", "Files.Delete"]
    }
    lock_text = (tmp_path / "reach.tools.lock.json").read_text()
    assert "tok-SECRET-1" not in lock_text and "Authorization" not in lock_text
    live = _run(path, "auto")
    add = next(t for t in live if t.case == "add" and t.model == "gpt").tool_calls[0]
    assert add.output == 5.0
    assert [c["tool"] for c in _calls(tmp_path)].count("Math.Add") == 1


def test_offline_run_without_recorded_output_is_an_observation(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    api.refresh_tools(path)
    gpt, _ = models
    gpt.enqueue(tool_calls_reply(("Math_Add", {"a": 1, "b": 1})), text_reply("gave up"))
    plan = api.compile_plan(api.load_suite(path), cases=["add"], models=["gpt"])
    [live] = api.run_plan(plan, RunOptions(record="auto")).transcripts
    assert live.tool_calls[0].output == 2.0
    # run once live (records), then the same plan offline with a cache emptied: the server
    # must not start; the model sees an error observation instead
    (tmp_path / "reach.mcp_cache" / "mcp" / "mcp_server" / "Math.Add.json").unlink()
    calls_before = len(_calls(tmp_path))
    [again] = api.run_plan(plan, RunOptions(record="offline")).transcripts
    assert again.tool_calls[0].error.startswith("no recorded output of this MCP tool")
    assert len(_calls(tmp_path)) == calls_before


def test_refresh_of_a_server_that_does_not_start_is_a_clear_error(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, "command: [no-such-mcp-server-binary]")
    result = _refresh(path)
    assert result.returncode == 3
    assert "cannot start or reach the MCP server 'no-such-mcp-server-binary'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "reach.tools.lock.json").exists()


def test_refresh_shows_the_end_of_what_a_failing_server_wrote_to_stderr(tmp_path, models) -> None:
    """The SDK says only "Connection closed"; the server's own last lines say why. They are
    bounded (a chatty server cannot flood the message) and never reach the terminal as control
    codes."""
    server = tmp_path / "broken_server.py"
    server.write_text(
        "import sys\n"
        "for i in range(5000):\n"
        "    print(f'starting step {i}', file=sys.stderr)\n"
        "print('\\x1b]0;pwned\\x07\\x1b[2JModuleNotFoundError: no module named calc_tools',"
        " file=sys.stderr)\n"
        "sys.exit(1)\n",
        encoding="utf-8",
    )
    path = _write_suite(tmp_path, models, f"command: [{json.dumps(sys.executable)}, {server}]")
    result = _refresh(path)
    assert result.returncode == 3
    said = result.stderr
    assert "cannot start or reach the MCP server" in said
    assert "the server's stderr ended with:" in said
    assert "ModuleNotFoundError: no module named calc_tools" in said
    assert "\x1b" not in said and "\x07" not in said  # shown as escapes, never sent
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in said
    assert "starting step 4999" in said and "starting step 4980" not in said  # the tail only
    assert len(said) < 3000 and "Traceback" not in said


def test_refresh_cli_prints_what_changed(tmp_path, models) -> None:
    path = _write_suite(tmp_path, models, _stdio_source())
    result = _refresh(path)
    assert result.returncode == 0, result.stderr
    assert "4 tools" in result.stdout
    assert "+Math.Add" in result.stdout
    checked = subprocess.run(
        [sys.executable, "-m", "evalspec", "validate", str(path)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    assert textwrap.dedent(checked.stdout).startswith("1 suite valid (3 cases)")


def _locked_suite(tmp_path: Path, tools: list[dict[str, Any]], extra: str = "") -> Path:
    """A suite whose lock (written as a pull request would commit it) lists `tools` for a
    server that is never started."""
    path = tmp_path / "reach.yaml"
    path.write_text(
        "suite: locked\nmodels: [m]\n"
        f"tools: [{{mcp: {{command: [never-started-server]{extra}}}}}]\n"
        "cases: [{name: c, user: hi, expect: {no_tool_calls: true}}]\n"
    )
    lock = {"servers": {"never-started-server": {"tools": tools}}}
    (tmp_path / "reach.tools.lock.json").write_text(json.dumps(lock), encoding="utf-8")
    return path


def test_a_broken_lock_file_is_a_clear_suite_error(tmp_path) -> None:
    path = _locked_suite(tmp_path, [])
    (tmp_path / "reach.tools.lock.json").write_text('{"servers": {"never-started-server": {}}}')
    with pytest.raises(SpecError, match=r"the tool lock file is broken: server .* no list"):
        api.load_suite(path)
    (tmp_path / "reach.tools.lock.json").write_text("{not json")
    with pytest.raises(SpecError, match=r"reach\.tools\.lock\.json.*JSON"):
        api.load_suite(path)


def test_hostile_tool_names_in_a_lock_stay_inside_the_cache(tmp_path) -> None:
    schema = {"type": "object", "properties": {}}
    path = _locked_suite(
        tmp_path,
        [{"name": "../../escape", "inputSchema": schema}, {"name": "..", "inputSchema": schema}],
    )
    suite = api.load_suite(path)
    cache = (tmp_path / "reach.mcp_cache" / "mcp").resolve()
    for tool in suite.tools:
        assert Path(tool.cache_file).resolve().parent.parent == cache
    assert [Path(t.cache_file).name for t in suite.tools] == ["_.._escape.json", "_.json"]


def test_diff_against_git_reads_the_base_lock_and_shows_a_changed_definition(tmp_path) -> None:
    import shutil

    suites = tmp_path / "suites"
    suites.mkdir()
    for name in ("calc.yaml", "calc.tools.lock.json", "calc.recordings.jsonl"):
        shutil.copy(ROOT / "suites" / name, suites / name)
    shutil.copytree(ROOT / "suites" / "calc.mcp_cache", suites / "calc.mcp_cache")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True, capture_output=True)

    def evalspec(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evalspec", *args], capture_output=True, text=True, cwd=tmp_path
        )

    ran = evalspec("run", "suites/calc.yaml", "--record", "offline", "--out", "run")
    assert ran.returncode == 0, ran.stderr
    unchanged = evalspec("diff", "--base-ref", "HEAD", "suites/calc.yaml", "-t", "run", "--json")
    assert unchanged.returncode == 0, unchanged.stderr
    assert json.loads(unchanged.stdout)["counts"].get("rerun", 0) == 0

    lock = suites / "calc.tools.lock.json"
    lock.write_text(lock.read_text().replace("Add two numbers: a + b.", "Adds."))
    changed = evalspec("diff", "--base-ref", "HEAD", "suites/calc.yaml", "-t", "run", "--json")
    # a tool definition is part of every request: every recorded answer is now stale, and stale
    # evidence gates the review (exit 3) unless --allow-stale accepts it
    assert changed.returncode == 3, changed.stderr
    assert json.loads(changed.stdout)["counts"]["rerun"] == 6


def test_a_server_that_never_answers_times_out_and_is_abandoned(tmp_path) -> None:
    from evalspec.errors import RunError

    path = tmp_path / "silent.yaml"
    sleeper = json.dumps([sys.executable, "-c", "import time; time.sleep(60)"])
    path.write_text(
        "suite: silent\nmodels: [m]\nrun: {timeout: 1}\n"
        f"tools: [{{mcp: {{command: {sleeper}}}}}]\n"
        "cases: [{name: c, user: hi, expect: {no_tool_calls: true}}]\n",
        encoding="utf-8",
    )
    # The message names the 1 s timeout that ended the wait (the server sleeps for 60 s).
    with pytest.raises(RunError, match=r"cannot start or reach the MCP server '.*time.sleep.*1 s"):
        api.refresh_tools(path)


def test_a_response_cache_outside_the_suite_folder_is_refused(tmp_path) -> None:
    path = _locked_suite(tmp_path, [], extra=", cache: ../../elsewhere")
    with pytest.raises(SpecError, match=r"'\.\./\.\./elsewhere' cannot be written"):
        api.load_suite(path)


def test_a_source_names_its_server_with_command_or_url(tmp_path) -> None:
    path = _locked_suite(tmp_path, [], extra=', url: "http://127.0.0.1:9/mcp"')
    with pytest.raises(SpecError, match=r"exactly one of `command` .* or `url`") as caught:
        api.load_suite(path)
    assert caught.value.problems[0].path == "tools[0].mcp"
