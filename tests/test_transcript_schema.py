"""schemas/transcript.schema.json describes the transcripts a real run writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, status_fault, text_reply, tool_call_reply, tool_calls_reply
from jsonschema import Draft202012Validator
from support import KEY_ENV, run_api, tool_messages, user_text, write_e2e_suite

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "transcript.schema.json"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def varied(body: dict[str, Any]) -> Any:
    """Every shape a transcript can take: parallel calls, malformed JSON, unknown tool, error."""
    user = user_text(body)
    if "Add" in user:
        return status_fault(400, message="bad request")
    if tool_messages(body):
        return text_reply("done")
    if "Oslo" in user:
        return tool_calls_reply(("get_weather", {"city": "Paris"}), ("teleport", {}))
    return tool_call_reply("get_weather", '{"city": ')


@pytest.fixture
def transcripts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[dict]]:
    monkeypatch.setenv(KEY_ENV, "sk-test-schema-0000")
    with FakeOpenAI(varied) as server:
        run_api(write_e2e_suite(tmp_path, server.base_url), tmp_path / "run", models=["m1"])
    path = tmp_path / "run" / "transcripts.jsonl"
    yield [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_real_transcripts_validate(
    validator: Draft202012Validator, transcripts: list[dict]
) -> None:
    assert len(transcripts) == 3
    assert any(t["error"] for t in transcripts)
    assert any(c["arguments"] is None for t in transcripts for c in t["tool_calls"])
    assert any(len(t["tool_calls"]) == 2 for t in transcripts)
    for t in transcripts:
        errors = [e.message for e in validator.iter_errors(t)]
        assert errors == [], (t["case"], errors)


def test_schema_rejects_a_transcript_without_item_id(
    validator: Draft202012Validator, transcripts: list[dict]
) -> None:
    broken = dict(transcripts[0])
    del broken["item_id"]
    assert [e.message for e in validator.iter_errors(broken)] == [
        "'item_id' is a required property"
    ]


def test_every_field_is_described() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    for where in (schema, schema["$defs"]["ToolCall"]):
        for name, prop in where["properties"].items():
            assert prop.get("description"), name
