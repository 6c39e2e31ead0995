"""OpenTelemetry traces as transcripts, so an agent instrumented elsewhere can be scored here.

Accepted inputs (JSON):
- the OTLP JSON export: `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}` with typed
  attribute values (`{"key": "tool.name", "value": {"stringValue": "get_user"}}`);
- a list of spans with plain attribute mappings: the simplified form of UiPath's examples
  (`{"name", "start_time", "attributes": {"tool.name", "output.value"}}`) or what the Python
  SDK's `span.to_json()` prints (`context.trace_id`, `parent_id`, `status.status_code`).

Conventions (also in docs/how-to/importers.md):
- A tool span has `tool.name` (OpenInference, UiPath) or `gen_ai.tool.name` (GenAI semantic
  conventions). Its arguments come from `input.value` or `gen_ai.tool.call.arguments` (JSON
  text; none given = no arguments), its output from `output.value` or
  `gen_ai.tool.call.result` (JSON text is parsed, anything else kept as text), its error from
  an ERROR status.
- Calls are ordered by start time, then by position in the file. Each trace is one transcript;
  several traces of one case become its trials 0, 1, ...
- A root span that is not a tool span and has an `output.value` gives the final answer.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalspec._interop.records import (
    RecordFault,
    Refusal,
    blame,
    errored_transcript,
    refused_all,
    what_it_is,
)
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.errors import UsageError
from evalspec._util.reading import MAX_VALUE_DEPTH, display_name, loads_untrusted, read_json

TOOL_NAME_KEYS = ("tool.name", "gen_ai.tool.name")
INPUT_KEYS = ("input.value", "gen_ai.tool.call.arguments")
OUTPUT_KEYS = ("output.value", "gen_ai.tool.call.result")
CALL_ID_KEYS = ("tool_call.id", "gen_ai.tool.call.id")


def _otlp_value(value: Mapping[str, Any]) -> Any:
    """A typed OTLP attribute value (`{"stringValue": ...}`, ...) as a plain value.

    ValueError, in words, for a value that does not hold what its type says.
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"an attribute value must be an object, got {value!r:.40}")
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return _number(value["intValue"], int, "intValue")
    if "doubleValue" in value:
        return _number(value["doubleValue"], float, "doubleValue")
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in (value["arrayValue"] or {}).get("values", ())]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values", ()))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"]).decode("utf-8", errors="replace")
    return None


def _number(raw: Any, kind: type, key: str) -> Any:
    try:
        number = kind(raw)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{key} {raw!r:.40} is not a number") from None
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{key} {raw!r:.40} is not a finite number")
    return number


def _attributes(raw: Any) -> dict[str, Any]:
    """Span attributes as a mapping, from either a mapping or OTLP's list of key/value pairs."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, list):
        return {
            str(a["key"]): _otlp_value(a.get("value") or {})
            for a in raw
            if isinstance(a, Mapping) and "key" in a
        }
    return {}


def _time(value: Any) -> int | float:
    """Start times as sortable numbers: nanoseconds, seconds, or ISO text all sort right.

    Kept as they were written (an int compares exactly with a float): a start of 400 digits
    sorts last, never overflows a float."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.isdigit():
            try:
                return int(value)
            except ValueError:  # more digits than Python converts: no time, as any bad text
                return 0.0
        from datetime import datetime

        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9
        except ValueError:
            return 0.0
    return 0.0


def _error(status: Any) -> str | None:
    if not isinstance(status, Mapping):
        return None
    code = status.get("code", status.get("status_code"))
    if code in (2, "2", "ERROR", "STATUS_CODE_ERROR"):
        return str(status.get("message") or status.get("description") or "error")
    return None


def _flat(span: Mapping[str, Any], order: int) -> dict[str, Any]:
    """One span in a single shape, whatever form it came in."""
    raw_context = span.get("context")
    context: Mapping[str, Any] = raw_context if isinstance(raw_context, Mapping) else {}
    return {
        "trace_id": str(span.get("traceId") or context.get("trace_id") or ""),
        "span_id": str(span.get("spanId") or context.get("span_id") or ""),
        "parent_id": str(span.get("parentSpanId") or span.get("parent_id") or ""),
        "name": str(span.get("name") or ""),
        "start": _time(
            span.get("startTimeUnixNano", span.get("start_time", span.get("startTime")))
        ),
        "order": order,
        "attributes": _attributes(span.get("attributes")),
        "error": _error(span.get("status")),
    }


def read_spans(
    source: str | Path | Any, refused: list[Refusal] | None = None
) -> list[dict[str, Any]]:
    """Spans from a file or parsed JSON, flattened to one shape (see the module docstring).

    With `refused`, an entry that is no span, or a span that cannot be read, is refused on its
    own (appended there); a span's refusal names its trace (`Refusal.record`: `trace <id>`),
    whose transcript is then errored. Without it, the first such is a ValueError/UsageError."""
    data, name = _read(source)
    spans: list[Mapping[str, Any]] = []
    batches = data if isinstance(data, list) else [data]
    for i, item in enumerate(batches):
        if isinstance(item, Mapping) and "resourceSpans" in item:
            for resource in item.get("resourceSpans") or ():
                for scope in (
                    resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or ()
                ):
                    spans.extend(scope.get("spans") or ())
        elif isinstance(item, Mapping) and isinstance(item.get("spans"), list):
            spans.extend(item["spans"])
        elif isinstance(item, Mapping) and "name" in item:
            spans.append(item)
        elif refused is not None:
            refused.append(
                Refusal(f"entry-{i + 1}", name, 1, f"{NOT_SPANS}, got {what_it_is(item)}")
            )
        else:
            raise UsageError(f"{NOT_SPANS}, got {what_it_is(item)}")
    flat = []
    for i, span in enumerate(spans):
        try:
            with blame(name):
                flat.append(_flat(span, i))
        except RecordFault as fault:
            if refused is None:
                raise ValueError(fault.reason) from None
            refused.append(Refusal(f"trace {_trace_id(span)}", name, 1, f"span {i + 1}: {fault}"))
    return flat


NOT_SPANS = "expected OTLP JSON (resourceSpans) or a list of spans with name and attributes"


def _trace_id(span: Any) -> str:
    """The trace a span says it is in, as far as it can be read ("" when it cannot)."""
    if not isinstance(span, Mapping):
        return ""
    context = span.get("context")
    context = context if isinstance(context, Mapping) else {}
    return str(span.get("traceId") or context.get("trace_id") or "")


def _first(attrs: Mapping[str, Any], keys: Iterable[str]) -> Any:
    return next((attrs[k] for k in keys if k in attrs), None)


def _json_or_text(value: Any) -> Any:
    """The JSON a text attribute holds, or the text: JSON with NaN, Infinity, a number that
    overflows or deep nesting stays text, as a live tool's output does."""
    if isinstance(value, str):
        try:
            return loads_untrusted(value, MAX_VALUE_DEPTH)
        except ValueError:
            return value
    return value


def _tool_call(span: Mapping[str, Any], index: int) -> ToolCall:
    attrs = span["attributes"]
    raw_input = _first(attrs, INPUT_KEYS)
    if raw_input is None:
        arguments: dict[str, Any] | None = {}
        raw = ""
    else:
        parsed = _json_or_text(raw_input)
        arguments = parsed if isinstance(parsed, dict) else None
        raw = raw_input if isinstance(raw_input, str) else json.dumps(raw_input, default=str)
    return ToolCall(
        name=str(_first(attrs, TOOL_NAME_KEYS)),
        arguments=arguments,
        raw_arguments=raw,
        id=str(_first(attrs, CALL_ID_KEYS) or span["span_id"] or f"span_{index}"),
        output=_json_or_text(_first(attrs, OUTPUT_KEYS)),
        error=span["error"],
    )


def otel_transcripts(
    source: str | Path | Any,
    *,
    case: str,
    model: str = "otel",
    refused: list[Refusal] | None = None,
) -> list[Transcript]:
    """One transcript per trace in `source`, all for `case` (several traces = trials).

    With `refused`, a span that cannot be read is refused (appended there) and its trace's
    transcript is errored (a call missing would make its score wrong): it fails."""
    spans = read_spans(source, refused)
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(span["trace_id"], []).append(span)
    spans_refused = [r for r in refused or () if r.record.startswith("trace ")]
    broken = {r.record.removeprefix("trace "): r.reason for r in spans_refused}
    for trace_id in broken:
        traces.setdefault(trace_id, [])
    out = []
    for trial, (trace_id, members) in enumerate(traces.items()):
        if trace_id in broken:
            item = f"otel:{case}:{trace_id or trial}"
            out.append(errored_transcript(item, case, model, broken[trace_id], "import:otel"))
            continue
        members.sort(key=lambda s: (s["start"], s["order"]))
        tools = [s for s in members if _first(s["attributes"], TOOL_NAME_KEYS) is not None]
        calls = tuple(_tool_call(s, i) for i, s in enumerate(tools))
        ids = {s["span_id"] for s in members if s["span_id"]}
        roots = [
            s
            for s in members
            if s not in tools
            and (not s["parent_id"] or s["parent_id"] not in ids)
            and _first(s["attributes"], ("output.value",)) is not None
        ]
        final = None
        if roots:
            value = roots[0]["attributes"]["output.value"]
            final = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append(
            Transcript(
                item_id=f"otel:{case}:{trace_id or trial}",
                case=case,
                model=model,
                trial=trial,
                tool_calls=calls,
                final_answer=final,
                source="import:otel",
            )
        )
    if not out:
        raise _found_nothing(source, refused)
    return out


def _read(source: str | Path | Any) -> tuple[Any, str]:
    """The parsed spans and the name messages give them (a file's name, or "the spans")."""
    if isinstance(source, str | Path):
        return read_json(Path(source)), display_name(Path(source))
    return source, "the spans"


def _found_nothing(source: str | Path | Any, refused: list[Refusal] | None) -> UsageError:
    """Why nothing was imported: each entry's refusal, or what the input held instead of spans."""
    if refused:
        return refused_all(refused, "an OTLP JSON export or a JSON list of spans")
    data, name = _read(source)
    return UsageError(f"{name}: no spans found: {_held(data)}; {NOT_SPANS}")


def _held(data: Any) -> str:
    """What an input with no span in it held, in words."""
    if isinstance(data, list) and not data:
        return "the list is empty"
    batches = data if isinstance(data, list) else [data]
    exports = [b for b in batches if isinstance(b, Mapping) and "resourceSpans" in b]
    if exports:
        resources = sum(len(b.get("resourceSpans") or ()) for b in exports)
        return f"{len(exports)} export(s) with {resources} resourceSpans and no span in them"
    return what_it_is(data)
