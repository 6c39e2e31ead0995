"""A conversation's request keys are `request_key` of what is sent, however the history grows.

Recordings are looked up by these keys: a key that drifted from `request_key` would make every
shipped recording of a multi-turn suite miss.

A unit test of the plan's request keys (evalspec._plan), which it imports.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalspec._plan import RequestKeys, request_key
from evalspec.api import compile_plan, load_suite
from evalspec.records import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
MODEL = ModelSpec(name="m", model="gpt-x", params={"temperature": 0})
TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {"name": "add", "parameters": {}}}]


def test_keys_follow_a_growing_history() -> None:
    keys = RequestKeys(MODEL, 2)
    history: list[dict[str, Any]] = [{"role": "user", "content": "add 1 and 2 — é"}]
    for turn in range(4):
        history.append({"role": "assistant", "content": None, "tool_calls": [{"id": str(turn)}]})
        history.append({"role": "tool", "tool_call_id": str(turn), "content": "3"})
        assert keys.key(list(history), list(TOOLS)) == request_key(MODEL, history, TOOLS, 2)


def test_a_different_history_or_tools_is_encoded_again() -> None:
    keys = RequestKeys(MODEL, 0)
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    keys.key(first, TOOLS)
    # Equal to the first message as a value but a different object, then a branch.
    other = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "c"}]
    assert keys.key(other, TOOLS) == request_key(MODEL, other, TOOLS, 0)
    shorter = other[:1]
    assert keys.key(shorter, TOOLS) == request_key(MODEL, shorter, TOOLS, 0)
    assert keys.key(shorter, []) == request_key(MODEL, shorter, [], 0)
    assert keys.key(shorter, []) != request_key(MODEL, shorter, TOOLS, 0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_items_first_key_is_the_key_of_its_first_request(provider: str) -> None:
    """The plan's ids and the recordings' lookups agree with `request_key` itself, whatever the
    provider and parameters (the keys' documented form is checked in tests/test_plan_ids.py)."""
    suite = load_suite(ROOT / "suites" / "slack.yaml")
    params = {"temperature": 0.5, "é": [1, None]}
    models = tuple(replace(m, provider=provider, params=params) for m in suite.models)
    plan = compile_plan(replace(suite, models=models), trials=2)
    for it in plan.items:
        assert it.first_key == request_key(it.model, list(it.messages), list(it.tools), it.trial)


def test_request_ids_differ_by_provider_and_keep_openai_ids_stable() -> None:
    messages = [{"role": "user", "content": "hi"}]
    openai = ModelSpec(name="m", model="same-id")
    anthropic = ModelSpec(name="m", model="same-id", provider="anthropic")
    assert request_key(openai, messages, [], 0) != request_key(anthropic, messages, [], 0)
    # the id the code before providers gave it (so existing recordings stay valid)
    assert request_key(openai, messages, [], 0) == "68549bc93ebe7766bbc5"
