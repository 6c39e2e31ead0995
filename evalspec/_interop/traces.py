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
- the older forms (one event per message, `gen_ai.prompt`): see evalspec._interop.trace_events;
- one conversation over several traces: traces naming the same `gen_ai.conversation.id` (or
  `session.id`) are its turns, in time order.

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
from typing import Any, BinaryIO

from evalspec._interop.otel import (
    NOT_SPANS,
    _attributes,
    _error,
    _json_or_text,
    _time,
)
from evalspec._interop.records import Refusal, what_it_is
from evalspec._interop.trace_events import fold, log_record, span_events
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
    start: int | float = 0
    """When its first span started (turns of one conversation are put in this order)."""
    grouped: bool = False
    """Whether `trace` is a conversation id its traces named (`traces` of them), not a
    trace id."""
    traces: int = 0


# ------------------------------------------------------------------------------- reading


def read_traces(path: Path, refused: list[Refusal]) -> Iterator[Conversation]:
    """The conversations of a file, one at a time; what cannot be read is refused.

    A trace whose spans name a conversation (`gen_ai.conversation.id`, OpenInference's
    `session.id`) is one turn of it: such traces are put together after the others, each
    conversation read back from the lines an index of the file says hold its spans."""
    name = display_name(path)
    with open_regular(path, name, limit=MAX_LOG_BYTES) as fh:
        whole = _whole_document(fh, name)
        if whole is not None:
            spans = _spans_of(parse_json(whole, name), 1, name, refused)
            for span in spans:
                span["line"] = 1
            yield from _in_memory(spans, name, refused)
            return
        if not _mentions_conversations(fh):
            yield from _stream(fh, name, refused, None)
            return
        index = _index(fh, name)
        try:
            yield from _stream(fh, name, refused, index)
            for conversation_id, lines in index.conversations():
                spans = list(_spans_at(fh, name, lines, index, conversation_id))
                yield from _grouped(conversation_id, spans, name, lines[0][1], refused)
        finally:
            index.close()


def _whole_document(fh: BinaryIO, name: str) -> str | None:
    """The file's text when it is one JSON document (a list, or pretty-printed), else None;
    such a file is read whole, so only up to MAX_FILE_BYTES."""
    head = fh.read(1 << 16)
    if head.lstrip()[:1] == b"[" or _one_document(head):
        rest = fh.read(MAX_FILE_BYTES + 1 - len(head))
        if len(head) + len(rest) > MAX_FILE_BYTES:
            raise input_error(
                name,
                f"one JSON document over {MAX_FILE_BYTES >> 20} MiB is not read whole",
                "export JSON Lines (one OTLP export per line): those are read a line at a "
                "time, up to 1 GiB",
            )
        return (head + rest).decode("utf-8", errors="replace")
    return None


def _lines(
    fh: BinaryIO, name: str, refused: list[Refusal]
) -> Iterator[tuple[int, int, list[dict[str, Any]]]]:
    """(line, byte offset, spans) of each JSON line; a line that is not JSON is refused, and
    one over MAX_FILE_BYTES is skipped unread (held whole, a line of a gigabyte would be
    decoded and parsed at several times its size)."""
    fh.seek(0)
    offset = 0
    number = 0
    while raw := fh.readline(MAX_FILE_BYTES + 1):
        number += 1
        start, offset = offset, offset + len(raw)
        if len(raw) > MAX_FILE_BYTES and not raw.endswith(b"\n"):
            offset += _skip_line(fh)
            why = f"the line is over {MAX_FILE_BYTES >> 20} MiB; it was not read"
            refused.append(Refusal(f"line-{number}", name, number, why))
            continue
        if raw.strip():
            spans = _parsed_line(raw, number, name, refused)
            if spans is not None:
                yield number, start, spans


def _skip_line(fh: BinaryIO) -> int:
    """Read past the rest of the current line; the bytes skipped."""
    skipped = 0
    while more := fh.readline(1 << 20):
        skipped += len(more)
        if more.endswith(b"\n"):
            break
    return skipped


def _parsed_line(
    raw: bytes, number: int, name: str, refused: list[Refusal]
) -> list[dict[str, Any]] | None:
    try:
        item = parse_json(raw.decode("utf-8", errors="replace"), name, number)
    except InputError as exc:
        at = exc.problems[0] if exc.problems else None
        why, column = (at.message, at.column) if at else (str(exc), 1)
        refused.append(Refusal(f"line-{number}", name, number, why, column))
        return None
    return _spans_of(item, number, name, refused)


def _stream(
    fh: BinaryIO, name: str, refused: list[Refusal], grouped: Index | None
) -> Iterator[Conversation]:
    """The conversations of traces that name none, each handed on once its root span is read
    (spans of the `grouped` traces are left for later)."""
    open_traces: dict[str, list[dict[str, Any]]] = {}
    rooted: set[str] = set()
    done: OrderedDict[str, None] = OrderedDict()
    for line, _, spans in _lines(fh, name, refused):
        for span in spans:
            trace = _trace_key(span, line)
            span["line"] = line
            if grouped is not None and grouped.conversation(trace):
                continue
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


def _trace_key(span: Mapping[str, Any], line: int) -> str:
    return str(span["trace_id"] or f"line-{line}")


LATE_SPAN = (
    "a span of this trace comes after its root span; export each trace's spans together "
    "(the root span ends last)"
)


# ---------------------------------------------------------------- conversations by id

CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
"""Attributes naming the conversation a trace is one turn of (GenAI conventions,
OpenInference)."""
OLD_SCOPE = "instrumentationLibrarySpans"
"""What OTLP called `scopeSpans` before v0.15 (older exporters still write it)."""
MAX_ID = 256
"""The longest conversation id read; a longer one is cut (it names a case)."""


class Index:
    """Where each conversation's traces are in a JSON Lines file: the first pass's result,
    kept in a temporary database on disk (memory stays flat however many traces there are)."""

    def __init__(self) -> None:
        import sqlite3  # only when needed: its import costs memory

        self.db = sqlite3.connect("")  # "": a private database in a file deleted on close
        self.db.executescript(
            "CREATE TABLE at_line (trace TEXT, offset INTEGER, line INTEGER,"
            " PRIMARY KEY (trace, offset));"
            "CREATE TABLE named (trace TEXT PRIMARY KEY, conversation TEXT);"
            "CREATE INDEX by_conversation ON named (conversation);"
        )

    def add(self, trace: str, offset: int, line: int, conversation: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO at_line VALUES (?, ?, ?)", (trace, offset, line))
        if conversation:
            self.db.execute("INSERT OR IGNORE INTO named VALUES (?, ?)", (trace, conversation))

    def conversation(self, trace: str) -> str:
        """The conversation `trace` is a turn of ("" when it names none)."""
        row = self.db.execute("SELECT conversation FROM named WHERE trace = ?", (trace,))
        found = row.fetchone()
        return str(found[0]) if found else ""

    def conversations(self) -> Iterator[tuple[str, list[tuple[int, int]]]]:
        """Each conversation (in the order it first appears) and the (byte offset, line) of
        every line holding a span of it."""
        order = self.db.execute(
            "SELECT n.conversation FROM named n JOIN at_line a USING (trace)"
            " GROUP BY n.conversation ORDER BY MIN(a.offset)"
        )
        for (conversation_id,) in order:
            lines = self.db.execute(
                "SELECT DISTINCT a.offset, a.line FROM named n JOIN at_line a USING (trace)"
                " WHERE n.conversation = ? ORDER BY a.offset",
                (conversation_id,),
            ).fetchall()
            yield str(conversation_id), [(int(o), int(n)) for o, n in lines]

    def close(self) -> None:
        self.db.close()


def _mentions_conversations(fh: BinaryIO) -> bool:
    """Whether any conversation attribute is written in the file (a cheap scan of bytes, so a
    file with none is read once)."""
    fh.seek(0)
    tail = b""
    while chunk := fh.read(1 << 16):
        window = tail + chunk
        if any(key.encode() in window for key in CONVERSATION_KEYS):
            return True
        tail = window[-64:]
    return False


def _index(fh: BinaryIO, name: str) -> Index:
    """The first pass: which conversation each trace belongs to, and the lines of each."""
    index = Index()
    with index.db:  # one transaction
        for line, offset, spans in _lines(fh, name, []):  # the second pass refuses
            for span in spans:
                index.add(_trace_key(span, line), offset, line, span["conversation"])
    return index


def _spans_at(
    fh: BinaryIO,
    name: str,
    lines: list[tuple[int, int]],
    index: Index,
    wanted: str,
) -> Iterator[dict[str, Any]]:
    """The spans of one conversation's traces, read back from the lines that hold them."""
    for offset, line in lines:
        fh.seek(offset)
        for span in _parsed_line(fh.readline(), line, name, []) or ():
            if index.conversation(_trace_key(span, line)) == wanted:
                span["line"] = line
                yield span


def _in_memory(
    spans: list[dict[str, Any]], name: str, refused: list[Refusal]
) -> Iterator[Conversation]:
    """The conversations of one JSON document, read whole: traces naming no conversation one
    by one, then the conversations traces name."""
    traces: dict[str, list[dict[str, Any]]] = {}
    named: dict[str, str] = {}
    for span in spans:
        trace = _trace_key(span, 1)
        traces.setdefault(trace, []).append(span)
        if span["conversation"]:
            named.setdefault(trace, span["conversation"])
    for trace, members in traces.items():
        if trace not in named:
            yield from _conversation(trace, members, name, refused)
    by_id: dict[str, list[dict[str, Any]]] = {}
    for trace, conversation_id in named.items():
        by_id.setdefault(conversation_id, []).extend(traces[trace])
    for conversation_id, members in by_id.items():
        yield from _grouped(conversation_id, members, name, 1, refused)


def _grouped(
    conversation_id: str, spans: list[dict[str, Any]], name: str, line: int, refused: list[Refusal]
) -> Iterator[Conversation]:
    """One conversation over several traces: each trace read as a turn, in time order."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(_trace_key(span, span["line"]), []).append(span)
    parts, why = [], ""
    for trace, members in traces.items():
        try:
            parts.append(conversation(trace, members))
        except NotAConversation as exc:  # a trace of tools alone is no turn
            why = str(exc)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            why = str(exc) or type(exc).__name__
            break
    else:
        whole = joined(conversation_id, parts) if parts else None
        why = _held(whole) if whole is not None else why
        if whole is not None and not why:
            yield whole
            return
    record = f"conversation {conversation_id}"
    refused.append(Refusal(record, name, line, why or "no trace holds the conversation"))


def joined(conversation_id: str, parts: list[Conversation]) -> Conversation:
    """Turns of one conversation (each a trace's conversation) as one: a turn's messages that
    repeat the end of those before it (the history a model call is sent again) are read once."""
    parts.sort(key=lambda c: c.start)
    out = Conversation(conversation_id, parts[0].line, start=parts[0].start, grouped=True)
    for part in parts:
        out.model = part.model or out.model
        out.system = part.system or out.system
        out.tools.update(part.tools)
        out.messages += part.messages[_overlap(out.messages, part.messages) :]
        out.traces += 1
    return out


def _overlap(before: list[Message], after: list[Message]) -> int:
    """How many messages `after` starts with that `before` ends with (the most)."""
    if not before or not after:
        return 0
    tail, head = [_key(m) for m in before], [_key(m) for m in after]
    first = head[0]
    for k in range(min(len(tail), len(head)), 0, -1):
        if tail[-k] == first and tail[-k:] == head[:k]:
            return k
    return 0


def _key(message: Message) -> tuple[Any, ...]:
    """What makes a message the same one when it is sent again (not the answers found later)."""
    calls = tuple(
        (c.name, json.dumps(c.arguments, sort_keys=True, default=str)) for c in message.calls
    )
    response = json.dumps(message.response, sort_keys=True, default=str)
    return (message.role, message.text, calls, message.answers, response)


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
    records: list[Any] = []
    items = item if isinstance(item, list) else [item]
    for k, entry in enumerate(items, 1):
        if isinstance(entry, Mapping) and "resourceSpans" in entry:
            for resource in entry.get("resourceSpans") or ():
                for scope in resource.get("scopeSpans") or resource.get(OLD_SCOPE) or ():
                    raw.extend(scope.get("spans") or ())
        elif isinstance(entry, Mapping) and "resourceLogs" in entry:
            for resource in entry.get("resourceLogs") or ():
                for scope in resource.get("scopeLogs") or ():
                    records.extend(scope.get("logRecords") or ())
        elif isinstance(entry, Mapping) and isinstance(entry.get("spans"), list):
            raw.extend(entry["spans"])
        elif isinstance(entry, Mapping) and ("name" in entry or "attributes" in entry):
            raw.append(entry)
        elif isinstance(entry, Mapping) and any(_is_attribute(k) for k in entry):
            raw.append({"attributes": entry})  # a span's attributes alone
        else:  # named by its place in a JSON list, and said what it is instead
            record = f"line-{line} entry-{k}" if isinstance(item, list) else f"line-{line}"
            refused.append(Refusal(record, name, line, f"{NOT_SPANS}, got {what_it_is(entry)}"))
    out = []
    for i, span in enumerate(raw):
        try:
            out.append(_flat_span(span, i))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            refused.append(Refusal(f"line-{line}", name, line, f"span {i + 1}: {exc}"))
    for i, record in enumerate(records):
        try:
            logged = log_record(record, len(raw) + i)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            refused.append(Refusal(f"line-{line}", name, line, f"log record {i + 1}: {exc}"))
            continue
        if logged is not None:
            out.append(logged)
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
        "conversation": _conversation_id(attributes),
        "events": span_events(span),
    }


def _conversation_id(attributes: Mapping[str, Any]) -> str:
    value = next((attributes[k] for k in CONVERSATION_KEYS if attributes.get(k)), "")
    return str(value)[:MAX_ID] if isinstance(value, str | int) else ""


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
    spans = fold(spans)
    model_spans = [s for s in spans if _has_messages(s["attributes"])]
    if not model_spans:
        raise NotAConversation(
            "no span holds the conversation (gen_ai.input.messages or llm.input_messages)"
        )
    last = model_spans[-1]["attributes"]
    found = Conversation(trace, spans[0].get("line", 1), model=_model(last))
    found.start = spans[0]["start"]
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
    why = _held(found)
    if why:
        raise NotHeld(why)
    return found


class NotHeld(ValueError):
    """A conversation the suite could not hold (why): refused, never a part left out."""


def _held(found: Conversation) -> str:
    """Why the suite could not hold this conversation ("" when it can): a tool name it cannot
    hold (a space, a control code, 300 characters), more calls than a case may expect, or a
    value nested deeper than the suite's YAML may be around it. Refusing the record keeps
    the suite written valid."""
    calls = [c for m in found.messages for c in m.calls]
    for tool in [c.name for c in calls] + list(found.tools):
        if not TOOL_NAME.fullmatch(tool):
            return (
                f"the tool name {tool[:80]!r} is not one a suite can hold (1 to 64 letters, "
                "digits, `_`, `.` or `-`)"
            )
    if len(calls) > MAX_CALLS_PER_CASE:
        return f"it makes {len(calls)} tool calls; a case expects at most {MAX_CALLS_PER_CASE}"
    for call in calls:
        for what, value in (("arguments", call.arguments), ("output", call.output)):
            if json_depth_error(json.dumps(value, default=str), VALUE_DEPTH) is not None:
                return (
                    f"the {what} of call {call.id[:80]!r} ({call.name}) nest deeper than "
                    f"{VALUE_DEPTH} levels, more than a suite holds around them"
                )
    return ""


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
