"""The simulated user: a model that plays the user of a conversation, as τ-bench's does.

It is asked through the same provider path as the model under test (a `RecordingProvider` of
the suite's model entry it names), so its messages are recorded, replayed offline and keyed by
content like any model answer: the request holds its settings (persona, goal, instructions,
stop condition) in its system message, so a changed setting is a new request.

It sees the conversation with roles swapped: the assistant's text answers come to it as the
user's messages, its own earlier messages as its answers; the assistant's tool traffic and the
case's system message are never shown. It ends the conversation by saying `###STOP###`
(τ-bench's signal), by sending an empty message, or when it has sent `max_turns` messages.

A user with tools of its own (dual control, as τ²-bench's telecom user toggles airplane mode)
is offered them in its requests; its calls run on the same world as the model's, and it sees
their answers (its own tool traffic) before it speaks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from evalspec._plan import request_key
from evalspec._providers.base import ChatRequest, Provider, ProviderError
from evalspec._suite.limits import MAX_TOOL_OUTPUT_CHARS_ENV, max_tool_output_chars
from evalspec._suite.model import ModelSpec, UserSimulation
from evalspec._transcript import ToolCall, UserUsage, call_arguments

MAX_USER_CALLS = 16
"""The most tool calls a simulated user makes before one message: a user that keeps calling
is stopped as an error (its fault), not left to loop."""

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
    tools: tuple[dict[str, Any], ...] = ()
    """The definitions of the user's own tools (OpenAI form); () for a user without tools."""
    world: Any = None
    """What runs the user's calls: the conversation's tools (`call(name, args, raw)`)."""
    calls: list[ToolCall] = field(default_factory=list)
    """The user's calls since its last message (the conversation takes them with the turn)."""
    output_left: int = 0
    """Characters its tools may still answer: the conversation's budget
    (`max_tool_output_chars`) less what the tools answered so far, the model's and its own;
    set by the conversation before each message."""
    _view: list[dict[str, Any]] = field(default_factory=list)
    _seen: int = -1

    async def next_message(self, history: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        """The user's next message, or (None, why) when the user ends the conversation:
        stop_signal, empty_message or max_turns. Raises ProviderError as a model call does."""
        if self.sent >= self.sim.max_turns:
            return None, "max_turns"
        self._catch_up(history)
        self.calls = []
        for _ in range(MAX_USER_CALLS + 1):
            message = await self._ask()
            wanted = message.get("tool_calls") or []
            if not wanted:
                break
            if len(self.calls) + len(wanted) > MAX_USER_CALLS:
                raise ProviderError(
                    f"the simulated user made more than {MAX_USER_CALLS} tool calls before "
                    "one message"
                )
            self._view.append(message)
            for tc in wanted:
                await self._call(tc)
        content = message.get("content")
        text = content.strip() if isinstance(content, str) else ""
        if STOP_SIGNAL in text:
            return None, "stop_signal"
        if not text:
            return None, "empty_message"
        self.sent += 1
        self._view.append({"role": "assistant", "content": text})
        return text, None

    def _catch_up(self, history: list[dict[str, Any]]) -> None:
        """Add what the assistant said since the user's last message to the user's view (the
        user's own messages are in it already, as its answers)."""
        if self._seen < 0:
            self._view = [
                {"role": "system", "content": system_prompt(self.sim)},
                {"role": "user", "content": OPENING},
                *swapped_roles(history),
            ]
        else:
            said = [m for m in history[self._seen :] if m.get("role") == "assistant"]
            self._view.extend(swapped_roles(said))
        self._seen = len(history)

    async def _ask(self) -> dict[str, Any]:
        """One request of the simulated user, on its view so far."""
        messages = list(self._view)
        request = ChatRequest(
            key=request_key(self.model, messages, list(self.tools), self.trial),
            model=self.model.model,
            messages=tuple(messages),
            tools=self.tools,
            params=dict(self.model.params),
            label=f"simulated user ({self.model.name}) of {self.label}",
        )
        response = await self.provider.complete(request)
        self.prompt_tokens += int(response.usage.get("prompt_tokens", 0) or 0)
        self.completion_tokens += int(response.usage.get("completion_tokens", 0) or 0)
        return dict(response.message)

    async def _call(self, tc: dict[str, Any]) -> None:
        """Run one of the user's calls on the shared world; its answer joins the user's view."""
        fn = tc.get("function") or {}
        name = str(fn.get("name", ""))
        raw = fn.get("arguments") or ""
        raw = raw if isinstance(raw, str) else json.dumps(raw)
        call = await user_call(self.world, self.tools, name, raw, len(self.calls))
        call = msgspec.structs.replace(call, id=str(tc.get("id") or call.id))
        self.calls.append(call)
        content = observed(call)
        self.output_left -= len(content)
        if self.output_left < 0:
            raise ProviderError(over_output(len(self.calls), name))
        self._view.append({"role": "tool", "tool_call_id": call.id, "content": content})

    def usage(self) -> UserUsage:
        """The tokens this simulated user has spent so far."""
        return UserUsage(
            model=self.model.name,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


def observed(call: ToolCall) -> str:
    """What a user's call answered, as the user reads it (and the output budget counts it)."""
    answer = {"error": call.error} if call.error is not None else call.output
    return json.dumps(answer, default=str)


def over_output(index: int, name: str) -> str:
    """Why a conversation stopped at a user's call: its tools answered too much."""
    return (
        f"the tools answered more than {max_tool_output_chars()} characters in one conversation "
        f"(at the user's call {index}, {name!r}), so the case stopped there; answer with less, "
        f"or raise {MAX_TOOL_OUTPUT_CHARS_ENV}"
    )


async def user_call(
    world: Any, offered: tuple[dict[str, Any], ...], name: str, raw: str, index: int
) -> ToolCall:
    """One call of the user's on the shared world, as a ToolCall; a tool the user does not
    hold is refused as the model's unknown tools are, and changes nothing."""
    mine = {t["function"]["name"] for t in offered}
    args = call_arguments(raw)
    base = ToolCall(name=name, arguments=args, raw_arguments=raw, id=f"user_call_{index}")
    if name not in mine:
        why = f"unknown tool '{name}'; available tools: {', '.join(sorted(mine))}"
        return msgspec.structs.replace(base, error=why)
    result = await world.call(name, args, raw)
    return msgspec.structs.replace(base, output=result.output, error=result.error)
