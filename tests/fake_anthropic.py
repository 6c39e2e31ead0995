"""A real Anthropic Messages API server on loopback, for tests: FakeOpenAI's machinery, other wire.

Replies are scripted in Anthropic's own shapes (content blocks, stop_reason, usage), so the
provider's translation is tested against what the ``anthropic`` client really receives. Faults
(429/529 with Retry-After, drops, delays) and the FIFO queue / rules work as in ``FakeOpenAI``.

    with FakeAnthropic(responder=lambda body: tool_use_reply(("add", {"a": 1}))) as server:
        server.fail_next(529, retry_after=0.1)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from fake_openai import FakeOpenAI

_ids = itertools.count(1)


@dataclass(frozen=True)
class MessagesReply:
    """Content blocks and a stop reason, wrapped into a full message by the server."""

    content: list[Any]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 12, "output_tokens": 7})


def text_reply(text: str, *, stop_reason: str = "end_turn") -> MessagesReply:
    return MessagesReply([{"type": "text", "text": text}], stop_reason)


def tool_use_reply(*calls: tuple[str, Any], text: str | None = None) -> MessagesReply:
    """One tool_use block per (name, input); several make parallel tool use."""
    blocks: list[Any] = [{"type": "text", "text": text}] if text else []
    for name, arguments in calls:
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": arguments}
        )
    return MessagesReply(blocks, "tool_use")


def last_turn_has_tool_results(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return False
    content = messages[-1].get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


class FakeAnthropic(FakeOpenAI):
    """Serves POST /v1/messages; ``base_url`` is the root the ``anthropic`` client expects."""

    route = "/v1/messages"

    def __init__(self, responder: Any = None, **options: Any) -> None:
        """`options`: FakeOpenAI's (latency_s, clock, pause)."""
        super().__init__(responder or (lambda body: text_reply("ok")), **options)

    @property
    def base_url(self) -> str:
        return super().base_url.removesuffix("/v1")

    def render(self, reply: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake-claude"),
            "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": reply.usage,
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}
        return {
            "type": "error",
            "error": {"type": kind.get(status, "api_error"), "message": message},
        }
