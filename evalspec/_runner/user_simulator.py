"""The simulated user: a model that plays the user of a conversation, as τ-bench's does.

It is asked through the same provider path as the model under test (a `RecordingProvider` of
the suite's model entry it names), so its messages are recorded, replayed offline and keyed by
content like any model answer: the request holds its settings (persona, goal, instructions,
stop condition) in its system message, so a changed setting is a new request.

It sees the conversation with roles swapped: the assistant's text answers come to it as the
user's messages, its own earlier messages as its answers; tool traffic and the case's system
message are never shown. It ends the conversation by saying `###STOP###` (τ-bench's signal),
by sending an empty message, or when it has sent `max_turns` messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalspec._plan import request_key
from evalspec._providers.base import ChatRequest, Provider
from evalspec._suite.model import ModelSpec, UserSimulation
from evalspec._transcript import UserUsage

STOP_SIGNAL = "###STOP###"
OPENING = "Hi! How can I help you today?"
"""What the simulated user is first told, as τ-bench's user simulator is (it speaks first)."""


def system_prompt(sim: UserSimulation) -> str:
    """The simulated user's instructions (τ-bench's rules, with the case's settings)."""
    parts = ["You are a user talking with an AI assistant. Play the user; never the assistant."]
    if sim.persona:
        parts.append(f"Who you are: {sim.persona}")
    parts.append(f"Your goal: {sim.goal}")
    if sim.instructions:
        parts.append(f"Instructions: {sim.instructions}")
    done = sim.stop_when or "your goal is met, or the assistant cannot help further"
    parts.append(
        "Rules:\n"
        "- Write one message at a time, as the user would type it.\n"
        "- Do not give away your whole goal at once; give what the current step needs.\n"
        "- Do not invent facts your goal and instructions do not give.\n"
        f"- When {done}, reply with {STOP_SIGNAL} alone, and nothing else."
    )
    return "\n\n".join(parts)


def swapped_roles(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the simulated user sees it: the assistant's texts as user messages,
    the user's messages as its own answers; tool calls, tool results and system text left out.
    """
    out: list[dict[str, Any]] = []
    for m in history:
        role, content = m.get("role"), m.get("content")
        if not isinstance(content, str) or not content:
            continue  # a turn of tool calls only, or a non-text message: nothing said
        if role == "assistant":
            out.append({"role": "user", "content": content})
        elif role == "user":
            out.append({"role": "assistant", "content": content})
    return out


@dataclass
class UserSimulator:
    """One conversation's simulated user."""

    sim: UserSimulation
    model: ModelSpec
    provider: Provider
    trial: int
    label: str
    sent: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    async def next_message(self, history: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        """The user's next message, or (None, why) when the user ends the conversation:
        stop_signal, empty_message or max_turns. Raises ProviderError as a model call does."""
        if self.sent >= self.sim.max_turns:
            return None, "max_turns"
        messages = [
            {"role": "system", "content": system_prompt(self.sim)},
            {"role": "user", "content": OPENING},
            *swapped_roles(history),
        ]
        request = ChatRequest(
            key=request_key(self.model, messages, [], self.trial),
            model=self.model.model,
            messages=tuple(messages),
            tools=(),
            params=dict(self.model.params),
            label=f"simulated user ({self.model.name}) of {self.label}",
        )
        response = await self.provider.complete(request)
        self.prompt_tokens += int(response.usage.get("prompt_tokens", 0) or 0)
        self.completion_tokens += int(response.usage.get("completion_tokens", 0) or 0)
        content = response.message.get("content")
        text = content.strip() if isinstance(content, str) else ""
        if STOP_SIGNAL in text:
            return None, "stop_signal"
        if not text:
            return None, "empty_message"
        self.sent += 1
        return text, None

    def usage(self) -> UserUsage:
        """The tokens this simulated user has spent so far."""
        return UserUsage(
            model=self.model.name,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )
