"""The older forms of a traced conversation, read as the newer one (`gen_ai.input.messages`,
`gen_ai.output.messages` in the GenAI conventions' parts).

- Events, one per message (GenAI conventions up to v1.36): `gen_ai.system.message`,
  `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` (the model call's
  input, in order) and `gen_ai.choice` (its output; the first choice). Their body (`content`,
  `tool_calls`, `id`; a choice's `message`) is read from a span event's attributes, from its
  `gen_ai.event.content` (JSON text, as Azure's SDKs write it) or `body`, or from a log record
  of the Logs signal (`resourceLogs`; its `eventName` or `event.name` attribute, its `body`),
  which belongs to the span its `spanId` names.
- Content as a list of blocks (`{"text": ...}`, `{"toolUse": ...}`, `{"toolResult": ...}`, as
  Strands Agents writes it) besides plain text.
- The attributes `gen_ai.prompt` and `gen_ai.completion` (JSON messages, or a completion's
  `text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalspec._interop.otel import _attributes, _otlp_value, _time
from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted

ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}
"""The message events and the role each one's message has."""
_NOT_BODY = ("gen_ai.system", "gen_ai.provider.name", "event.name")


def span_events(span: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, body) of the span's message events, in the order written."""
    out = []
    for event in span.get("events") or ():
        if isinstance(event, Mapping) and event.get("name") in ROLES:
            out.append((str(event["name"]), _body(_attributes(event.get("attributes")))))
    return out


def _body(attributes: dict[str, Any]) -> dict[str, Any]:
    for key in ("gen_ai.event.content", "body"):
        if key in attributes:
            value = _loaded(attributes[key])
            return dict(value) if isinstance(value, Mapping) else {"content": value}
    return {k: v for k, v in attributes.items() if k not in _NOT_BODY}


def _loaded(value: Any) -> Any:
    """JSON text as its value (text that is not JSON stays text)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return loads_untrusted(value, MAX_VALUE_DEPTH)
        except ValueError:
            return value
    return value


def log_record(record: Mapping[str, Any], order: int) -> dict[str, Any] | None:
    """A log record holding a message event, as a span below the span it belongs to (None
    for any other record)."""
    attributes = _attributes(record.get("attributes"))
    name = record.get("eventName") or attributes.get("event.name")
    if name not in ROLES:
        return None
    raw = record.get("body")
    body = _loaded(_otlp_value(raw)) if isinstance(raw, Mapping) else _loaded(raw)
    return {
        "trace_id": str(record.get("traceId") or ""),
        "span_id": "",
        "parent_id": str(record.get("spanId") or "log"),
        "start": _time(record.get("timeUnixNano") or record.get("observedTimeUnixNano")),
        "order": order,
        "attributes": {},
        "error": None,
        "conversation": "",
        "events": [(str(name), dict(body) if isinstance(body, Mapping) else {"content": body})],
    }


def fold(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace's spans (in time order) with each model call's events and older attributes
    read into `gen_ai.input.messages` and `gen_ai.output.messages`; log records are folded
    into the span they belong to (a record whose span is not in the trace stands alone)."""
    by_id = {s["span_id"]: s for s in spans if s["span_id"]}
    kept = []
    for span in spans:
        owner = by_id.get(span["parent_id"]) if not span["span_id"] else None
        if owner is not None and span.get("events"):
            owner.setdefault("events", []).extend(span["events"])
        else:
            kept.append(span)
    for span in kept:
        attrs = span["attributes"]
        if "gen_ai.input.messages" not in attrs:
            _from_events(attrs, span.get("events") or ())
            _from_prompt(attrs)
    return kept


def _from_events(attrs: dict[str, Any], events: Any) -> None:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, body in events:
        if name == "gen_ai.choice":
            if not outputs and body.get("index") in (None, 0, "0"):
                message = _loaded(body.get("message"))
                message = message if isinstance(message, Mapping) else {"content": message}
                outputs.append(_message("assistant", message))
        else:
            inputs.append(_message(ROLES[name], body))
    if inputs:
        attrs["gen_ai.input.messages"] = inputs
        attrs["gen_ai.output.messages"] = outputs


def _from_prompt(attrs: dict[str, Any]) -> None:
    prompt = _loaded(attrs.get("gen_ai.prompt"))
    if not isinstance(prompt, list):
        return
    attrs["gen_ai.input.messages"] = prompt
    completion = _loaded(attrs.get("gen_ai.completion"))
    if isinstance(completion, Mapping):
        text = completion.get("text", completion.get("content"))
        completion = [_message("assistant", {"content": text})]
    elif isinstance(completion, str):
        completion = [_message("assistant", {"content": completion})]
    attrs["gen_ai.output.messages"] = completion if isinstance(completion, list) else []


def _message(role: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One event's body as a message in the GenAI conventions' parts."""
    role = str(body.get("role") or role)
    parts = _content_parts(_loaded(body.get("content")), role, str(body.get("id") or ""))
    calls = _loaded(body.get("tool_calls")) or []
    if not isinstance(calls, list):
        raise ValueError(f"the {role} message's tool_calls are not a list: {calls!r:.60}")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValueError(f"a tool call of the {role} message names no function: {call!r:.60}")
        parts.append(
            {
                "type": "tool_call",
                "id": str(call.get("id") or ""),
                "name": function["name"],
                "arguments": function.get("arguments") or {},
            }
        )
    return {"role": role, "parts": parts}


def _content_parts(content: Any, role: str, answers: str) -> list[dict[str, Any]]:
    """A message's content as parts: text, or a tool's answer to the call `answers`."""
    if content is None:
        return []
    if role == "tool" and not isinstance(content, list):
        return [{"type": "tool_call_response", "id": answers, "response": content}]
    if not isinstance(content, list):
        return [{"type": "text", "content": str(content)}]
    return [part for block in content for part in _block(block)]


def _block(block: Any) -> list[dict[str, Any]]:
    """One content block (text, a tool use, a tool's result)."""
    if isinstance(block, str):
        return [{"type": "text", "content": block}]
    if not isinstance(block, Mapping):
        return []
    if isinstance(block.get("toolUse"), Mapping):
        use = block["toolUse"]
        call_id = str(use.get("toolUseId") or "")
        return [
            {
                "type": "tool_call",
                "id": call_id,
                "name": str(use["name"]),
                "arguments": use.get("input") or {},
            }
        ]
    if isinstance(block.get("toolResult"), Mapping):
        result = block["toolResult"]
        texts = [b.get("text") for b in result.get("content") or () if isinstance(b, Mapping)]
        response = "".join(t for t in texts if isinstance(t, str))
        return [
            {
                "type": "tool_call_response",
                "id": str(result.get("toolUseId") or ""),
                "response": _loaded(response),
            }
        ]
    text = block.get("text", block.get("content"))
    return [{"type": "text", "content": str(text)}] if text is not None else []
