"""What every case of a suite has alike is held once, not once per case: a 50,000-case replay
kept 50,000 equal system messages, and as many equal request dicts in its plan."""

from __future__ import annotations

from pathlib import Path

from evalspec import api


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suite: shared\n"
        "system: You are a helpful assistant.\n"
        "models: [{name: m, model: x}]\n"
        "tools:\n"
        "  - {name: t, description: d, parameters: {type: object, properties: {}}}\n"
        "cases:\n"
        "  - {name: a, user: one, expect: {tool_calls: [{t: {}}]}}\n"
        "  - {name: b, user: two, expect: {tool_calls: [{t: {}}]}}\n"
        "  - {name: own, system: Be brief., user: three, expect: {tool_calls: [{t: {}}]}}\n"
        "  - {name: c, user: four, expect: {tool_calls: [{t: {}}]}}\n",
        encoding="utf-8",
    )
    return path


def test_cases_share_the_suites_system_message_and_its_request(tmp_path: Path) -> None:
    suite = api.load_suite(_suite(tmp_path))
    a, b, own, c = (case.messages[0] for case in suite.cases)
    assert a is b and a.content == "You are a helpful assistant."
    assert own.content == "Be brief." and c.content == a.content
    plan = api.compile_plan(suite)
    sent = [item.messages[0] for item in plan.items]
    assert sent[0] is sent[1]
    assert sent[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert sent[2] == {"role": "system", "content": "Be brief."}
    assert sent[3] == sent[0]
