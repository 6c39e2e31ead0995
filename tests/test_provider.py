"""The OpenAI-compatible provider against a real HTTP server on loopback.

A unit test of evalspec._providers.openai_chat (the provider, its rate limiter and
Retry-After parsing), which it imports: a provider is what every model call goes through, and
its retries, limits and error texts are checked request by request.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (
    FakeOpenAI,
    status_fault,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
)
from rate_checks import assert_held_to
from support import FakeClock
from support import complete as complete_once

from evalspec._providers.base import ProviderError
from evalspec._providers.openai_chat import OpenAIChatProvider, RateLimiter, parse_retry_after
from evalspec.errors import RunError
from evalspec.plugins import ChatRequest, ChatResponse

SECRET = "sk-test-SECRET-123"
KEY_ENV = "EVALSPEC_TEST_API_KEY"
LABEL = "case 'direct message' on model 'gpt-4o-mini'"
TOOL = {
    "type": "function",
    "function": {
        "name": "send_dm_to_user",
        "description": "Send a direct message.",
        "parameters": {"type": "object", "properties": {"user_name": {"type": "string"}}},
    },
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, fake_clock: FakeClock) -> Iterator[FakeOpenAI]:
    """The fake endpoint, its delays and arrival times on the provider's fake clock: waits for
    Retry-After, back-off, time-outs and the rate limit are kept to exactly, and take no time."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeOpenAI(clock=fake_clock.monotonic, pause=fake_clock.pause) as fake:
        yield fake


def request(tools: tuple[dict[str, Any], ...] = (TOOL,), **params: Any) -> ChatRequest:
    return ChatRequest(
        key="abc123",
        model="gpt-4o-mini",
        messages=({"role": "user", "content": "Say hi to johndoe"},),
        tools=tools,
        params=params,
        label=LABEL,
    )


def provider(base_url: str, **options: Any) -> OpenAIChatProvider:
    settings: dict[str, Any] = {
        "api_key_env": KEY_ENV,
        "timeout_s": 2.0,
        "retries": 3,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
    }
    settings.update(options)
    return OpenAIChatProvider(base_url, **settings)


def complete(p: OpenAIChatProvider, req: ChatRequest | None = None) -> ChatResponse:
    return complete_once(p, req or request())


def test_text_answer_is_normalised_with_usage(server: FakeOpenAI) -> None:
    server.enqueue(text_reply("Hello!"))
    server.latency_s = 0.25  # on the fake clock: the attempt took 0.25 s
    response = complete(provider(server.base_url))
    assert response.message == {"role": "assistant", "content": "Hello!"}
    assert response.finish_reason == "stop"
    assert response.usage == {"prompt_tokens": 10, "completion_tokens": 5}
    assert response.latency_s >= 0.25
    assert response.from_recording is False


def test_params_tools_and_headers_reach_the_server(server: FakeOpenAI) -> None:
    p = provider(server.base_url, headers={"X-Team": "evals"})
    complete(
        p,
        request(temperature=0.2, seed=7, tool_choice="required", parallel_tool_calls=False),
    )
    [seen] = server.requests
    assert seen.body["model"] == "gpt-4o-mini"
    assert seen.body["tools"] == [TOOL]
    assert seen.body["temperature"] == 0.2
    assert seen.body["seed"] == 7
    assert seen.body["tool_choice"] == "required"
    assert seen.body["parallel_tool_calls"] is False
    assert seen.headers["x-team"] == "evals"
    assert seen.headers["authorization"] == f"Bearer {SECRET}"


def test_tool_params_are_not_sent_without_tools(server: FakeOpenAI) -> None:
    complete(provider(server.base_url), request(tools=(), tool_choice="auto", max_tokens=50))
    body = server.requests[0].body
    assert "tools" not in body
    assert "tool_choice" not in body
    assert body["max_tokens"] == 50


def test_malformed_and_unknown_tool_calls_come_back_raw(server: FakeOpenAI) -> None:
    server.enqueue(tool_calls_reply(("send_dm_to_user", '{"user_name": "jo'), ("no_such_tool", {})))
    response = complete(provider(server.base_url))
    calls = response.message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["send_dm_to_user", "no_such_tool"]
    assert calls[0]["function"]["arguments"] == '{"user_name": "jo'
    assert calls[1]["function"]["arguments"] == "{}"
    assert all(c["type"] == "function" and c["id"] for c in calls)
    assert response.finish_reason == "tool_calls"


def test_429_waits_at_least_retry_after(server: FakeOpenAI) -> None:
    server.fail_next(429, retry_after="0.3")
    server.enqueue(tool_call_reply("send_dm_to_user", {"user_name": "johndoe"}))
    response = complete(provider(server.base_url))
    first, second = server.requests
    assert second.at - first.at >= 0.3
    assert response.message["tool_calls"][0]["function"]["name"] == "send_dm_to_user"


def test_503_retry_after_ms_is_honoured(server: FakeOpenAI) -> None:
    server.fail_next(503, retry_after_ms=300)
    complete(provider(server.base_url))
    first, second = server.requests
    assert second.at - first.at >= 0.3


def test_500_then_success(server: FakeOpenAI) -> None:
    server.fail_next(500)
    assert complete(provider(server.base_url)).message["content"] == "ok"
    assert len(server.requests) == 2


def test_timeout_then_success(server: FakeOpenAI) -> None:
    server.delay_next(1.0)
    response = complete(provider(server.base_url, timeout_s=0.3))
    assert response.message["content"] == "ok"
    assert len(server.requests) == 2


def test_dropped_connection_then_success(server: FakeOpenAI) -> None:
    server.drop_next()
    assert complete(provider(server.base_url)).message["content"] == "ok"
    assert len(server.requests) == 2


def test_exhausted_retries_are_one_items_error(server: FakeOpenAI) -> None:
    server.fail_next(503, times=10, message="overloaded")
    with pytest.raises(ProviderError) as info:
        complete(provider(server.base_url, retries=2))
    error = info.value
    assert len(server.requests) == 3
    assert error.attempts == 3
    assert error.status == 503
    assert LABEL in str(error)
    assert "3 attempts" in str(error)
    assert "HTTP 503" in str(error) and "overloaded" in str(error)


def test_exhausted_timeouts_say_so(server: FakeOpenAI) -> None:
    server.delay_next(1.0, times=3)
    with pytest.raises(ProviderError, match=r"gave up after 2 attempts.*0\.2 s timeout"):
        complete(provider(server.base_url, retries=1, timeout_s=0.2))


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_are_not_retried(server: FakeOpenAI, status: int) -> None:
    server.fail_next(status, message="tools[0] is not a valid tool")
    with pytest.raises(ProviderError, match="tools\\[0\\] is not a valid tool") as info:
        complete(provider(server.base_url))
    assert info.value.status == status
    assert len(server.requests) == 1


def test_401_stops_the_run_and_names_the_variable(server: FakeOpenAI) -> None:
    server.fail_next(401, message=f"Incorrect API key provided: {SECRET}")
    with pytest.raises(RunError, match=KEY_ENV) as info:
        complete(provider(server.base_url))
    assert SECRET not in str(info.value)
    assert len(server.requests) == 1


def test_key_never_appears_in_errors_or_repr(server: FakeOpenAI) -> None:
    server.fail_next(400, message=f"bad request from key {SECRET} (sk-test-SEC***123)")
    p = provider(server.base_url)
    assert SECRET not in repr(p)
    with pytest.raises(ProviderError) as info:
        complete(p)
    text = f"{info.value} {info.value!r} {info.value.args}"
    assert SECRET not in text
    assert "sk-test-SEC" not in text


def test_missing_key_variable_is_a_run_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_UNSET_KEY", raising=False)
    with pytest.raises(RunError, match="EVALSPEC_UNSET_KEY"):
        OpenAIChatProvider("https://api.example.com/v1", "EVALSPEC_UNSET_KEY")


def test_loopback_endpoint_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_UNSET_KEY", raising=False)
    with FakeOpenAI() as fake:
        response = complete(provider(fake.base_url, api_key_env="EVALSPEC_UNSET_KEY"))
        assert response.message["content"] == "ok"
        assert fake.requests[0].headers["authorization"].startswith("Bearer ")


def test_unreachable_endpoint_is_a_run_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RunError, match=f"cannot reach the model endpoint .*:{port}"):
        complete(provider(f"http://127.0.0.1:{port}/v1", retries=1))


def test_reply_that_is_not_a_completion_is_an_items_error(server: FakeOpenAI) -> None:
    server.enqueue({"status": "queued"})
    with pytest.raises(ProviderError, match="not a chat completion"):
        complete(provider(server.base_url))


def test_rule_faults_hit_only_matching_requests(server: FakeOpenAI) -> None:
    server.when(lambda body: body.get("seed") == 1, status_fault(400, message="seed 1 rejected"))

    async def go() -> list[Any]:
        p = provider(server.base_url)
        try:
            return await asyncio.gather(
                p.complete(request(seed=1)), p.complete(request(seed=2)), return_exceptions=True
            )
        finally:
            await p.aclose()

    rejected, answered = asyncio.run(go())
    assert isinstance(rejected, ProviderError) and "seed 1 rejected" in str(rejected)
    assert isinstance(answered, ChatResponse)


def test_requests_per_minute_spaces_requests(server: FakeOpenAI, fake_clock: FakeClock) -> None:
    async def go() -> None:
        p = provider(server.base_url, requests_per_minute=600)  # one per 0.1 s
        try:
            await asyncio.gather(*(p.complete(request()) for _ in range(4)))
        finally:
            await p.aclose()

    began = fake_clock.now
    asyncio.run(go())
    assert len(server.requests) == 4
    assert_held_to(600, began, [r.at for r in server.requests])


class _FakeTime:
    """A clock and a sleep for RateLimiter, driven by hand: a loop that wakes late is a jump
    of the clock past the earliest wake-up."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self.sleepers, (self.now + seconds, id(future), future))
        await future

    async def run(self, tasks: list[asyncio.Task[Any]], stalls: dict[int, float]) -> None:
        """Wake sleepers in time order; at step i the loop wakes `stalls[i]` s late."""
        step = 0
        while not all(t.done() for t in tasks):
            for _ in range(20):
                await asyncio.sleep(0)  # let every runnable task reach its next sleep
            if not self.sleepers:
                continue
            self.now = max(self.now, self.sleepers[0][0]) + stalls.get(step, 0.0)
            step += 1
            while self.sleepers and self.sleepers[0][0] <= self.now:
                heapq.heappop(self.sleepers)[2].set_result(None)


@pytest.mark.parametrize("stalls", [{}, {0: 0.35}, {1: 2.0, 3: 0.05}, {0: 65.0}])
def test_rate_limit_never_bursts_after_a_stall(stalls: dict[int, float]) -> None:
    """What the limit promises: starts at least 60/rpm s apart however late the loop wakes,
    so no rolling minute holds more than rpm starts (the slots of a limiter that only
    reserves them would all be due after a stall, and go at once)."""
    rpm, interval = 300, 0.2
    fake = _FakeTime()
    limiter = RateLimiter(rpm, clock=fake.clock, sleep=fake.sleep)
    starts: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        starts.append(fake.now)

    async def go() -> None:
        tasks = [asyncio.ensure_future(one()) for _ in range(8)]
        await fake.run(tasks, stalls)

    asyncio.run(go())
    assert len(starts) == 8
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= interval - 1e-9 for gap in gaps), (stalls, starts)
    for start in starts:
        assert sum(start <= s < start + 60.0 for s in starts) <= rpm


def test_many_concurrent_requests_all_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeOpenAI(latency_s=0.02) as fake:

        async def go() -> list[ChatResponse]:
            p = provider(fake.base_url, concurrency=32)
            try:
                return await asyncio.gather(*(p.complete(request()) for _ in range(96)))
            finally:
                await p.aclose()

        responses = asyncio.run(go())
    assert len(responses) == 96
    assert all(r.message["content"] == "ok" for r in responses)
    assert len(fake.requests) == 96


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_a_retry_is_logged_with_its_reason_and_wait(
    server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    server.fail_next(503, retry_after="0.05")
    server.enqueue(tool_call_reply("send_dm_to_user", {"user_name": "johndoe"}))
    with caplog.at_level("INFO", logger="evalspec"):
        complete(provider(server.base_url))
    (record,) = [r for r in caplog.records if r.name == "evalspec._providers.openai_chat"]
    assert "HTTP 503" in record.getMessage()
    assert "retry 1 of 3 in" in record.getMessage()
    assert SECRET not in record.getMessage()


def test_header_values_from_the_environment_are_sent_and_scrubbed(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalspec._util import redaction

    monkeypatch.setenv("EVALSPEC_TEST_HDR", "hdr-SECRET-987654")
    p = provider(server.base_url, headers={"X-Token": "Token ${EVALSPEC_TEST_HDR}"})
    server.enqueue(text_reply("you sent hdr-SECRET-987654"))
    answer = complete(p)
    assert server.requests[0].headers["x-token"] == "Token hdr-SECRET-987654"
    assert answer.message["content"] == "you sent ***"
    assert redaction.scrub("x hdr-SECRET-987654") == "x ***"


def test_a_header_naming_an_unset_variable_is_a_run_error(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALSPEC_TEST_UNSET", raising=False)
    with pytest.raises(RunError, match="header X-Token takes environment variable"):
        provider(server.base_url, headers={"X-Token": "${EVALSPEC_TEST_UNSET}"})


_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "send_dm_to_user", "arguments": "{}"},
}


def test_an_answer_that_called_tools_goes_back_with_empty_text_not_null(
    server: FakeOpenAI,
) -> None:
    """llama.cpp's Python server refuses `content: null` (HTTP 500), its own answer; OpenAI
    takes `""` as well. The request's messages themselves, which its key is made of, keep null."""
    called = {"role": "assistant", "content": None, "tool_calls": [_CALL]}
    bare = {"role": "assistant", "tool_calls": [_CALL]}
    said = {"role": "assistant", "content": "Sending it.", "tool_calls": [_CALL]}
    messages = (
        {"role": "user", "content": "Say hi to johndoe"},
        called,
        {"role": "tool", "tool_call_id": "call_1", "content": "sent"},
        bare,
        said,
        {"role": "assistant", "content": None},
    )
    sent = ChatRequest(
        key="k", model="gpt-4o-mini", messages=messages, tools=(TOOL,), params={}, label=LABEL
    )
    complete(provider(server.base_url), sent)
    wire = server.requests[0].body["messages"]
    assert [m.get("content", "(none)") for m in wire] == [
        "Say hi to johndoe",
        "",
        "sent",
        "",
        "Sending it.",
        None,  # no tool call: as it was
    ]
    assert called["content"] is None and "content" not in bare  # the history is untouched


def test_many_clients_read_the_certificate_store_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every provider (a run makes one per model, judge and simulated user) had httpx read the
    whole certificate store for its client, 25-55 ms of CPU each; now once a process, and again
    when SSL_CERT_FILE names other certificates."""
    import httpcore2
    import httpx2

    from evalspec._providers import http_policy

    reads: list[str | None] = []
    read = httpcore2.default_ssl_context

    def counted(**options: Any) -> Any:
        reads.append(os.environ.get("SSL_CERT_FILE"))
        return read(**options)

    monkeypatch.setattr(httpcore2, "default_ssl_context", counted)
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    for url in ("https://api.example.com/v1", "https://other.example.com/v1") * 3:
        provider(url)
    assert len(reads) <= 1  # none when an earlier test of this process read it already

    bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    if not bundle.is_file():
        pytest.skip(f"no certificate bundle at {bundle} to take one certificate from")
    first = bundle.read_text(encoding="ascii").split("-----END CERTIFICATE-----")[0]
    one = tmp_path / "one.pem"
    one.write_text(first + "-----END CERTIFICATE-----\n", encoding="ascii")
    monkeypatch.setenv("SSL_CERT_FILE", str(one))
    context = http_policy.client_options("https://api.example.com/v1", httpx2)["verify"]
    assert reads[-1] == str(one)
    assert context.cert_store_stats()["x509_ca"] == 1
