"""`required: true` makes a critic a gate: the case fails when it does not match, whatever the
score (which still follows the similarity, as before)."""

from __future__ import annotations

import pytest
from support import evalspec_cli, transcript

from evalspec.api import load_suite, score

SUITE = """\
suite: s
models: [m]
rubric:
  fail_threshold: 0.0
  warn_threshold: 0.6
  fail_on_tool_selection: false
  fail_on_tool_call_quantity: false
tools:
  - name: post
    parameters:
      type: object
      properties: {{channel: {{type: string}}, text: {{type: string}}}}
cases:
  - name: c
    user: hi
    expect:
      tool_calls: [{{post: {{channel: general, text: Lunch at noon}}}}]
    critics:
      channel: binary
      text: {critic}
"""


class Fixed:
    """An embedder whose every pair of texts has the same cosine similarity."""

    def __init__(self, value: float):
        self.value = value

    def prefetch(self, texts):
        pass

    def similarity(self, a, b):
        return self.value


def scored(write_suite, critic: str, *calls):
    suite = load_suite(write_suite(SUITE.format(critic=critic)))
    return score(suite, [transcript("c", *calls)], embedder=Fixed(0.91)).cases[0]


CALL = ("post", {"channel": "general", "text": "Lunch is at noon"})


def test_threshold_alone_moves_the_match_not_the_verdict(write_suite):
    case = scored(write_suite, "{similarity: 0.99}", CALL)
    assert case.status == "pass"


def test_required_critic_that_does_not_match_fails_the_case(write_suite):
    case = scored(write_suite, "{similarity: 0.99, required: true}", CALL)
    assert case.status == "fail"
    assert case.score == pytest.approx(scored(write_suite, "{similarity: 0.99}", CALL).score)
    assert "required critic text (call 1) did not match" in case.reason


def test_required_critic_that_matches_passes(write_suite):
    assert scored(write_suite, "{similarity: 0.8, required: true}", CALL).status == "pass"


def test_required_critic_of_a_missing_call_fails(write_suite):
    case = scored(write_suite, "{similarity: 0.8, required: true}")
    assert case.status == "fail" and "required critic text" in case.reason


def test_required_must_be_a_boolean(write_suite):
    path = write_suite(SUITE.format(critic="{similarity: 0.8, required: maybe}"))
    result = evalspec_cli(["validate", str(path)])
    assert result.exit_code == 2
    assert "required" in result.output
    assert f"{path}:" in result.output
