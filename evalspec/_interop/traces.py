"""Production traces as conversations: OpenTelemetry GenAI and OpenInference spans read into
user turns, the model's calls and the tools' answers.

What a trace says (also in docs/how-to/importers.md):
- the conversation: the messages of its last model call (`gen_ai.input.messages` then
  `gen_ai.output.messages`, the GenAI semantic conventions' parts: text, tool_call,
  tool_call_response; or OpenInference's `llm.input_messages.N.message.*` and
  `llm.output_messages.N.message.*`); on a span or on one of its events;
- the system prompt: `gen_ai.system_instructions`, or the conversation's system messages;
- the tools' answers: tool messages in the conversation, and `execute_tool` spans
  (`gen_ai.tool.call.id`, `gen_ai.tool.call.result`; `tool.name` and `output.value`), an ERROR
  status being the tool's error;
- tool definitions: `gen_ai.tool.definitions` (else the parameters are read off the calls).

Files are read one JSON line at a time (an OTLP export per line, as the Collector's file
exporter writes; or a span, or a span's attributes alone); a file that is one JSON document is
read whole. A trace's spans are kept until its root span has been read, then the trace is
handed on and forgotten: memory follows the traces open at once, not the file's length.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from evalspec._interop.otel import NOT_SPANS, _attributes, _error, _json_or_text, _time
from evalspec._interop.records import Refusal
from evalspec._language.tools import TOOL_NAME_PATTERN
from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._suite.yaml_tree import MAX_DEPTH
from evalspec._util.errors import InputError
from evalspec._util.reading import (
    MAX_FILE_BYTES,
    MAX_LOG_BYTES,
    display_name,
    input_error,
    json_depth_error,
    open_regular,
    parse_json,
)

MESSAGE_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
VALUE_DEPTH = MAX_DEPTH - 16
"""How deep a call's arguments or output may nest: the suite's YAML (MAX_DEPTH in all) holds
them under a case's turn, expected call and critic, or a tool's answer rule."""
FORGOTTEN = 10_000
"""Trace ids remembered after their trace was handed on: a span of one read later is refused
(its trace would be split in two)."""


@dataclass
class Call:
    """One call the model made in a conversation, with what the tool answered."""

    id: str
    name: str
    arguments: Any
    output: Any = None
    error: str | None = None


@dataclass
class Message:
    role: str
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    answers: str = ""
    """For a tool message: the id of the call it answers."""
    response: Any = None


@dataclass
class Conversation:
    """One trace, read: where it came from, and what was said and called."""

    trace: str
    line: int
    model: str = ""
    system: str = ""
    messages: list[Message] = field(default_factory=list)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool definitions the trace declares, by name (`description`, `parameters`)."""


# ------------------------------------------------------------------------------- reading


def read_traces(path: Path, refused: list[Refusal]) -> Iterator[Conversation]:
    """The conversations of a file, one trace at a time; what cannot be read is refused."""
    name = display_name(path)
    open_traces: dict[str, list[dict[str, Any]]] = {}
    rooted: set[str] = set()
    done: OrderedDict[str, None] = OrderedDict()
    for line, spans in _batches(path, name, refused):
        for span in spans:
            trace = span["trace_id"] or f"line-{line}"
            span["line"] = line
            if trace in done:
                # named apart from the case its trace became
                refused.append(Refusal(f"trace {trace} (line {line})", name, line, LATE_SPAN))
                continue
            open_traces.setdefault(trace, []).append(span)
            if not span["parent_id"]:
                rooted.add(trace)
        for trace in [t for t in open_traces if t in rooted]:
            yield from _conversation(trace, open_traces.pop(trace), name, refused)
            rooted.discard(trace)
            done[trace] = None
            if len(done) > FORGOTTEN:
                done.popitem(last=False)
    for trace, spans in open_traces.items():  # no root span: what was read of them
        yield from _conversation(trace, spans, name, refused)


LATE_SPAN = (
    "a span of this trace comes after its root span; export each trace's spans together "
    "(the root span ends last)"
)


def _batches(
    path: Path, name: str, refused: list[Refusal]
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(line, spans) of each JSON line, or of the whole file when it is one JSON document."""
    with open_regular(path, name, limit=MAX_LOG_BYTES) as fh:
        head = fh.read(1 << 16)
        if head.lstrip()[:1] == b"[" or _one_document(head):
            rest = fh.read(MAX_FILE_BYTES + 1 - len(head))
            if len(head) + len(rest) > MAX_FILE_BYTES:
                raise input_error(
                    name,
                    f"one JSON document over {MAX_FILE_BYTES >> 20} MiB is not read whole",
                    "export JSON Lines (one OTLP export per line): those are read a line at "
                    "a time, up to 1 GiB",
                )
            text = (head + rest).decode("utf-8", errors="replace")
            yield 1, _spans_of(parse_json(text, name), 1, name, refused)
            return
        fh.seek(0)
        for number, raw in enumerate(_lines(fh), 1):
            if raw is None:
                why = f"the line is over {MAX_FILE_BYTES >> 20} MiB; it was not read"
                refused.append(Refusal(f"line-{number}", name, number, why))
                continue
            if not raw.strip():
                continue
            try:
                item = parse_json(raw.decode("utf-8", errors="replace"), name, number)
            except InputError as exc:
                at = exc.problems[0] if exc.problems else None
                why, column = (at.message, at.column) if at else (str(exc), 1)
                refused.append(Refusal(f"line-{number}", name, number, why, column))
                continue
            yield number, _spans_of(item, number, name, refused)


def _lines(fh: IO[bytes]) -> Iterator[bytes | None]:
    """Each line of the file, or None for one over MAX_FILE_BYTES, skipped unread: a single
    line of a gigabyte would otherwise be held, decoded and parsed whole."""
    while raw := fh.readline(MAX_FILE_BYTES + 1):
        if len(raw) <= MAX_FILE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        while (more := fh.readline(1 << 20)) and not more.endswith(b"\n"):
            pass
        yield None


def _one_document(head: bytes) -> bool:
    """Whether the file is one JSON document over several lines (pretty-printed), not JSON
    Lines: its first line is not JSON and is left open (`{`, `[`, a trailing comma)."""
    first = head.split(b"\n", 1)[0].strip()
    if not first:
        return True
    try:
        json.loads(first)
    except ValueError:
        return first.endswith((b"{", b"[", b","))
    return False


def _spans_of(item: Any, line: int, name: str, refused: list[Refusal]) -> list[dict[str, Any]]:
    """Every span in one JSON value, flattened (see evalspec._interop.otel)."""
    raw: list[Any] = []
    items = item if isinstance(item, list) else [item]
    for entry in items:
        if isinstance(entry, Mapping) and "resourceSpans" in entry:
            for resource in entry.get("resourceSpans") or ():
                for scope in resource.get("scopeSpans") or ():
                    raw.extend(scope.get("spans") or ())
        elif isinstance(entry, Mapping) and isinstance(entry.get("spans"), list):
            raw.extend(entry["spans"])
        elif isinstance(entry, Mapping) and ("name" in entry or "attributes" in entry):
            raw.append(entry)
        elif isinstance(entry, Mapping) and any(_is_attribute(k) for k in entry):
            raw.append({"attributes": entry})  # a span's attributes alone
        else:
            refused.append(Refusal(f"line-{line}", name, line, NOT_SPANS))
    out = []
    for i, span in enumerate(raw):
        try:
            out.append(_flat_span(span, i))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            refused.append(Refusal(f"line-{line}", name, line, f"span {i + 1}: {exc}"))
    return out


def _is_attribute(key: str) -> bool:
    return key.startswith(("gen_ai.", "llm.", "tool.", "input.", "output."))


def _flat_span(span: Mapping[str, Any], order: int) -> dict[str, Any]:
    context = span.get("context") if isinstance(span.get("context"), Mapping) else {}
    assert isinstance(context, Mapping)
    attributes = _attributes(span.get("attributes"))
    for event in span.get("events") or ():  # GenAI events carry the messages too
        if isinstance(event, Mapping):
            for key, value in _attributes(event.get("attributes")).items():
                attributes.setdefault(key, value)
    return {
        "trace_id": str(span.get("traceId") or context.get("trace_id") or ""),
        "span_id": str(span.get("spanId") or context.get("span_id") or ""),
        "parent_id": str(span.get("parentSpanId") or span.get("parent_id") or ""),
        "start": _time(span.get("startTimeUnixNano", span.get("start_time"))),
        "order": order,
        "attributes": attributes,
        "error": _error(span.get("status")),
    }


# ------------------------------------------------------------------------- conversations


class NotAConversation(ValueError):
    """A trace that holds no conversation evalspec can read (why)."""


def _conversation(
    trace: str, spans: list[dict[str, Any]], name: str, refused: list[Refusal]
) -> Iterator[Conversation]:
    try:
        yield conversation(trace, spans)
    except (NotAConversation, TypeError, ValueError, KeyError, AttributeError) as exc:
        line = spans[0].get("line", 1) if spans else 1
        refused.append(Refusal(f"trace {trace}", name, line, str(exc) or type(exc).__name__))


def conversation(trace: str, spans: list[dict[str, Any]]) -> Conversation:
    """The conversation of one trace's spans (see the module docstring)."""
    spans.sort(key=lambda s: (s["start"], s["order"]))
    model_spans = [s for s in spans if _has_messages(s["attributes"])]
    if not model_spans:
        raise NotAConversation(
            "no span holds the conversation (gen_ai.input.messages or llm.input_messages)"
        )
    last = model_spans[-1]["attributes"]
    found = Conversation(trace, spans[0].get("line", 1), model=_model(last))
    found.messages = [*_messages(last, "input"), *_messages(last, "output")]
    found.system = "\n".join(m.text for m in found.messages if m.role == "system")
    instructed = [s for s in model_spans if "gen_ai.system_instructions" in s["attributes"]]
    found.system = _system(instructed[-1]["attributes"]) if instructed else found.system
    found.messages = [m for m in found.messages if m.role != "system"]
    if not any(m.role == "user" for m in found.messages):
        raise NotAConversation("the conversation has no user message")
    _answer_calls(found, spans)
    for s in spans:
        found.tools.update(_definitions(s["attributes"]))
    _check_suite_holds(found)
    return found


def _check_suite_holds(found: Conversation) -> None:
    """A trace the suite could not hold refuses this trace, not the suite written: a tool name
    it cannot hold (a space, a control code, 300 characters), more calls than a case may
    expect, or a value nested deeper than the suite's YAML may be around it."""
    calls = [c for m in found.messages for c in m.calls]
    for name in [c.name for c in calls] + list(found.tools):
        if not TOOL_NAME.fullmatch(name):
            raise NotAConversation(
                f"the tool name {name[:80]!r} is not one a suite can hold (1 to 64 letters, "
                "digits, `_`, `.` or `-`)"
            )
    if len(calls) > MAX_CALLS_PER_CASE:
        raise NotAConversation(
            f"it makes {len(calls)} tool calls; a case expects at most {MAX_CALLS_PER_CASE}"
        )
    for call in calls:
        for what, value in (("arguments", call.arguments), ("output", call.output)):
            if json_depth_error(json.dumps(value, default=str), VALUE_DEPTH) is not None:
                raise NotAConversation(
                    f"the {what} of call {call.id[:80]!r} ({call.name}) nest deeper than "
                    f"{VALUE_DEPTH} levels, more than a suite holds around them"
                )


def _has_messages(attrs: Mapping[str, Any]) -> bool:
    return "gen_ai.input.messages" in attrs or "llm.input_messages.0.message.role" in attrs


def _model(attrs: Mapping[str, Any]) -> str:
    for key in ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return str(attrs[key])
    return ""


def _parsed(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _messages(attrs: Mapping[str, Any], side: str) -> list[Message]:
    key = f"gen_ai.{side}.messages"
    if key in attrs:
        raw = _parsed(attrs[key])
        if not isinstance(raw, list):
            raise ValueError(f"{key} is not a list of messages")
        return [_genai_message(m) for m in raw]
    return [_oi_message(m) for m in _oi_messages(attrs, side)]


def _genai_message(raw: Any) -> Message:
    """One message in the GenAI conventions' form (`parts`), or the plain `content` one."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"a message is no object: {raw!r:.60}")
    message = Message(str(raw.get("role") or ""))
    texts = []
    if isinstance(raw.get("content"), str):
        texts.append(raw["content"])
    for part in raw.get("parts") or ():
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or ""))
        elif kind == "tool_call":
            message.calls.append(
                Call(str(part.get("id") or ""), str(part["name"]), _arguments(part))
            )
        elif kind == "tool_call_response":
            message.answers = str(part.get("id") or "")
            message.response = _json_or_text(part.get("response"))
    message.text = "".join(texts)
    return message


def _arguments(part: Mapping[str, Any]) -> Any:
    value = part.get("arguments")
    return _json_or_text(value) if isinstance(value, str) else (value or {})


def _oi_messages(attrs: Mapping[str, Any], side: str) -> list[dict[str, Any]]:
    """OpenInference's flattened messages (`llm.input_messages.0.message.role`, ...) as one
    mapping of the keys after `message.` per message, in index order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _OI_MESSAGE.match(key)
        if match and match.group(1) == side:
            found.setdefault(int(match.group(2)), {})[match.group(3)] = value
    return [found[i] for i in sorted(found)]


def _oi_message(raw: dict[str, Any]) -> Message:
    message = Message(str(raw.get("role") or ""))
    texts = [str(raw["content"])] if "content" in raw else []
    contents = sorted(k for k in raw if k.startswith("contents.") and k.endswith(".text"))
    texts += [str(raw[k]) for k in contents]
    message.text = "".join(texts)
    calls: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        if key.startswith("tool_calls."):
            index, _, rest = key.removeprefix("tool_calls.").partition(".tool_call.")
            calls.setdefault(index, {})[rest] = value
    for index in sorted(calls, key=lambda i: int(i) if i.isdigit() else 0):
        call = calls[index]
        arguments = call.get("function.arguments", "{}")
        message.calls.append(
            Call(str(call.get("id") or ""), str(call["function.name"]), _json_or_text(arguments))
        )
    if message.role == "tool":
        message.answers = str(raw.get("tool_call_id") or "")
        message.response = _json_or_text(message.text)
    return message


def _system(attrs: Mapping[str, Any]) -> str:
    raw = attrs.get("gen_ai.system_instructions")
    if raw is None:
        return ""
    parts = _parsed(raw)
    if isinstance(parts, str):
        return parts
    return "\n".join(str(p.get("content") or "") for p in parts if isinstance(p, Mapping))


def _answer_calls(found: Conversation, spans: list[dict[str, Any]]) -> None:
    """Each call's output: the tool message answering it, else its execute_tool span's
    result; a span with an ERROR status makes it the tool's error (its text the tool
    message's, when there is one)."""
    answers = {m.answers: m.response for m in found.messages if m.role == "tool" and m.answers}
    executed: dict[str, tuple[Any, str | None]] = {}
    for s in spans:
        attrs = s["attributes"]
        if "gen_ai.tool.call.id" in attrs or "tool_call.id" in attrs:
            call_id = str(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id"))
            result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
            executed[call_id] = (_json_or_text(result), s["error"])
    for message in found.messages:
        for call in message.calls:
            output, error = executed.get(call.id, (None, None))
            output = answers.get(call.id, output)
            if error is not None:
                text = output if isinstance(output, str) and output else None
                call.error = text or error
            else:
                call.output = output


def _definitions(attrs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool definitions a span declares (`gen_ai.tool.definitions`), by name."""
    raw = attrs.get("gen_ai.tool.definitions")
    if raw is None:
        return {}
    out = {}
    for item in _parsed(raw) or ():
        if not isinstance(item, Mapping):
            continue
        spec = item.get("function") if isinstance(item.get("function"), Mapping) else item
        assert isinstance(spec, Mapping)
        if isinstance(spec.get("name"), str):
            out[spec["name"]] = {
                "description": str(spec.get("description") or ""),
                "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
            }
    return out
