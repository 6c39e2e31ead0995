"""A provider for Anthropic's Messages API, through the official ``anthropic`` client.

The ``anthropic`` client is generated like ``openai``'s and raises the same kinds of errors
(APIStatusError with the response, APITimeoutError, APIConnectionError), so this provider keeps
the OpenAI provider's retry loop, rate limiting, 401 handling and redaction, and changes only
the client, the request body and the parsing (``providers/anthropic_format.py``). Status 529
(overloaded) is retried like every 5xx. ``anthropic`` is imported only when a model uses it.
"""

from __future__ import annotations

from typing import Any

from evalspec._providers.anthropic_format import NotAMessagesReply, from_reply, to_body
from evalspec._providers.base import ChatRequest, ChatResponse, ProviderError
from evalspec._providers.http_policy import sdk_http_client
from evalspec._providers.openai_chat import OpenAIChatProvider
from evalspec._util import redaction
from evalspec._util.reading import loads_untrusted


class AnthropicMessagesProvider(OpenAIChatProvider):
    """Calls one Messages endpoint (Anthropic's, or a compatible one) with the shared policy."""

    default_url = "https://api.anthropic.com"

    def _make_client(self, headers: dict[str, str]) -> tuple[Any, Any]:
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
            default_headers=headers,
            http_client=sdk_http_client(anthropic.DefaultAsyncHttpxClient, self._url()),
        )
        return anthropic, client

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body = to_body(list(request.messages), list(request.tools), request.params)
        # As for OpenAI: the whole body goes through extra_body untouched, which skips the
        # client's per-request walk over typed messages; the named arguments it requires are
        # overridden by the same keys in extra_body.
        return {
            "model": request.model,
            "max_tokens": body["max_tokens"],
            "messages": [],
            "extra_body": body,
        }

    def _create(self) -> Any:
        return self._client.messages.with_streaming_response.create

    def _parse(
        self, text: str, latency: float, request: ChatRequest, attempts: int
    ) -> ChatResponse:
        try:
            message, finish, usage = from_reply(loads_untrusted(text))
            # A server that echoes the request (its headers, the key) must not get it stored.
            message = redaction.scrub_value(message)
        except (ValueError, TypeError, AttributeError, RecursionError, NotAMessagesReply):
            raise ProviderError(
                f"{request.describe()}: the endpoint's reply is not a Messages API message: "
                f"{self._redact(text[:200])!r}",
                label=request.label,
                status=200,
                attempts=attempts,
            ) from None
        return ChatResponse(
            message=message,
            finish_reason=finish,
            usage=usage,
            latency_s=latency,
            attempts=attempts,
        )
