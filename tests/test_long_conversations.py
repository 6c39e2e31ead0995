"""A long conversation's files grow with its length, not with its length times its state or
its length squared.

Transcripts: what each user turn changed in the state is written as a JSON Patch (RFC 6902),
checked with an RFC 6902 library of its own (`jsonpatch`) on a real run, a 1,000-record state
over 20 user turns recorded against a server on loopback (tests/test_state_patch.py checks the
patches on random states). A transcript used
to hold the whole state after every turn (21 copies of the records per line here); now it holds
them once, and any turn's state is the case's initial state with the turns' patches applied in
order. Recordings: a request that continues an earlier one of its conversation holds only the
messages after it, and following `after` gives back what the server was sent.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply

from evalspec import api
from evalspec.records import RunOptions


def applied(before: Any, patch: list[dict[str, Any]]) -> Any:
    return jsonpatch.apply_patch(copy.deepcopy(before), patch)


KEY_ENV = "EVALSPEC_TEST_KEY"
RECORDS = 1000
TURNS = 20

SUITE = """\
suite: a long conversation
models: [{{name: m, model: fake, base_url: "{url}", api_key_env: {key}}}]
run: {{retries: 0, timeout: 10, recordings: rec.jsonl}}
state:
  records: [{records}]
  log: []
tools:
  - name: note
    description: Note a record, and set its total.
    parameters:
      type: object
      properties: {{id: {{type: integer}}, total: {{type: integer}}}}
      required: [id, total]
    behavior:
      preconditions:
        - {{path: /records, contains: {{id: "${{args.id}}"}}, error: "no record ${{args.id}}"}}
      effects:
        - append: /log
          value: {{id: "${{args.id}}"}}
        - {{set: /records, where: {{id: "${{args.id}}"}}, at: /total, value: "${{args.total}}"}}
      response: {{$select: /records, $where: {{id: "${{args.id}}"}}, $first: true}}
cases:
  - name: twenty turns
    turns:
{turns}
"""


def _suite(tmp_path: Path, url: str) -> Path:
    records = ", ".join(f"{{id: {i}, total: 0, label: record {i}}}" for i in range(RECORDS))
    turns = "".join(
        f"      - user: note record {k * 37} with total {k}\n"
        f"        expect: {{tool_calls: [{{note: {{id: {k * 37}, total: {k}}}}}]}}\n"
        for k in range(TURNS)
    )
    path = tmp_path / "long.yaml"
    text = SUITE.format(url=url, key=KEY_ENV, records=records, turns=turns)
    path.write_text(text, encoding="utf-8")
    return path


def _respond(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return text_reply("Noted.")
    record, total = (int(n) for n in re.findall(r"\d+", messages[-1]["content"]))
    return tool_call_reply("note", {"id": record, "total": total})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test-patch-000000")
    with FakeOpenAI(_respond) as fake:
        yield fake


def test_a_long_conversation_writes_the_state_once_and_each_message_once(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = api.load_suite(_suite(tmp_path, server.base_url))
    out = tmp_path / "run"
    outcome = api.run_plan(api.compile_plan(suite), RunOptions(run_dir=out))
    (t,) = outcome.transcripts
    assert t.error is None and len(t.user_turns) == TURNS
    line = (out / "transcripts.jsonl").read_text(encoding="utf-8")
    records = json.dumps(suite.state["records"])
    assert len(line) < 2 * len(records)  # once, not once per turn (21 times before)

    state = copy.deepcopy(suite.state)
    for k, turn in enumerate(t.user_turns):
        record = k * 37
        assert turn.changes == [  # in the state's own order of keys
            *([{"op": "replace", "path": f"/records/{record}/total", "value": k}] if k else []),
            {"op": "add", "path": f"/log/{k}", "value": {"id": record}},
        ]
        state = applied(state, turn.changes)
        assert state["records"][record]["total"] == k
    assert state == t.state  # every turn's patch in order: the state the run ended in
    report = api.score(suite, outcome.transcripts)
    assert [r.status for r in report.results] == ["pass"]
    _recordings_give_back_what_was_sent(tmp_path / "rec.jsonl", server)
    replayed = api.run_plan(api.compile_plan(suite), RunOptions(record="offline"))
    assert replayed.counts["replayed"] == len(server.requests)
    assert replayed.transcripts[0].user_turns == t.user_turns


def _recordings_give_back_what_was_sent(path: Path, server: FakeOpenAI) -> None:
    """Each request's messages, rebuilt by following `after`, are the ones the server got (its
    wire form aside: an assistant's `null` text goes out as ""); each message is on one line
    only, so the file grows with the conversation, not with its square."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    requests = {x["key"]: x["request"] for x in lines if "key" in x}
    assert len(requests) == len(server.requests) == 2 * TURNS

    def whole(key: str) -> list[dict[str, Any]]:
        request = requests[key]
        before = whole(request["after"]) if "after" in request else []
        return before + request["messages"]

    def wire(message: dict[str, Any]) -> dict[str, Any]:
        if message["role"] == "assistant" and message.get("content") is None:
            return {**message, "content": ""}
        return message

    sent = sorted(json.dumps(r.body["messages"], sort_keys=True) for r in server.requests)
    rebuilt = [[wire(m) for m in whole(key)] for key in requests]
    assert sorted(json.dumps(m, sort_keys=True) for m in rebuilt) == sent
    assert sum("tools" in r for r in requests.values()) == 1  # the same tools: said once
    stored = sum(len(r["messages"]) for r in requests.values())
    assert stored == max(len(whole(key)) for key in requests)  # each message once
