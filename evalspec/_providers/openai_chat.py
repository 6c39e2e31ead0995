"""A provider for any OpenAI-compatible chat-completions endpoint.

The ``openai`` client does the HTTP; its own retries are switched off so that this module decides
what is retried, how long to wait and which failures end the run (see ``providers/base.py`` for
the error policy). ``openai`` is imported lazily: loading a suite must not pay for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import tenacity

from evalspec._language.defaults import DEFAULT_API_KEY_ENV, DEFAULT_RETRIES, DEFAULT_TIMEOUT_S
from evalspec._providers.base import (
    ChatRequest,
    ChatResponse,
    Limiter,
    ProviderError,
    token_count,
)
from evalspec._providers.http_policy import redirect_message, refuse_clear_text, sdk_http_client
from evalspec._suite.endpoints import ENV_REF, is_loopback
from evalspec._util import redaction
from evalspec._util.errors import RunError
from evalspec._util.reading import loads_untrusted, without_lone_surrogates

_log = logging.getLogger(__name__)

DUMMY_API_KEY = "not-needed-for-local-endpoints"
"""Sent to loopback endpoints when the key variable is unset: local servers rarely check it."""

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
"""Transient by nature; every other 4xx means the request itself is wrong."""

_TOOL_ONLY_PARAMS = ("tool_choice", "parallel_tool_calls")
"""Endpoints reject these when a request carries no tools."""

_DROPPED_PARAMS = ("stream",)
"""Streaming is not supported: the provider reads one JSON body per request."""

_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{3,}|Bearer\s+\S+|Basic\s+[A-Za-z0-9+/=]{6,})")

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The most of one reply evalspec reads: a larger answer is that item's error, not stored, so a
runaway server cannot take the run's memory or fill the recordings."""

RETRY_AFTER_CAP_S = 60.0
"""The longest a server may make one retry wait (Retry-After), however long it asks for."""

# The clock the retry loop and rate limiter read, looked up at each call so tests can put a fake
# clock in their place: back-off, Retry-After, time-outs and rate limits then take no real time.
monotonic: Callable[[], float] = time.monotonic
sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
attempt_deadline: Callable[[float], contextlib.AbstractAsyncContextManager[Any]] = asyncio.timeout


def header_secrets(headers: dict[str, str] | None) -> list[str]:
    """Values of the environment variables that header values name as ``${VAR}``."""
    names = [name for value in (headers or {}).values() for name in ENV_REF.findall(value)]
    return [os.environ[name] for name in names if os.environ.get(name)]


def expand_header_values(headers: dict[str, str] | None) -> dict[str, str]:
    """Header values with ``${VAR}`` replaced from the environment; those values are secrets."""
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        for var in ENV_REF.findall(value):
            if not os.environ.get(var):
                raise RunError(
                    f"header {name} takes environment variable {var}, which is not set; "
                    "export it, or replay recorded answers with record=offline",
                    params=["record"],
                )
        out[name] = ENV_REF.sub(lambda m: os.environ[m.group(1)], value)
    redaction.register(*header_secrets(headers))
    return out


class _ReplyTooLarge(Exception):
    """The reply went past MAX_REPLY_BYTES."""


class _BodyBroken(Exception):
    """The connection broke while the reply's body was being read (cut short, reset)."""


def display_url(base_url: str | None, default: str = "https://api.openai.com/v1") -> str:
    """The endpoint for messages, without any user:password part."""
    if not base_url:
        return default
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def resolve_api_key(
    api_key_env: str, base_url: str | None, default_url: str = "https://api.openai.com/v1"
) -> str:
    """The key from the named variable; a dummy for loopback endpoints; else a RunError."""
    value = os.environ.get(api_key_env, "").strip()
    if value:
        return value
    if is_loopback(base_url):
        return DUMMY_API_KEY
    raise RunError(
        f"environment variable {api_key_env} is not set; it must hold the API key for "
        f"{display_url(base_url, default_url)}. Export it, or replay recorded answers with "
        "record=offline",
        params=["record"],
    )


def parse_retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, then Retry-After), if any."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    return rng.uniform(0.0, min(cap_s, base_s * (2**attempt)))


class RateLimiter:
    """At most one request start per 60/rpm seconds, measured when each start is let go.

    What a provider counts is requests in a rolling minute. Starts are let go one at a time,
    in about the order asked, each no sooner than 60/rpm seconds (by the clock) after the previous
    one was let go: a loop that wakes late (a loaded machine) starts the waiting requests one
    interval apart, never in a burst, so no rolling minute ever holds more than `rpm` starts.
    """

    def __init__(
        self,
        requests_per_minute: float,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ) -> None:
        """`clock` and `sleep` default to this module's, read when a request asks."""
        if requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self.interval_s = 60.0 / requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0
        self._last = -self.interval_s

    async def acquire(self) -> None:
        # A slot in order of asking (no await between reading and moving it, so tasks of one
        # loop never collide); then, however late the sleep ended, wait until a whole interval
        # has passed since the last start let go. No lock: the judge's and simulator's calls
        # may come from another thread's loop.
        clock = self._clock or monotonic
        pause = self._sleep or sleep
        now = clock()
        slot = max(now, self._next)
        self._next = slot + self.interval_s
        if slot > now:
            await pause(slot - now)
        while (wait := self._last + self.interval_s - clock()) > 0:
            await pause(wait)
        self._last = clock()
        self._next = max(self._next, self._last + self.interval_s)


def normalise_message(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant message in canonical OpenAI shape, tool-call arguments kept raw."""
    content = message.get("content")
    if isinstance(content, list):  # some servers send content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raw_calls = list(message.get("tool_calls") or [])
    if not raw_calls and isinstance(message.get("function_call"), dict):
        raw_calls = [{"function": message["function_call"]}]  # legacy single-call field
    calls = []
    for index, call in enumerate(raw_calls):
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        if not isinstance(function, dict):
            raise TypeError(f"tool call {index + 1} has no function object")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(
            {
                "id": call.get("id") or f"call_{index}",
                "type": "function",
                "function": {"name": function.get("name") or "", "arguments": arguments},
            }
        )
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    elif content is None:
        out["content"] = ""
    return out


def _has_cause(exc: BaseException, class_name: str) -> bool:
    """Whether any exception in the cause chain is (a subclass of) a class of that name."""
    seen: BaseException | None = exc
    while seen is not None:
        if any(cls.__name__ == class_name for cls in type(seen).__mro__):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class OpenAIChatProvider:
    """Calls one OpenAI-compatible endpoint, with retries, a timeout and an optional RPM limit.

    Another protocol whose client shares the openai client's error classes (``anthropic``)
    reuses the retry loop by overriding the hooks ``_make_client``, ``_body``, ``_create`` and
    ``_parse`` (see ``providers/anthropic_messages.py``).
    """

    default_url = "https://api.openai.com/v1"

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        headers: dict[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        requests_per_minute: float | None = None,
        concurrency: int | None = None,
        *,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 20.0,
        retry_after_cap_s: float = RETRY_AFTER_CAP_S,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        rng: random.Random | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.retry_after_cap_s = retry_after_cap_s
        self._rng = rng or random.Random()
        self.max_reply_bytes = max_reply_bytes
        self.budget_s = timeout_s * (self.retries + 1)
        """The request's budget (timeout x attempts): no retry waits past its end."""
        self._api_key = resolve_api_key(api_key_env, base_url, self.default_url)
        self._key_from_env = self._api_key != DUMMY_API_KEY
        if self._key_from_env:
            redaction.register(self._api_key)
        redaction.register_forms(redaction.url_secrets(base_url))
        # A limiter shared by every provider of a run makes requests_per_minute run-wide.
        self._limiter = limiter or (
            RateLimiter(requests_per_minute) if requests_per_minute else None
        )
        self._semaphore = asyncio.Semaphore(concurrency) if concurrency else None
        self._reached = False
        refuse_clear_text(
            base_url,
            ([self._api_key] if self._key_from_env else []) + header_secrets(headers),
            f"the model endpoint {self._where()}",
        )
        self._openai, self._client = self._make_client(expand_header_values(headers))

    def _make_client(self, headers: dict[str, str]) -> tuple[Any, Any]:
        """The client library (whose error classes the retry loop catches) and a client that
        follows no redirect (see providers/http_policy.py); `headers` are filled in."""
        import openai

        client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
            default_headers=headers,
            http_client=sdk_http_client(openai.DefaultAsyncHttpxClient, self._url()),
        )
        return openai, client

    def _url(self) -> str:
        """Where requests go: base_url, else the client's default (its own env variable)."""
        return self.base_url or self.default_url

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self._where()!r}, api_key_env={self.api_key_env!r})"
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._semaphore is None:
            return await self._complete(request)
        async with self._semaphore:
            return await self._complete(request)

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        params = {k: v for k, v in request.params.items() if k not in _DROPPED_PARAMS}
        params["messages"] = _wire_messages(request.messages)
        if request.tools:
            params["tools"] = list(request.tools)
        else:
            for name in _TOOL_ONLY_PARAMS:
                params.pop(name, None)
        # Everything goes in extra_body, which the client merges into the JSON as it is: any
        # server-specific field passes through, and the client's per-request walk over typed
        # messages and tools (the largest client-side cost of a run) is skipped.
        return {"model": request.model, "messages": [], "extra_body": params}

    def _create(self) -> Any:
        """The client's call for one request, answering with a streamed raw response."""
        return self._client.chat.completions.with_streaming_response.create

    def _where(self) -> str:
        return display_url(self.base_url, self.default_url)

    async def _complete(self, request: ChatRequest) -> ChatResponse:
        """Send the request, retrying what another attempt may cure (tenacity's loop): the
        back-off (full jitter, at least the server's Retry-After) is computed first, then
        the stop reads it, so no retry waits past the request's budget."""
        body = self._body(request)
        budget_ends = monotonic() + self.budget_s
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            wait=self._delay,
            stop=lambda state: self._stops(state, budget_ends),
            sleep=lambda seconds: sleep(seconds),  # looked up at each retry: tests fake it
            before_sleep=lambda state: self._log_retry(request, state),
            retry_error_callback=lambda state: self._give_up(request, state, budget_ends),
        )
        async for attempt in retrying:
            with attempt:
                made = attempt.retry_state.attempt_number - 1
                response = await self._attempt(request, body, made)
        return response

    def _delay(self, state: tenacity.RetryCallState) -> float:
        """The wait before the next attempt: full jitter, at least (up to a cap) the server's
        Retry-After."""
        delay = backoff_delay(
            state.attempt_number - 1, self.backoff_base_s, self.backoff_cap_s, self._rng
        )
        hint = _failure(state).wait_hint
        return delay if hint is None else max(delay, min(hint, self.retry_after_cap_s))

    def _stops(self, state: tenacity.RetryCallState, budget_ends: float) -> bool:
        """Every retry spent, or the next wait would end past the request's budget."""
        past_budget = (state.upcoming_sleep or 0.0) > budget_ends - monotonic()
        return past_budget or state.attempt_number > self.retries

    def _log_retry(self, request: ChatRequest, state: tenacity.RetryCallState) -> None:
        _log.info(
            "%s: %s; retry %d of %d in %.2f s",
            request.describe(),
            _failure(state).problem,
            state.attempt_number,
            self.retries,
            state.upcoming_sleep,
        )

    def _give_up(
        self, request: ChatRequest, state: tenacity.RetryCallState, budget_ends: float
    ) -> NoReturn:
        """The last attempt failed: one error saying how many were made and the last cause."""
        failed, attempts = _failure(state), state.attempt_number
        problem = failed.problem
        delay = state.upcoming_sleep or 0.0
        if delay > budget_ends - monotonic() and attempts <= self.retries:
            problem += (
                f"; the next try would wait {delay:.1f} s, past the request's budget of "
                f"{self.budget_s:g} s (timeout x attempts)"
            )
        raise ProviderError(
            f"{request.describe()}: gave up after {attempts} attempts, last error: {problem}",
            label=request.label,
            status=failed.status,
            attempts=attempts,
        ) from None

    async def _attempt(
        self, request: ChatRequest, body: dict[str, Any], attempt: int
    ) -> ChatResponse:
        """One attempt (`attempt` made before it): the reply parsed; `_Retryable` when another
        attempt may succeed; any other error ends the request."""
        openai = self._openai
        if self._limiter is not None:
            await self._limiter.acquire()
        started = monotonic()
        try:
            # One deadline for the whole attempt, body included: a server that sends one
            # byte a second cannot keep a request alive past the run's timeout.
            async with attempt_deadline(self.timeout_s):
                try:
                    text = await self._send(body)
                except UnicodeEncodeError:
                    body = without_lone_surrogates(body)  # so the request can be encoded at all
                    text = await self._send(body)
            latency = monotonic() - started
            self._reached = True
            return self._parse(text, latency, request, attempt + 1)
        except _ReplyTooLarge:
            self._reached = True
            raise ProviderError(
                f"{request.describe()}: the endpoint's reply is larger than "
                f"{self.max_reply_bytes // (1024 * 1024)} MiB, the most evalspec reads; "
                "it was not stored (ask for a shorter answer, e.g. max_tokens)",
                label=request.label,
                status=200,
                attempts=attempt + 1,
            ) from None
        except openai.APIStatusError as exc:
            self._reached = True
            raise self._status_failure(request, exc, attempt) from None
        except (TimeoutError, openai.APITimeoutError):
            raise _Retryable(f"no answer within the {self.timeout_s:g} s timeout") from None
        except _BodyBroken as exc:
            self._reached = True
            why = self._redact(str(exc.__cause__))[:200]
            raise _Retryable(f"the answer was cut off ({why})") from None
        except openai.APIConnectionError as exc:
            refused = _has_cause(exc, "ConnectError")
            if attempt >= self.retries and refused and not self._reached:
                raise RunError(
                    f"cannot reach the model endpoint {self._where()} "
                    f"({self._redact(str(exc.__cause__ or exc))}); is the server running "
                    "and the base_url right?"
                ) from None
            problem = "could not connect" if refused else "connection dropped"
            raise _Retryable(problem) from None

    def _status_failure(self, request: ChatRequest, exc: Any, attempt: int) -> Exception:
        """What an HTTP error status means: a retry (429, 5xx), or the end of the request."""
        status = exc.status_code
        problem = f"HTTP {status}: {self._server_message(exc)}"
        if status == 401:
            return RunError(self._auth_message(problem))
        if 300 <= status < 400:
            where = f"the model endpoint {self._where()}"
            return RunError(redirect_message(status, exc.response.headers, where))
        if status not in RETRYABLE_STATUS:
            return ProviderError(
                f"{request.describe()}: the endpoint refused the request ({problem})",
                label=request.label,
                status=status,
                attempts=attempt + 1,
            )
        return _Retryable(problem, parse_retry_after(exc.response.headers), status)

    async def _send(self, body: dict[str, Any]) -> str:
        """POST one request and read its reply, at most max_reply_bytes of it."""
        async with self._create()(**body) as response:
            declared = response.http_response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.max_reply_bytes:
                raise _ReplyTooLarge
            chunks: list[bytes] = []
            size = 0
            try:
                async for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_reply_bytes:
                        raise _ReplyTooLarge
                    chunks.append(chunk)
            except (_ReplyTooLarge, asyncio.CancelledError):
                raise
            except Exception as exc:  # the transport's own error types; all mean "cut off"
                raise _BodyBroken from exc
        return b"".join(chunks).decode("utf-8", errors="replace")

    def _parse(
        self, text: str, latency: float, request: ChatRequest, attempts: int
    ) -> ChatResponse:
        try:
            data = loads_untrusted(text)
            choice = data["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
            # A server that echoes the request (its headers, the key) must not get it stored.
            message = redaction.scrub_value(normalise_message(message))
            usage = data.get("usage") or {}
            finish = choice.get("finish_reason")
            counted = {
                "prompt_tokens": token_count(usage.get("prompt_tokens")),
                "completion_tokens": token_count(usage.get("completion_tokens")),
            }
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
            snippet = self._redact(text[:200])
            raise ProviderError(
                f"{request.describe()}: the endpoint's reply is not a chat completion: {snippet!r}",
                label=request.label,
                status=200,
                attempts=attempts,
            ) from None
        return ChatResponse(
            message=message,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=counted,
            latency_s=latency,
            attempts=attempts,
        )

    def _server_message(self, exc: Any) -> str:
        body = getattr(exc, "body", None)
        message = None
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
        if not message:
            message = getattr(exc.response, "reason_phrase", "") or str(exc)
        return self._redact(str(message))[:300]

    def _auth_message(self, problem: str) -> str:
        where = self._where()
        if self._key_from_env:
            return (
                f"{where} rejected the API key in environment variable {self.api_key_env} "
                f"({problem}); check that it holds a valid key for this endpoint"
            )
        return (
            f"{where} requires an API key ({problem}); set environment variable "
            f"{self.api_key_env} to it"
        )

    def _redact(self, text: str) -> str:
        """Remove the key, and anything shaped like one, from text shown to users."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return _KEY_LIKE.sub("***", redaction.scrub(text))


def _wire_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent: an assistant message that made tool calls carries its text as
    `""`, not `null`. OpenAI accepts both; llama.cpp's Python server (HTTP 500 "Input should
    be a valid string"; without `content`, its template fails) and Mistral's endpoint refuse
    `null`, though it is what they answer with: a conversation's second request failed there.
    Only the wire changes: the history, its request keys and the recordings keep the answer
    as the server gave it."""
    out = list(messages)
    for i, message in enumerate(out):
        calls = message.get("role") == "assistant" and message.get("tool_calls")
        if calls and message.get("content") is None:
            out[i] = {**message, "content": ""}
    return out


class _Retryable(Exception):
    """An attempt failed in a way another attempt may not: what went wrong (said in the log
    and, after the last, in the error), and what the server asked for."""

    def __init__(
        self, problem: str, wait_hint: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(problem)
        self.problem, self.wait_hint, self.status = problem, wait_hint, status


def _failure(state: tenacity.RetryCallState) -> _Retryable:
    """The retryable failure of the attempt `state` is about."""
    assert state.outcome is not None
    failed = state.outcome.exception()
    assert isinstance(failed, _Retryable)
    return failed
