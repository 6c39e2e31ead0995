"""The one way evalspec calls a model: models under test, the LLM judge and the tool simulator.

Every call gets the run's settings: its timeout as a total deadline per attempt, its retry
policy (server-requested waits capped, never past the request's budget), its rate limit shared
by all callers, and redaction of every secret it sends. A `ModelCalls` is only made where calls
are allowed: review commands (`score`, `diff`, `compare`, `merge`) and `run --record offline`
have none, so the judge and simulator can only read their caches there.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalspec._language.defaults import DEFAULT_API_KEY_ENV, DEFAULT_RETRIES, DEFAULT_TIMEOUT_S
from evalspec._providers.base import ChatRequest, ChatResponse, Limiter, Provider
from evalspec._suite.endpoints import endpoints as suite_endpoints
from evalspec._util import redaction

if TYPE_CHECKING:
    from evalspec._providers.openai_chat import OpenAIChatProvider
    from evalspec._suite.model import ModelSpec, RunSettings, Suite


@dataclass(frozen=True)
class Endpoint:
    """Where a call goes and which secrets it carries."""

    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    headers: dict[str, str] = field(default_factory=dict)
    provider: str = "openai"
    """Wire protocol: ``openai`` (chat completions) or ``anthropic`` (Messages API)."""


def model_endpoint(model: ModelSpec) -> Endpoint:
    return Endpoint(model.base_url, model.api_key_env, dict(model.headers), model.provider)


def rate_key(endpoint: Endpoint, model: str) -> str:
    """Which requests share a model's own `requests_per_minute`: those for one model id at one
    endpoint with one API key variable, as a provider counts its quota, whatever the suite's
    label or parameters for them. A digest, so a URL's credentials never name anything."""
    env = "ANTHROPIC_BASE_URL" if endpoint.provider == "anthropic" else "OPENAI_BASE_URL"
    where = endpoint.base_url or os.environ.get(env) or ""
    text = json.dumps([endpoint.provider, where, endpoint.api_key_env, model])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def own_rate_limits(models: Iterable[ModelSpec]) -> dict[str, float]:
    """Rate key -> requests per minute, for models with their own `requests_per_minute`; models
    that share a key (one model id at two temperatures) share the strictest of their limits."""
    limits: dict[str, float] = {}
    for m in models:
        if m.requests_per_minute:
            key = rate_key(model_endpoint(m), m.model)
            limits[key] = min(limits.get(key, m.requests_per_minute), m.requests_per_minute)
    return limits


class ModelCalls:
    """The run's call policy; hands out providers that follow it."""

    def __init__(
        self,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        requests_per_minute: float | None = None,
        *,
        limiter: Limiter | None = None,
        own_limiters: dict[str, Limiter] | None = None,
    ) -> None:
        """`limiter` spaces every call (run.requests_per_minute) except those of a model with
        its own limit, which `own_limiters` (by `rate_key`) spaces instead."""
        self.timeout_s = timeout_s
        self.retries = retries
        self.requests_per_minute = requests_per_minute
        if limiter is None and requests_per_minute:
            from evalspec._providers.openai_chat import RateLimiter

            limiter = RateLimiter(requests_per_minute)
        self.limiter = limiter
        self.own_limiters = own_limiters or {}

    @classmethod
    def for_run(cls, run: RunSettings, models: Iterable[ModelSpec] = ()) -> ModelCalls:
        """The policy of a run of these models: one limiter for the run's requests_per_minute,
        and one per endpoint of the models with their own."""
        from evalspec._providers.openai_chat import RateLimiter

        own: dict[str, Limiter] = {
            key: RateLimiter(rpm) for key, rpm in own_rate_limits(models).items()
        }
        return cls(run.timeout_s, run.retries, run.requests_per_minute, own_limiters=own)

    def provider(self, endpoint: Endpoint, model: str | None = None) -> Provider:
        """A live provider for this endpoint under the run's policy (a RunError if no key).

        With `model` (the id its requests ask for), a model with its own requests_per_minute
        is held to that limit instead of the run's. It sends provider-safe tool names
        (``Math.Add`` as ``Math_Add``) and answers with the suite's names.
        """
        from evalspec._providers.tool_names import WireToolNames

        limiter = self.limiter
        if model is not None and self.own_limiters:
            limiter = self.own_limiters.get(rate_key(endpoint, model), limiter)

        cls: type[OpenAIChatProvider]
        if endpoint.provider == "anthropic":
            from evalspec._providers.anthropic_messages import AnthropicMessagesProvider

            cls = AnthropicMessagesProvider
            base_url = endpoint.base_url or os.environ.get("ANTHROPIC_BASE_URL")
        else:
            from evalspec._providers.openai_chat import OpenAIChatProvider

            cls = OpenAIChatProvider
            base_url = endpoint.base_url or os.environ.get("OPENAI_BASE_URL")
        return WireToolNames(
            cls(
                base_url=base_url,
                api_key_env=endpoint.api_key_env,
                headers=endpoint.headers,
                timeout_s=self.timeout_s,
                retries=self.retries,
                limiter=limiter,
            )
        )

    async def ask(
        self,
        endpoint: Endpoint,
        model: str,
        messages: list[dict[str, Any]],
        *,
        params: dict[str, Any] | None = None,
        label: str = "",
    ) -> ChatResponse:
        """One chat request through a provider opened for it and closed after."""
        request = ChatRequest(
            key=request_digest(model, messages, params or {}),
            model=model,
            messages=tuple(messages),
            params=dict(params or {}),
            label=label,
        )
        provider = self.provider(endpoint)
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()


def request_digest(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """A content id for a one-off request (judge, simulator)."""
    text = json.dumps([model, messages, params], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def register_suite_secrets(suite: Suite) -> None:
    """Register every secret this suite's calls may send, so no writer can output it.

    Every endpoint `endpoints` finds (models, judges wherever they sit, simulated tools): the
    value of each `api_key_env` that is set, header values taken from the environment, and any
    user:password in a `base_url`.
    """
    from evalspec._providers.openai_chat import header_secrets

    endpoints = [
        Endpoint(e.base_url, e.api_key_env, dict(zip(e.header_names, e.header_values, strict=True)))
        for e in suite_endpoints(suite).values()
    ]
    urls = {e.base_url for e in endpoints} | {
        os.environ.get("OPENAI_BASE_URL"),
        os.environ.get("ANTHROPIC_BASE_URL"),
    }
    for url in urls:
        redaction.register_forms(redaction.url_secrets(url))
    redaction.register(*(os.environ.get(e.api_key_env, "") for e in endpoints))
    for e in endpoints:
        redaction.register(*header_secrets(e.headers))
    for tool in suite.tools:
        if tool.mcp is not None:
            redaction.register(*header_secrets(tool.mcp.headers))
