"""The Anthropic Messages provider, through the real ``anthropic`` client, against a local fake.

A unit test of the Anthropic provider (evalspec._providers.anthropic_messages, the body
it builds in anthropic_format, and the wire names of tool_names), which it imports; a suite of
Anthropic models end to end is tests/test_anthropic_suite.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, MessagesReply, text_reply, tool_use_reply
from support import FakeClock
from support import complete as complete_with

from evalspec._providers.anthropic_messages import AnthropicMessagesProvider
from evalspec._providers.base import ProviderError
from evalspec._providers.tool_names import WireToolNames
from evalspec.errors import RunError
from evalspec.plugins import ChatRequest, ChatResponse

SECRET = "sk-ant-test-SECRET-456"
KEY_ENV = "EVALSPEC_TEST_ANTHROPIC_KEY"
TOOL = {
    "type": "function",
    "function": {
        "name": "Math.Add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        },
    },
}
HISTORY = (
    {"role": "system", "content": "You are a calculator."},
    {"role": "user", "content": "Add 1 and 2, and 3 and 4."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "toolu_a",
                "type": "function",
                "function": {"name": "Math.Add", "arguments": '{"a": 1, "b": 2}'},
            },
            {
                "id": "toolu_b",
                "type": "function",
                "function": {"name": "Math.Add", "arguments": '{"a": 3, "b": 4}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "toolu_a", "content": "3"},
    {"role": "tool", "tool_call_id": "toolu_b", "content": '{"error": "overflow"}'},
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, fake_clock: FakeClock) -> Iterator[FakeAnthropic]:
    """The fake endpoint on the provider's fake clock: Retry-After is kept to, without waiting."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeAnthropic(clock=fake_clock.monotonic, pause=fake_clock.pause) as fake:
        yield fake


def request(messages: tuple[dict[str, Any], ...] = HISTORY[:2], **params: Any) -> ChatRequest:
    return ChatRequest(
        key="k1",
        model="claude-test",
        messages=messages,
        tools=(TOOL,),
        params=params,
        label="case 'add' on model 'claude'",
    )


def complete(p: Any, req: ChatRequest | None = None) -> ChatResponse:
    return complete_with(p, req or request())


def provider(base_url: str, **options: Any) -> AnthropicMessagesProvider:
    settings: dict[str, Any] = {
        "api_key_env": KEY_ENV,
        "timeout_s": 2.0,
        "retries": 3,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
    }
    settings.update(options)
    return AnthropicMessagesProvider(base_url, **settings)


def test_request_is_in_anthropic_format(server: FakeAnthropic) -> None:
    complete(
        WireToolNames(provider(server.base_url)),
        request(
            HISTORY, temperature=0.3, seed=7, tool_choice="required", parallel_tool_calls=False
        ),
    )
    [seen] = server.requests
    body = seen.body
    assert seen.path == "/v1/messages"
    sent_key = seen.headers.get("x-api-key") or seen.headers["authorization"].removeprefix(
        "Bearer "
    )
    assert sent_key == SECRET
    assert body["model"] == "claude-test"
    assert body["system"] == "You are a calculator."
    assert body["max_tokens"] == 4096
    assert body["temperature"] == 0.3
    assert "seed" not in body
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["tools"] == [
        {
            "name": "Math_Add",
            "description": "Add two numbers.",
            "input_schema": TOOL["function"]["parameters"],
        }
    ]
    user, assistant, results = body["messages"]
    assert user == {
        "role": "user",
        "content": [{"type": "text", "text": "Add 1 and 2, and 3 and 4."}],
    }
    assert assistant["role"] == "assistant"
    assert [(b["type"], b["name"], b["input"]) for b in assistant["content"]] == [
        ("tool_use", "Math_Add", {"a": 1, "b": 2}),
        ("tool_use", "Math_Add", {"a": 3, "b": 4}),
    ]
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "3"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_b",
                "content": '{"error": "overflow"}',
                "is_error": True,
            },
        ],
    }


def test_several_tool_uses_come_back_neutral_with_suite_names(server: FakeAnthropic) -> None:
    server.enqueue(
        tool_use_reply(("Math_Add", {"a": 1, "b": 2}), ("Math_Add", {"a": 3, "b": 4}), text="Sure.")
    )
    response = complete(WireToolNames(provider(server.base_url)))
    message = response.message
    assert message["content"] == "Sure."
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["Math.Add", "Math.Add"]
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [
        '{"a": 1, "b": 2}',
        '{"a": 3, "b": 4}',
    ]
    assert all(c["id"].startswith("toolu_") for c in message["tool_calls"])
    assert response.finish_reason == "tool_calls"
    assert response.usage == {"prompt_tokens": 12, "completion_tokens": 7}


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reason_maps_to_finish_reason(server: FakeAnthropic, stop: str, finish: str) -> None:
    server.enqueue(text_reply("4", stop_reason=stop))
    response = complete(provider(server.base_url))
    assert response.message == {"role": "assistant", "content": "4"}
    assert response.finish_reason == finish


@pytest.mark.parametrize("status", [429, 529, 500])
def test_retryable_statuses_wait_for_retry_after(server: FakeAnthropic, status: int) -> None:
    server.fail_next(status, retry_after="0.3")
    server.enqueue(text_reply("done"))
    response = complete(provider(server.base_url))
    first, second = server.requests
    assert second.at - first.at >= 0.3
    assert response.message["content"] == "done"


def test_overloaded_until_retries_run_out_fails_the_item(server: FakeAnthropic) -> None:
    server.fail_next(529, times=3, message="Overloaded")
    with pytest.raises(ProviderError) as caught:
        complete(provider(server.base_url, retries=2))
    assert caught.value.attempts == 3
    assert caught.value.status == 529
    assert "Overloaded" in caught.value.message


def test_401_names_the_key_variable_and_hides_the_key(server: FakeAnthropic) -> None:
    server.fail_next(401, message=f"invalid x-api-key {SECRET}")
    with pytest.raises(RunError) as caught:
        complete(provider(server.base_url))
    text = str(caught.value)
    assert KEY_ENV in text
    assert SECRET not in text


def test_400_is_not_retried(server: FakeAnthropic) -> None:
    server.fail_next(400, message="messages: roles must alternate")
    with pytest.raises(ProviderError, match="roles must alternate"):
        complete(provider(server.base_url))
    assert len(server.requests) == 1


def test_malformed_tool_use_blocks_reach_the_simulator_raw(server: FakeAnthropic) -> None:
    server.enqueue(
        MessagesReply(
            [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "tool_use", "id": "toolu_x", "name": "Math_Add", "input": "a=1"},
                {"type": "tool_use", "id": "toolu_y", "input": {"a": 1}},
            ],
            "tool_use",
        )
    )
    message = complete(WireToolNames(provider(server.base_url))).message
    first, second = message["tool_calls"]
    assert first["function"] == {"name": "Math.Add", "arguments": "a=1"}
    assert second["function"] == {"name": "", "arguments": '{"a": 1}'}
    assert message["content"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"type": "message", "content": "just text", "stop_reason": "end_turn"},
        {"type": "message", "content": ["not a block"], "stop_reason": "end_turn"},
        {"type": "message", "content": [], "usage": {"input_tokens": "many"}},
    ],
)
def test_reply_that_is_not_a_message_fails_the_item(server: FakeAnthropic, body: Any) -> None:
    server.enqueue(body)
    with pytest.raises(ProviderError, match="not a Messages API message"):
        complete(provider(server.base_url))


def test_unset_key_for_a_remote_endpoint_is_a_run_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RunError, match=f"{KEY_ENV} is not set.*api.anthropic.com"):
        provider(None)


def test_conversation_shapes_anthropic_requires() -> None:
    from evalspec._providers.anthropic_format import to_body

    body = to_body(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "user", "content": "second"},  # two user turns in a row are merged
            {"role": "assistant", "content": ""},  # an empty answer sends no empty block
            {"role": "developer", "content": "Use metric units."},
            {"role": "user", "content": "third"},
        ],
        [],
        {"tool_choice": "required", "seed": 3, "extra_body": {"top_k": 5}},
    )
    assert body["system"] == "Be brief.\n\nUse metric units."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"},
                {"type": "text", "text": "third"},
            ],
        }
    ]
    assert "tool_choice" not in body and "tools" not in body  # no tools offered
    assert body["top_k"] == 5 and "seed" not in body


def test_a_named_tool_choice_becomes_anthropic_tool_choice() -> None:
    from evalspec._providers.anthropic_format import to_body

    tools = [TOOL]
    named = {"type": "function", "function": {"name": "Math.Add"}}
    assert to_body([], tools, {"tool_choice": named})["tool_choice"] == {
        "type": "tool",
        "name": "Math.Add",
    }
    assert to_body([], tools, {"tool_choice": "none", "parallel_tool_calls": False})[
        "tool_choice"
    ] == {"type": "none"}
