"""What a model provider is: one chat request in, one assistant message out.

Kept free of any client library so the runner, recordings and tests can share these types
without importing ``openai``.

Error policy (who catches what):

* :class:`ProviderError` is the failure of ONE request after retries (HTTP 400/403/404/422,
  retries exhausted on 429/5xx/timeouts/dropped connections, a reply that is not a chat
  completion, a recording missing in offline mode). The runner records it as that item's
  error and carries on with the other items.
* :class:`evalspec._util.errors.RunError` (exit code 3) means the run cannot go on at all: the
  API key variable is not set, the endpoint rejects the key (HTTP 401), or the endpoint cannot be
  reached (connection refused, unknown host) before any request to it has succeeded. The runner
  lets it propagate.

Neither kind of message ever contains an API key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from evalspec._plan import Earlier

RecordMode = Literal["auto", "offline", "record"]
"""auto: replay recorded answers, call for the rest; offline: replay only; record: refresh."""
RECORD_MODES: tuple[RecordMode, ...] = ("auto", "offline", "record")


@dataclass(frozen=True)
class ChatRequest:
    """One call to a chat-completions endpoint, with the content id that keys recordings."""

    key: str
    """Content id of this request (plan item id + turn index, computed by the caller)."""
    model: str
    """Model id sent to the endpoint."""
    messages: tuple[dict[str, Any], ...]
    """The conversation so far, in OpenAI chat format."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tool definitions in OpenAI format (``{"type": "function", "function": {...}}``)."""
    params: dict[str, Any] = field(default_factory=dict)
    """temperature, seed, tool_choice, parallel_tool_calls, max_tokens, ..."""
    label: str = ""
    """Human label for error messages, e.g. ``case 'direct message' on model 'gpt-4o-mini'``."""
    continues: Earlier | None = None
    """The request before this one in the same conversation, whose messages this one's start
    with: a recordings line then holds only the messages after them (and no tools when they
    are the same), so a conversation's recordings grow with its length, not its square."""

    def describe(self) -> str:
        """The label, or a fallback naming the model and request, for error messages."""
        return self.label or f"request {self.key[:12]} on model '{self.model}'"


@dataclass(frozen=True)
class ChatResponse:
    """The assistant's answer to one request."""

    message: dict[str, Any]
    """``{"role": "assistant", "content": str | None, "tool_calls": [...]}``; each tool call is
    ``{"id", "type": "function", "function": {"name", "arguments"}}`` with ``arguments`` the raw
    string the server sent, even when it is not valid JSON. ``tool_calls`` is absent when the
    model made no call."""
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """``{"prompt_tokens": int, "completion_tokens": int}``."""
    latency_s: float = 0.0
    """Wall time of the attempt that succeeded (retries and rate-limit waits excluded)."""
    from_recording: bool = False
    attempts: int = 1
    """HTTP requests this answer took, retries included (0 for a replayed one)."""


class Provider(Protocol):
    """Anything that can answer a chat request: a live endpoint, recordings, a test double."""

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


class Limiter(Protocol):
    """Spaces requests out: a process's RateLimiter, or one backed by a Ray cluster's actor."""

    async def acquire(self) -> None: ...


class RecordingStore(Protocol):
    """The recorded answers a RecordingProvider reads and adds to: a local file's `Recordings`,
    or, on a Ray worker, the driver's recordings actor."""

    @property
    def path(self) -> Path: ...

    def get(self, key: str) -> ChatResponse | None: ...

    def put(self, request: ChatRequest, response: ChatResponse) -> None: ...

    def compact(self) -> None: ...

    def close(self) -> None: ...


MAX_TOKEN_COUNT = 10**15
"""More tokens than any one reply holds: a larger count is a broken server's, not a cost."""


def token_count(value: Any) -> int:
    """A reply's token count (absent: 0) as a recording keeps it, a whole number of 0 or more;
    anything else raises ValueError. A server's negative or infinite count was recorded, and
    the recording then refused by every run that read it."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"a token count must be a whole number, not {value!r:.40}")
    try:
        count = int(value)
    except (ValueError, OverflowError):
        raise ValueError(f"a token count must be a whole number, not {value!r:.40}") from None
    if not 0 <= count <= MAX_TOKEN_COUNT:
        raise ValueError(f"a token count must be between 0 and {MAX_TOKEN_COUNT}, not {count}")
    return count


class ProviderError(Exception):
    """One request failed for good; the item is marked errored and the run goes on."""

    def __init__(
        self,
        message: str,
        *,
        label: str = "",
        status: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.label = label
        self.status = status
        """HTTP status of the last attempt, if the server answered at all."""
        self.attempts = attempts


class RecordingMissing(ProviderError):
    """Offline replay found no recorded answer for a request."""
