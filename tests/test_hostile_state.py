"""Stateful tools, turns and the simulated user against hostile inputs.

A model's arguments, a server's reply and a suite in a pull request are untrusted: whatever
they hold, a run ends with a report (a call's error observation, an item's error), never a
traceback, and never writes a file that the next run refuses to read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, text_reply, tool_call_reply, tool_calls_reply
from support import BFCL_EVAL_ABSENT, call_tool, git, in_process

from evalspec.api import load_suite, tool_session
from evalspec.records import ToolSession

KEY_ENV = "EVALSPEC_TEST_KEY"

SUITE = """\
suite: hostile
models:
  - {{name: m, model: fake-m, base_url: "{url}", api_key_env: {key}}}
  - {{name: player, model: fake-user, base_url: "{url}", api_key_env: {key}}}
run: {{retries: 0, timeout: 10, recordings: rec.jsonl, max_turns: 3}}
state: {{x: 0}}
tools:
  - name: bump
    description: Add a number to the counter twice.
    parameters: {{type: object, properties: {{v: {{type: integer}}}}, required: [v]}}
    behavior:
      effects:
        - set: /x
          value: ${{args.v}}
        - increment: /x
          by: ${{args.v}}
      response: done
cases:
  - name: bump
    user: bump it
    expect:
      state: {{/x: 2}}
  - name: talk
    user:
      simulate: {{goal: bump the counter, model: player, max_turns: 2}}
    expect: {{final_answer: {{contains: done}}}}
"""

MAX_INT_DIGITS = 4300
"""Python's int/str conversion limit: JSON text holds no longer whole number Python reads."""
NINES = "9" * MAX_INT_DIGITS
"""The longest whole number JSON text may hold for Python; twice it is one digit longer."""


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-hostile-0000")


def write(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(SUITE.format(url=url, key=KEY_ENV), encoding="utf-8")
    return path


def run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = path.parent / "runs" / str(len(list(path.parent.glob("runs/*"))))
    return in_process("run", path, "--out", out, *args, env={"COLUMNS": "200"})


def transcripts(tmp_path: Path) -> dict[str, dict]:
    run_dir = tmp_path / "runs" / "0"
    lines = (run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    return {t["case"]: t for t in map(json.loads, lines)}


@pytest.mark.slow
def test_an_increment_past_what_json_can_write_is_the_calls_error_not_a_crash(
    tmp_path: Path, key: None
) -> None:
    """A model's whole number of 4300 digits, doubled by an increment, made a state the
    transcript writer could not encode: `run` died with a ValueError traceback."""

    def answer(body: dict) -> Reply:
        if body["model"] == "fake-user":
            return text_reply("###STOP###")
        if body["messages"][-1]["role"] == "tool":
            return text_reply("finished")
        return tool_call_reply("bump", '{"v": ' + NINES + "}")

    with FakeOpenAI(answer) as server:
        done = run(write(tmp_path, server.base_url))
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 1, done.stderr  # the case fails; the run completes
    bump = transcripts(tmp_path)["bump"]
    (observation,) = (m["content"] for m in bump["messages"] if m["role"] == "tool")
    assert f"/x would have more than {MAX_INT_DIGITS} digits" in observation
    assert bump["state"] == {"x": 0}  # all or nothing: the set was undone too


def test_increments_that_leave_the_numbers_json_holds_are_refused_and_change_nothing() -> None:
    twice = {
        "behavior": {
            "effects": [{"set": "/x", "value": "${args.v}"}, {"increment": "/x", "by": "${args.v}"}]
        }
    }
    state = {"x": 0}
    out = call_tool(twice, state, {"v": int(NINES)})
    assert out.error == f"/x would have more than {MAX_INT_DIGITS} digits"
    assert out.state == state
    low = call_tool(twice, state, {"v": -int(NINES)})
    assert low.error == f"/x would have more than {MAX_INT_DIGITS} digits"
    fits = call_tool(twice, state, {"v": int(NINES) // 2})
    assert fits.error is None and fits.state["x"] == int(NINES) - 1
    # a whole number too large for a float, plus a fraction: OverflowError before
    half = {"behavior": {"effects": [{"increment": "/x", "by": 0.5}]}}
    out = call_tool(half, {"x": 10**400}, {})
    assert out.error == "/x would not be a finite number"


@pytest.mark.slow
@pytest.mark.parametrize("usage", [{"prompt_tokens": -7}, {"completion_tokens": float("inf")}])
def test_a_servers_broken_token_counts_fail_its_item_and_are_never_recorded(
    tmp_path: Path, key: None, usage: dict
) -> None:
    """A simulated user's server that counted -7 tokens got its answer recorded; the same run
    then refused its own recordings file at that line (exit 2), and so did every later run.
    Infinity was an OverflowError."""

    def answer(body: dict) -> Reply | dict:
        if body["model"] == "fake-user":
            return Reply({"role": "assistant", "content": "bump it"}, usage=usage)
        if body["messages"][-1]["role"] == "tool":
            return text_reply("done")
        return tool_call_reply("bump", {"v": 1})

    with FakeOpenAI(answer) as server:
        path = write(tmp_path, server.base_url)
        first = run(path)
        assert "Traceback" not in first.stderr + first.stdout
        assert first.returncode == 1, first.stdout + first.stderr
        talk = transcripts(tmp_path)["talk"]
        assert "not a chat completion" in talk["error"]
        assert transcripts(tmp_path)["bump"]["error"] is None
        recorded = (tmp_path / "rec.jsonl").read_text(encoding="utf-8")
        assert "fake-user" not in recorded
        again = run(path, "--record", "offline")
    assert "not a recorded answer" not in again.stdout + again.stderr
    assert again.returncode == 3  # the simulated user's answer was never recorded


HOSTILE_ARGUMENTS = {
    "NaN": '{"v": NaN}',
    "Infinity": '{"v": -Infinity}',
    "1e999": '{"v": 1e999}',
    "deep": '{"v": ' + "[" * 150 + "]" * 150 + "}",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_ARGUMENTS))
def test_arguments_no_transcript_may_hold_are_refused_so_the_run_can_be_rescored(
    tmp_path: Path, key: None, name: str
) -> None:
    """NaN, Infinity, 1e999 (a float overflow) and 150 levels of nesting were parsed from a
    model's arguments, written into transcripts.jsonl and results.json, and then `score` and
    `view` refused the run's own files (exit 2, 'Infinity is not a number JSON allows')."""

    def answer(body: dict) -> Reply:
        if body["model"] == "fake-user":
            return text_reply("###STOP###")
        if body["messages"][-1]["role"] == "tool":
            return text_reply("finished")
        return tool_call_reply("bump", HOSTILE_ARGUMENTS[name])

    with FakeOpenAI(answer) as server:
        path = write(tmp_path, server.base_url)
        assert run(path).returncode == 1
    bump = transcripts(tmp_path)["bump"]
    (observation,) = (m["content"] for m in bump["messages"] if m["role"] == "tool")
    assert "arguments are not valid JSON" in observation
    assert bump["state"] == {"x": 0}
    run_dir = tmp_path / "runs" / "0"
    scored = in_process("score", path, "-t", run_dir / "transcripts.jsonl", env={"COLUMNS": "200"})
    assert scored.returncode == 1, scored.stdout + scored.stderr  # the case fails, as in the run
    viewed = in_process("view", run_dir, "-o", tmp_path / "report.html")
    assert viewed.returncode == 0, viewed.stdout + viewed.stderr


@pytest.mark.slow
def test_a_server_reply_nested_deeper_than_a_transcript_may_hold_fails_its_item(
    tmp_path: Path, key: None
) -> None:
    deep: Any = "x"
    for _ in range(250):
        deep = [deep]

    def answer(body: dict) -> Reply | dict:
        if body["model"] == "fake-user":
            return text_reply("###STOP###")
        message = {"role": "assistant", "content": "done", "extra": deep}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    with FakeOpenAI(answer) as server:
        path = write(tmp_path, server.base_url)
        assert run(path).returncode == 1
    assert "not a chat completion" in transcripts(tmp_path)["bump"]["error"]
    run_dir = tmp_path / "runs" / "0"
    scored = in_process("score", path, "-t", run_dir / "transcripts.jsonl", env={"COLUMNS": "200"})
    assert scored.returncode == 1, scored.stdout + scored.stderr


def test_a_bfcl_balance_funded_to_infinity_is_still_a_transcript_score_reads(
    tmp_path: Path,
) -> None:
    """BFCL's TradingBot adds floats: funding 1e308 twice made the balance inf, which the
    snapshot wrote as `Infinity` into transcripts.jsonl, and `score` refused the file."""
    pytest.importorskip("bfcl_eval", reason=BFCL_EVAL_ABSENT)
    from evalspec.api import load_transcripts, write_transcripts
    from evalspec.records import Transcript

    env = bfcl_tools(tmp_path, {"TradingBot": {}}, "trading_login", "fund_account")
    env.call("trading_login", {"username": "a", "password": "b"})
    for _ in range(2):
        env.call("fund_account", {"amount": 1e308})
    state = env.state
    assert state["TradingBot"]["account_info"]["balance"] == "Infinity"
    path = tmp_path / "transcripts.jsonl"
    write_transcripts(path, [Transcript(item_id="i", case="c", model="m", state=state)])
    (back,) = load_transcripts(path)
    assert back.state == state


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, answer",
    [
        ("fc", [{"touch": '{"file_name": ' + "[" * 500 + "]" * 500 + "}"}]),
        ("fc", [{"touch": '{"file_name": NaN}'}]),
    ],
    ids=["deep", "nan"],
)
def test_imported_bfcl_results_are_transcripts_that_score_reads(
    tmp_path: Path, kind: str, answer: object
) -> None:
    """BFCL result arguments nested 500 deep or holding NaN were imported as they were, and
    `score` then refused the transcripts `import bfcl-results` had just written (exit 2)."""
    bfcl_eval = pytest.importorskip("bfcl_eval", reason=BFCL_EVAL_ABSENT)
    data = Path(bfcl_eval.__file__).parent / "data"
    for name, source in [
        ("q.json", data / "BFCL_v4_multi_turn_base.json"),
        ("a.json", data / "possible_answer" / "BFCL_v4_multi_turn_base.json"),
    ]:
        first = source.read_text(encoding="utf-8").splitlines()[0]
        (tmp_path / name).write_text(first + "\n", encoding="utf-8")
    suite = tmp_path / "mt.yaml"
    made = in_process("import", "bfcl", tmp_path / "q.json", tmp_path / "a.json", "--out", suite)
    assert made.returncode == 0, made.stderr
    result = {"id": "multi_turn_base_0", "result": [[answer]]}
    (tmp_path / "r.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    out = tmp_path / "t.jsonl"
    imported = in_process("import", "bfcl-results", suite, tmp_path / "r.json", "--out", out)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["tool_calls"] == []  # no call, as BFCL
    scored = in_process("score", suite, "-t", out, env={"COLUMNS": "200"})
    assert scored.returncode == 1, scored.stdout + scored.stderr  # the case fails
    assert "nests deeper" not in scored.stdout + scored.stderr


SPOOFS = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
"""C1 controls and bidirectional overrides: the console and Markdown show them as escapes."""


@pytest.mark.slow
def test_the_html_report_shows_bidi_overrides_and_c1_controls_as_escapes(
    tmp_path: Path, key: None
) -> None:
    """A state change row, a model's answer or a suite's description holding U+202E showed
    reversed in the HTML report (and a raw U+009B in the file is a CSI to a terminal)."""
    hostile = "txt.exe\u202e \x9b2J done"

    def answer(body: dict) -> Reply:
        if body["model"] == "fake-user":
            return text_reply("###STOP###")
        if body["messages"][-1]["role"] == "tool":
            return text_reply(hostile)
        return tool_call_reply("bump", {"v": 1})

    path = write(tmp_path, "")
    text = SUITE.format(url="{url}", key=KEY_ENV).replace(
        "suite: hostile\n", "suite: hostile\ndescription: 'evil\\u202eexe.txt'\n"
    )
    with FakeOpenAI(answer) as server:
        path.write_text(text.replace("{url}", server.base_url), encoding="utf-8")
        done = run(path, "--html", str(tmp_path / "r.html"))
    assert done.returncode == 1, done.stdout + done.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert SPOOFS.search(page) is None
    assert "evil\\u202eexe.txt" in page  # the description, shown as an escape
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page)
    assert data is not None
    shown = json.dumps(json.loads(data.group(1)), ensure_ascii=False)
    assert "txt.exe\\\\u202e \\\\u009b2J done" in shown  # the answer, shown as escapes


# ------------------------------------------------- BFCL's file system: shared and cyclic graphs

FILES = {
    "root": {"w": {"type": "directory", "contents": {"d": {"type": "directory", "contents": {}}}}}
}
"""A file system whose current folder holds a folder `d`."""


def bfcl_tools(folder: Path, state: dict[str, Any], *names: str) -> ToolSession:
    """BFCL's classes holding `state`, as the tool environment `bfcl` of a suite offering the
    tools `names`, called by hand (`evalspec.api.tool_session`)."""
    suite = {
        "suite": "bfcl",
        "models": ["m"],
        "environment": {"kind": "bfcl", "validate_arguments": False},
        "state": state,
        "tools": [{"name": name, "parameters": {"type": "object"}} for name in names],
        "cases": [{"name": "c", "user": "hi", "expect": {"no_tool_calls": True}}],
    }
    path = folder / "bfcl.yaml"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return tool_session(load_suite(path))


def copies(k: int) -> list[tuple[str, dict[str, str]]]:
    """`cp d eI; cp d eI; mv eI d`, k times: each round shares d's tree twice more (BFCL's
    `cp` of a folder copies its mapping, not its children), so the tree is 3**k folders."""
    calls = []
    for i in range(k):
        cp = {"source": "d", "destination": f"e{i}"}
        calls += [("cp", cp), ("cp", cp), ("mv", {"source": f"e{i}", "destination": "d"})]
    return calls


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_an_imported_bfcl_answer_that_shares_folders_is_refused_not_walked(
    tmp_path: Path,
) -> None:
    """Before: `import bfcl` of this 2 KB record ran past 60 s at 2 GB and never ended."""
    pytest.importorskip("bfcl_eval", reason=BFCL_EVAL_ABSENT)
    calls = [
        f"{name}(source='{a['source']}',destination='{a['destination']}')" for name, a in copies(20)
    ]
    question = {
        "id": "multi_turn_base_0",
        "question": [[{"role": "user", "content": "copy"}]],
        "initial_config": {"GorillaFileSystem": FILES},
        "involved_classes": ["GorillaFileSystem"],
    }
    (tmp_path / "q.json").write_text(json.dumps(question) + "\n", encoding="utf-8")
    answer = {"id": "multi_turn_base_0", "ground_truth": [calls]}
    (tmp_path / "a.json").write_text(json.dumps(answer) + "\n", encoding="utf-8")
    made = in_process(
        "import", "bfcl", tmp_path / "q.json", tmp_path / "a.json", "--out", tmp_path / "s.yaml"
    )
    assert made.returncode == 2, made.stdout + made.stderr
    # the only record is refused, named in the answer file that holds its ground truth
    assert made.stderr.startswith("error: every record was refused, nothing written: ")
    assert (
        f"{tmp_path / 'a.json'}:1:1: record multi_turn_base_0 refused: under its ground truth, "
        "the BFCL state grew beyond what evalspec copies (it holds more than 100000 values)"
    ) in made.stderr
    assert not (tmp_path / "s.yaml").exists()


def test_a_bfcl_folder_copied_into_itself_or_moved_keeps_its_state_or_is_refused(
    tmp_path: Path,
) -> None:
    """One round of copies is a tree BFCL's `==` compares (stale `parent` links left out);
    `cp d d` puts a folder inside itself: a cycle, the call's error and every later one's."""
    pytest.importorskip("bfcl_eval", reason=BFCL_EVAL_ABSENT)
    env = bfcl_tools(tmp_path, {"GorillaFileSystem": FILES}, "cp", "mv", "ls")
    for name, arguments in copies(1):
        assert env.call(name, arguments).error is None
    tree = env.state["GorillaFileSystem"]["root"]["contents"]["d"]["contents"]
    assert sorted(tree["e0"]["contents"]) == ["d"]
    env.call("cp", {"source": "d", "destination": "d"})
    refused = env.call("ls", {}).error or ""
    assert refused.startswith("the BFCL state grew beyond what evalspec copies (it refers back")
    with pytest.raises(ValueError, match="refers back"):
        _ = env.state


BFCL_SUITE = {
    "suite": "files",
    "models": [{"name": "m", "model": "fake", "base_url": "{url}", "api_key_env": KEY_ENV}],
    "run": {"retries": 0, "recordings": "files.recordings.jsonl"},
    "environment": {"kind": "bfcl", "validate_arguments": False},
    "state": {"GorillaFileSystem": FILES},
    "tools": [
        {
            "name": name,
            "description": name,
            "parameters": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
            },
        }
        for name in ("cp", "mv")
    ],
    "cases": [
        {
            "name": "copy",
            "user": "copy d",
            "expect": {"state": {"/GorillaFileSystem/root/name": "w"}},
        }
    ],
}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_pull_request_whose_recorded_answer_shares_folders_is_refused_by_review(
    tmp_path: Path, key: None
) -> None:
    """Before: review of this 15 KB pull request (12 rounds of copies in one recorded answer)
    was killed at 120 s holding 2 GB; `run --record offline` wrote 44 MB of state for 8."""
    pytest.importorskip("bfcl_eval", reason=BFCL_EVAL_ABSENT)

    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    (repo / "README").write_text("base\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")

    def answer(body: dict) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return text_reply("done")
        return tool_calls_reply(*copies(12))

    suite = repo / "suites" / "files.yaml"
    with FakeOpenAI(answer) as server:
        text = json.dumps(BFCL_SUITE).replace("{url}", server.base_url)
        suite.write_text(text, encoding="utf-8")
        live = in_process("run", suite, "--out", tmp_path / "live")
    assert live.returncode == 1, live.stdout + live.stderr
    offline = in_process("run", suite, "--record", "offline", "--out", tmp_path / "offline")
    assert offline.returncode == 1, offline.stdout + offline.stderr
    (t,) = map(json.loads, (tmp_path / "offline" / "transcripts.jsonl").read_text().splitlines())
    assert t["finish_reason"] == "state_too_large" and len(t["tool_calls"]) == 36
    assert "the final state: the BFCL state grew beyond what evalspec copies" in t["error"]
    assert t["tool_calls"][-1]["error"].startswith("the BFCL state grew beyond")
    scored = in_process("score", suite, "-t", tmp_path / "offline" / "transcripts.jsonl")
    assert scored.returncode == 1 and "Traceback" not in scored.stderr, scored.stderr
    git(repo, "add", ".")
    reviewed = subprocess.run(
        [sys.executable, "-m", "evalspec", "review", "--base-ref", "main"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        timeout=100,
    )
    assert reviewed.returncode == 2, reviewed.stdout + reviewed.stderr
    assert "its recordings for case 'copy'" in reviewed.stderr
    assert "the BFCL state grew beyond what evalspec copies" in reviewed.stderr
