"""A suite's tools called by hand (`evalspec.api.tool_session`): each call answers as it would
in an offline run, the state moves as the calls change it, and what a session cannot answer
without sending a request is a usage error naming the parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.api import load_suite, tool_session
from evalspec.errors import UsageError
from evalspec.records import Suite

SUITE = """\
suite: desk
models: [m]
state: {tickets: [{id: 1, status: open}]}
tools:
  - name: close
    parameters:
      type: object
      properties: {id: {type: integer}}
      required: [id]
    behavior:
      preconditions:
        - path: /tickets
          contains: {id: "${args.id}", status: open}
          error: no open ticket ${args.id}
      effects:
        - set: /tickets
          where: {id: "${args.id}"}
          at: /status
          value: closed
      response: {closed: "${args.id}"}
  - name: weather
    parameters: {type: object, properties: {city: {type: string}}}
    responses:
      - when: {city: Paris}
        output: {temp: 21}
  - name: guess
    parameters: {type: object}
    simulate: {model: gpt-4o-mini}
cases:
  - name: default
    user: Close ticket 1.
    expect: {tool_calls: [{close: {id: 1}}]}
  - name: two open
    state: {tickets: [{id: 1, status: open}, {id: 2, status: open}]}
    user: Close ticket 2.
    expect: {tool_calls: [{close: {id: 2}}]}
"""


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    path = tmp_path / "desk.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return load_suite(path)


def test_calls_change_the_state_and_a_new_session_starts_afresh(suite: Suite) -> None:
    session = tool_session(suite)
    closed = session.call("close", {"id": 1})
    assert (closed.output, closed.error, closed.source) == ({"closed": 1}, None, "state")
    assert session.state == {"tickets": [{"id": 1, "status": "closed"}]}
    again = session.call("close", {"id": 1})
    assert again.error == "no open ticket 1" and again.output is None
    assert tool_session(suite).state == {"tickets": [{"id": 1, "status": "open"}]}


def test_a_case_with_its_own_state_starts_from_it(suite: Suite) -> None:
    session = tool_session(suite, "two open")
    assert session.call("close", {"id": 2}).error is None
    assert session.state["tickets"][1] == {"id": 2, "status": "closed"}


def test_rules_and_refusals_answer_as_in_a_run(suite: Suite) -> None:
    session = tool_session(suite)
    assert session.call("weather", {"city": "Paris"}).output == {"temp": 21}
    assert session.call("weather", {"city": "Oslo"}).source == "error:no_response"
    schema = session.call("close", {"id": "one"})
    assert schema.source == "error:schema" and "'one'" in (schema.error or "")
    unknown = session.call("open", {})
    assert unknown.source == "error:unknown_tool" and "close" in (unknown.error or "")
    assert session.call("close", None, "{not json").source == "error:schema"
    assert session.state == {"tickets": [{"id": 1, "status": "open"}]}  # refusals change nothing


def test_what_only_a_request_could_answer_is_a_usage_error(suite: Suite) -> None:
    with pytest.raises(UsageError, match="name='guess': that tool is answered by a request") as e:
        tool_session(suite).call("guess", {})
    assert e.value.params == ("name",)
    with pytest.raises(UsageError, match=r"case='nope': the suite has no such case") as e:
        tool_session(suite, "nope")
    assert e.value.params == ("case",)
