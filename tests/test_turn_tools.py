"""A turn that offers more tools (`turns[].add_tools`), end to end against a real HTTP server on
loopback: what each request offers, replay, evidence and review, and placed errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply
from support import refused_suite

from evalspec import api, records
from evalspec.records import RunOptions, Transcript

KEY_ENV = "EVALSPEC_TEST_KEY"

SUITE = """\
suite: added tools
models:
  - {{name: m, model: fake, base_url: "{url}", api_key_env: {key}}}
run: {{retries: 0, timeout: 10, recordings: rec.jsonl}}
tools:
  - name: add
    description: Add two numbers.
    parameters: {{type: object, properties: {{a: {{type: integer}}, b: {{type: integer}}}}}}
    responses: [{{output: 3}}]
  - name: mul
    description: Multiply two numbers.
    parameters: {{type: object, properties: {{a: {{type: integer}}, b: {{type: integer}}}}}}
    responses: [{{output: 6}}]
cases:
  - name: held back
    tools: [add]
    turn_rule: all_or_nothing
    turns:
      - user: add 1 and 2, then multiply 2 and 3
        expect: {{tool_calls: [{{add: {{a: 1, b: 2}}}}]}}
      - user: thanks
      - user: I have added a tool. What about now?
        add_tools: [mul]
        expect: {{tool_calls: [{{mul: {{a: 2, b: 3}}}}]}}
  - name: plain
    tools: [add]
    turns:
      - user: add 1 and 2
        expect: {{tool_calls: [{{add: {{a: 1, b: 2}}}}]}}
      - user: thanks
"""


def names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or ()]


def answer(body: dict[str, Any]) -> Any:
    """A model that tries `mul` whenever it is asked to multiply, offered or not."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text_reply("Done: " + last["content"])
    text = last.get("content") or ""
    if "multiply" in text:
        return tool_call_reply("add", {"a": 1, "b": 2})
    if "What about now" in text:
        return tool_call_reply("mul", {"a": 2, "b": 3})
    if "add 1 and 2" in text:
        return tool_call_reply("add", {"a": 1, "b": 2})
    if text == "thanks":  # not offered yet: refused as an unknown tool
        return tool_call_reply("mul", {"a": 2, "b": 3})
    return text_reply("ok")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test-added-000000")
    with FakeOpenAI(answer) as fake:
        yield fake


def write(tmp_path: Path, url: str, text: str = SUITE) -> Path:
    path = tmp_path / "added.yaml"
    path.write_text(text.format(url=url, key=KEY_ENV), encoding="utf-8")
    return path


def run(path: Path, record: str = "auto") -> tuple[records.Report, list[Transcript]]:
    suite = api.load_suite(path)
    outcome = api.run_plan(api.compile_plan(suite), RunOptions(record=record))
    return api.score(suite, outcome.transcripts), outcome.transcripts


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a socket was opened during an offline replay")


def test_each_turn_offers_the_tools_offered_so_far_and_replays_offline(
    server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, server.base_url)
    report, live = run(path)
    held = [r.body for r in server.requests if "multiply" in r.body["messages"][0]["content"]]
    # turn 1 (call, answer), turn 2 (refused call, answer), turn 3 (call, answer)
    assert [names(b) for b in held] == [["add"]] * 4 + [["add", "mul"]] * 2
    t = next(t for t in live if t.case == "held back")
    assert [(c.name, c.user_turn, c.error is None) for c in t.tool_calls] == [
        ("add", 0, True),
        ("mul", 1, False),  # not offered before turn 3: the model is told it is unknown
        ("mul", 2, True),
    ]
    assert "unknown tool 'mul'" in (t.tool_calls[1].error or "")
    assert {r.case: r.status for r in report.results} == {"held back": "pass", "plain": "pass"}
    # The evidence check offers what each turn offered: the recorded answers are the suite's.
    assert api.stale_transcripts(api.load_suite(path), live) == []
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    replayed_report, replayed = run(path, record="offline")
    assert {t.source for t in replayed} == {"replay"}
    assert [t.tool_calls for t in replayed] == [t.tool_calls for t in live]
    assert [r.status for r in replayed_report.results] == [r.status for r in report.results]


def test_a_changed_add_tools_makes_exactly_that_case_stale(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, server.base_url)
    base = api.load_suite(path)
    _, transcripts = run(path)
    plain_ids = {it.case.name: it.id for it in api.compile_plan(base).items}
    text = path.read_text(encoding="utf-8")
    added = "        add_tools: [mul]\n"
    moved = text.replace(added, "", 1).replace("- user: thanks\n", "- user: thanks\n" + added, 1)
    described = text.replace("Multiply two numbers.", "Multiply two integers.")
    for edited, change in [
        (moved, ['turn 2 add_tools [] -> ["mul"]', 'turn 3 add_tools ["mul"] -> []']),
        (described, ["tool mul description"]),
    ]:
        assert edited != text
        path.write_text(edited, encoding="utf-8")
        head = api.load_suite(path)
        stale = api.stale_transcripts(head, transcripts)
        assert [s.transcript.case for s in stale] == ["held back"]
        assert "tools offered" in stale[0].why[0]
        ids = {it.case.name: it.id for it in api.compile_plan(head).items}
        assert ids["plain"] == plain_ids["plain"] and ids["held back"] != plain_ids["held back"]
        compared = api.diff(base, head, transcripts, allow_stale=True)
        changes = {c.case: c.named for c in compared.changes}
        assert changes.get("plain", ()) == ()
        shown = " | ".join(changes["held back"])
        assert all(c in shown for c in change), shown


BROKEN = """\
suite: broken
models: [m]
tools:
  - {name: add, parameters: {type: object, properties: {a: {type: integer}}}}
  - {name: mul, parameters: {type: object, properties: {a: {type: integer}}}}
cases:
  - name: misspelt
    tools: [add]
    turns:
      - {user: one, expect: {tool_calls: [{add: {a: 1}}]}}
      - {user: two, add_tools: [mull]}
  - name: first turn
    tools: [add]
    turns:
      - {user: one, add_tools: [mul], expect: {tool_calls: [{add: {a: 1}}]}}
  - name: every tool
    turns:
      - {user: one, expect: {tool_calls: [{add: {a: 1}}]}}
      - {user: two, add_tools: [mul]}
  - name: twice
    tools: [add]
    turns:
      - {user: one, expect: {tool_calls: [{add: {a: 1}}]}}
      - {user: two, add_tools: [add]}
  - name: too early
    tools: [add]
    turns:
      - {user: one, expect: {tool_calls: [{mul: {a: 1}}]}}
      - {user: two, add_tools: [mul]}
"""


def test_broken_add_tools_are_placed_problems_with_fixes(tmp_path: Path) -> None:
    out = refused_suite(tmp_path / "broken.yaml", BROKEN)
    assert "broken.yaml:11:33" in out and "'mull' is not a tool of this suite" in out
    assert "did you mean 'mul'?" in out
    assert "broken.yaml:15:32" in out and "the first turn cannot add tools" in out
    assert "broken.yaml:19:32" in out and "the case has no `tools:`" in out
    assert "broken.yaml:24:33" in out and "'add' is offered already" in out
    assert "turn 1 expects a call to 'mul', which is not offered before turn 2" in out


def test_a_tool_named_in_a_suite_without_tools_says_where_to_declare_it(tmp_path: Path) -> None:
    out = refused_suite(
        tmp_path / "none.yaml",
        "suite: x\nmodels: [m]\ncases:\n  - name: c\n    tools: [add]\n"
        "    turns:\n      - {user: hi, expect: {min_calls: 1}}\n"
        "      - {user: more, add_tools: [mul]}\n",
    )
    assert "'add' is not a tool of this suite; add it under `tools:`" in out
    assert "'mul' is not a tool of this suite; add it under `tools:`" in out
