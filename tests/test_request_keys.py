"""A conversation's request keys are `request_key` of what is sent, however the history grows.

Recordings are looked up by these keys: a key that drifted from `request_key` would make every
shipped recording of a multi-turn suite miss.

A unit test of the plan's request keys (evalspec._plan), which it imports.
"""

from __future__ import annotations

from typing import Any

from evalspec._plan import RequestKeys, request_key
from evalspec.records import ModelSpec

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
