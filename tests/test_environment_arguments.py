"""`environment: {validate_arguments: false}`: a Python environment gets calls whose arguments
break the tool's schema (BFCL runs every call), never an unknown tool or non-object arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import plugins
from evalspec.api import load_suite, tool_session
from evalspec.plugins import ToolOutcome


class Echo:
    def __init__(self, state: Any, params: dict[str, Any]):
        self.seen: list[Any] = []

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.seen.append(arguments)
        return ToolOutcome({"got": arguments})

    def snapshot(self) -> Any:
        return {"seen": self.seen}


@pytest.fixture
def echo_env():
    plugins.register("environment", "echo_args")(Echo)
    yield
    plugins.unregister("environment", "echo_args")


SUITE = """\
suite: echo
models: [m]
environment: {{kind: echo_args{extra}}}
tools:
  - name: close
    parameters:
      type: object
      properties: {{ticket_id: {{type: integer}}}}
      required: [ticket_id]
cases:
  - {{name: c, user: Close ticket one., expect: {{no_tool_calls: true}}}}
"""


def _conversation(tmp_path: Path, extra: str) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(extra=extra), encoding="utf-8")
    suite = load_suite(path)
    return tool_session(suite)


def test_arguments_breaking_the_schema_are_refused_by_default(tmp_path, echo_env):
    conversation = _conversation(tmp_path, "")
    refused = conversation.call("close", {"ticket_id": "ticket_001"})
    assert refused.error and refused.source == "error:schema"
    assert conversation.state == {"seen": []}


def test_validate_arguments_false_hands_them_to_the_environment(tmp_path, echo_env):
    conversation = _conversation(tmp_path, ", validate_arguments: false")
    done = conversation.call("close", {"ticket_id": "ticket_001"})
    assert done.error is None
    assert done.output == {"got": {"ticket_id": "ticket_001"}}
    unknown = conversation.call("open", {})
    assert unknown.source == "error:unknown_tool"
    broken = conversation.call("close", None, "{not json")
    assert broken.source == "error:schema"
    assert conversation.state == {"seen": [{"ticket_id": "ticket_001"}]}


def test_validate_arguments_must_be_a_boolean(tmp_path, echo_env):
    from evalspec.errors import SpecError

    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(extra=", validate_arguments: sometimes"), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_suite(path)
    assert "s.yaml:3:" in str(err.value)  # placed
    assert "validate_arguments: expected true or false" in str(err.value)
