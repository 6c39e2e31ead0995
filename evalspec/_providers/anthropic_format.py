"""Translate between the provider-neutral chat form (OpenAI's) and Anthropic's Messages API.

Transcripts, recordings and request keys stay in the one neutral form; only the wire differs.
What maps, and what is lost:

* system messages -> the ``system`` parameter (several are joined with blank lines; their
  position in the conversation is lost);
* assistant ``tool_calls`` <-> ``tool_use`` blocks (id, name, arguments as the ``input`` object);
  arguments that are not a JSON object are sent as ``{}``, which only matters for a suite's own
  scripted history, since Anthropic models always give objects;
* ``tool`` messages -> ``tool_result`` blocks in one user turn, ``is_error`` when the
  observation is ``{"error": ...}``; consecutive same-role turns are merged, as Anthropic
  requires alternating roles;
* params: temperature, top_p, max_tokens (default :data:`DEFAULT_MAX_TOKENS`, Anthropic
  requires one), stop -> stop_sequences, tool_choice auto/none/required/function ->
  auto/none/any/tool, parallel_tool_calls false -> disable_parallel_tool_use; ``seed`` has no
  Anthropic equivalent and is dropped; ``extra_body`` passes through;
* reply: text blocks joined into ``content``, ``tool_use`` -> ``tool_calls``, thinking and other
  block kinds dropped; ``stop_reason`` end_turn/stop_sequence -> stop, max_tokens -> length,
  tool_use -> tool_calls, refusal -> content_filter; usage input (plus cache) tokens ->
  prompt_tokens, output tokens -> completion_tokens.
"""

from __future__ import annotations

import json
from typing import Any

from evalspec._providers.base import token_count

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires max_tokens; used when a model's params give none."""

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

_TOOL_CHOICE = {"auto": "auto", "none": "none", "required": "any"}
_PASSED_PARAMS = ("temperature", "top_p", "top_k", "max_tokens", "metadata")


class NotAMessagesReply(ValueError):
    """The reply body is not a Messages API message."""


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _is_error_observation(content: str) -> bool:
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One neutral message as the content blocks of an Anthropic turn."""
    role = message.get("role")
    if role == "tool":
        content = _text_of(message.get("content"))
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": str(message.get("tool_call_id") or ""),
            "content": content,
        }
        if _is_error_observation(content):
            block["is_error"] = True
        return [block]
    out: list[dict[str, Any]] = []
    text = _text_of(message.get("content"))
    if text:
        out.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        out.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or ""),
                "name": str(function.get("name") or ""),
                "input": _tool_input(function.get("arguments")),
            }
        )
    return out


def to_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the alternating user/assistant turns for these neutral messages."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(message.get("content")))
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == wire_role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": wire_role, "content": blocks})
    return "\n\n".join(s for s in system if s), turns


def to_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function definitions as Anthropic tool definitions."""
    out = []
    for tool in tools:
        function = tool.get("function") or {}
        out.append(
            {
                "name": function.get("name", ""),
                "description": function.get("description", ""),
                "input_schema": function.get("parameters") or {"type": "object"},
            }
        )
    return out


def _tool_choice(params: dict[str, Any]) -> dict[str, Any] | None:
    choice = params.get("tool_choice")
    out: dict[str, Any] | None = None
    if isinstance(choice, str) and choice in _TOOL_CHOICE:
        out = {"type": _TOOL_CHOICE[choice]}
    elif isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        out = {"type": "tool", "name": name} if name else dict(choice)
    if params.get("parallel_tool_calls") is False:
        out = out or {"type": "auto"}
        if out["type"] != "none":
            out["disable_parallel_tool_use"] = True
    return out


def to_body(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
) -> dict[str, Any]:
    """The JSON body of a Messages request, without the model id."""
    system, turns = to_messages(messages)
    body: dict[str, Any] = {k: params[k] for k in _PASSED_PARAMS if k in params}
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    body["messages"] = turns
    if system:
        body["system"] = system
    stop = params.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if tools:
        body["tools"] = to_tools(tools)
        choice = _tool_choice(params)
        if choice is not None:
            body["tool_choice"] = choice
    body.update(params.get("extra_body") or {})
    return body


def from_reply(data: Any) -> tuple[dict[str, Any], str | None, dict[str, int]]:
    """The neutral assistant message, finish reason and usage of a Messages reply."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise NotAMessagesReply("no content list")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            raise NotAMessagesReply(f"content block {index + 1} is not an object")
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = block.get("input")
            # A non-object input is kept raw so the simulator reports it to the model.
            raw = (
                json.dumps(arguments, ensure_ascii=False)
                if isinstance(arguments, dict)
                else (arguments if isinstance(arguments, str) else json.dumps(arguments))
            )
            calls.append(
                {
                    "id": str(block.get("id") or f"toolu_{index}"),
                    "type": "function",
                    "function": {"name": str(block.get("name") or ""), "arguments": raw},
                }
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
        message["content"] = message["content"] or None
    stop = data.get("stop_reason")
    finish = STOP_REASONS.get(stop, stop) if isinstance(stop, str) else None
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    prompt = sum(
        token_count(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return (
        message,
        finish,
        {"prompt_tokens": prompt, "completion_tokens": token_count(usage.get("output_tokens"))},
    )
