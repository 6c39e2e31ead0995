"""Cases from production traces: OpenTelemetry GenAI and OpenInference conversations become a
suite (user turns, expected calls, the tools answering as they did) and transcripts that score
it offline; many conversations per file, personal data redacted before anything is written,
bad records refused one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import evalspec_cli, evalspec_import, one_turn_trace
from support import imported_traces as imported
from support import otel_call as call
from support import otel_chat as chat
from support import otel_export as export
from support import otel_span as span
from support import otel_text as text
from support import otel_typed as typed

from evalspec import api
from evalspec.records import RunRequest

DATA = Path(__file__).resolve().parent / "data" / "otel_genai"
PUBLIC = [
    "otel_genai_client_span_tool_calls.json",
    "openinference_client_span_tool_calls.json",
    "otel_genai_deprecated_client_span_tool_calls.json",
]
"""Public fixtures of Arize-ai/openinference (Apache-2.0; tests/data/README.md)."""
EVENTS = DATA / "semconv_v1.36_events_tools.jsonl"
"""The GenAI conventions' own example of a tool call in events (log records), v1.36."""


def tool_span(
    trace: str, sid: str, start: int, cid: str, name: str, result: Any, status: int = 1
) -> dict:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": cid,
    }
    if result is not None:
        attrs["gen_ai.tool.call.result"] = json.dumps(result)
    return span(trace, sid, "root", start, status, **attrs)


DEFINITIONS = json.dumps(
    [
        {
            "type": "function",
            "name": "find_order",
            "description": "Find an order by its id.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        }
    ]
)


def two_turn_trace(trace: str = "t-2") -> list[str]:
    """A support conversation over two user turns, split over three export lines as a batch
    exporter writes them: the model's spans, the tools' spans, and the root span last."""
    first = [text("user", "Where is order A17? Mail me at ann@example.com")]
    turn1 = [
        *first,
        call("c1", "find_order", order_id="A17"),
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "c1", "response": {"status": "shipped"}}
            ],
        },
        text("assistant", "It shipped."),
    ]
    turn2 = [
        *turn1,
        text("user", "Cancel it please, account ACC-99812"),
        call("c2", "cancel_order", order_id="A17", reason="not needed"),
    ]
    return [
        export(
            chat(
                trace,
                "s1",
                10,
                first,
                [call("c1", "find_order", order_id="A17")],
                **{
                    "gen_ai.system_instructions": json.dumps(
                        [{"type": "text", "content": "You help shoppers."}]
                    ),
                    "gen_ai.tool.definitions": DEFINITIONS,
                },
            ),
            chat(trace, "s3", 30, turn1[:-1], [text("assistant", "It shipped.")]),
        ),
        export(
            tool_span(trace, "s2", 20, "c1", "find_order", {"status": "shipped"}),
            chat(trace, "s4", 40, turn2[:-1], [turn2[-1]]),
            tool_span(trace, "s5", 50, "c2", "cancel_order", None, status=2),
            chat(
                trace,
                "s6",
                60,
                [
                    *turn2,
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": "c2", "response": "cannot cancel"}
                        ],
                    },
                ],
                [text("assistant", "Sorry, it cannot be cancelled.")],
            ),
        ),
        export(span(trace, "root", "", 0, **{"gen_ai.operation.name": "invoke_agent"})),
    ]


def cases_of(suite: Path) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in yaml.safe_load(suite.read_text(encoding="utf-8"))["cases"]}


@pytest.mark.parametrize("fixture", PUBLIC)
def test_a_public_trace_becomes_a_suite_that_validates_and_scores_offline(
    fixture: str, tmp_path: Path, no_network: None
) -> None:
    suite, runs = tmp_path / "paris.yaml", tmp_path / "paris.jsonl"
    done = evalspec_import(
        "traces", str(DATA / fixture), "--out", str(suite), "--transcripts", str(runs)
    )
    assert done.exit_code == 0, done.output
    assert "1 conversations as cases" in done.output
    loaded = api.load_suite(suite)
    (case,) = loaded.cases
    assert case.messages[-1].content == "Weather in Paris?"
    (expected,) = case.expect.tool_calls
    assert (expected.tool, expected.args) == ("get_weather", {"location": "Paris"})
    (tool,) = loaded.tools
    assert tool.responses[0].when == {"location": "Paris"}
    assert tool.responses[0].output == "rainy, 57°F"
    report = api.score(loaded, api.load_transcripts(runs))
    assert [c.status for c in report.cases] == ["pass"]
    (t,) = api.load_transcripts(runs)
    assert t.final_answer == "The weather in Paris is currently rainy with a temperature of 57°F."


@pytest.mark.parametrize("fixture", PUBLIC)
def test_a_public_trace_replays_its_models_answers_with_no_call(
    fixture: str, tmp_path: Path, no_network: None
) -> None:
    suite = tmp_path / "paris.yaml"
    done = evalspec_import("traces", str(DATA / fixture), "--out", str(suite), "--record")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "paris.recordings.jsonl").is_file()
    result = api.run(RunRequest(suite, record="offline", out=tmp_path / "run"))
    assert [c.status for c in result.report.cases] == ["pass"]
    (t,) = api.load_transcripts(result.run_dir / "transcripts.jsonl")
    assert [(c.name, c.output) for c in t.tool_calls] == [("get_weather", "rainy, 57°F")]
    assert t.final_answer == "The weather in Paris is currently rainy with a temperature of 57°F."


@pytest.mark.slow
def test_traces_imported_for_capture_are_accepted_and_replay(
    tmp_path: Path, no_network: None
) -> None:
    lines = [*two_turn_trace(), *one_turn_trace("t-3", "Oslo")]
    done, suite, _ = imported(tmp_path, lines, "--capture", "--record")
    assert done.exit_code == 0, done.output
    captured = api.run(RunRequest(suite, record="offline", out=tmp_path / "run"))
    assert {c.status for c in captured.report.cases} == {"captured"}
    accepted = evalspec_cli(["capture", "accept", suite, tmp_path / "run"])
    assert accepted.exit_code == 0, accepted.output
    turns = cases_of(suite)["trace t-2"]["turns"]
    assert turns[1]["expect"]["tool_calls"][0]["tool"] == "cancel_order"
    replayed = api.run(RunRequest(suite, record="offline", out=tmp_path / "again"))
    assert {c.status for c in replayed.report.cases} == {"pass"}


def test_many_conversations_per_file_with_turns_tools_and_their_answers(tmp_path: Path) -> None:
    lines = [*two_turn_trace(), *one_turn_trace("t-3", "Oslo"), *one_turn_trace("t-4", "Rome")]
    done, suite, runs = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert "3 conversations as cases" in done.output
    cases = cases_of(suite)
    support = cases["trace t-2"]
    assert support["system"] == "You help shoppers."
    first, second = support["turns"]
    assert first["user"] == "Where is order A17? Mail me at ann@example.com"
    assert first["expect"]["tool_calls"][0]["args"] == {"order_id": "A17"}
    assert second["expect"]["tool_calls"][0]["tool"] == "cancel_order"
    tools = {t["name"]: t for t in yaml.safe_load(suite.read_text(encoding="utf-8"))["tools"]}
    assert tools["find_order"]["description"] == "Find an order by its id."
    assert tools["find_order"]["responses"][0] == {
        "when": {"order_id": "A17"},
        "output": {"status": "shipped"},
    }
    # The failed call (ERROR status on its execute_tool span, answered in text) is an error.
    assert tools["cancel_order"]["responses"][0]["when"] == {
        "order_id": "A17",
        "reason": "not needed",
    }
    assert tools["get_weather"]["parameters"]["properties"] == {"city": {"type": "string"}}
    loaded = api.load_suite(suite)
    report = api.score(loaded, api.load_transcripts(runs))
    assert {c.case: c.status for c in report.cases} == {
        "trace t-2": "pass",
        "trace t-3": "pass",
        "trace t-4": "pass",
    }


def test_personal_data_is_redacted_before_anything_is_written(tmp_path: Path) -> None:
    done, suite, runs = imported(
        tmp_path, two_turn_trace(), "--redact", "email", "--redact", "regex:ACC-[0-9]+", "--record"
    )
    assert done.exit_code == 0, done.output
    for written in (suite, runs, tmp_path / "prod.recordings.jsonl"):
        body = written.read_text(encoding="utf-8")
        assert "ann@example.com" not in body and "ACC-99812" not in body
    turns = cases_of(suite)["trace t-2"]["turns"]
    assert turns[0]["user"] == "Where is order A17? Mail me at [redacted:email]"
    assert turns[1]["user"] == "Cancel it please, account [redacted]"
    assert not list(tmp_path.glob(".prod.yaml*"))  # no part left behind


def test_a_wrong_redaction_rule_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    done, suite, runs = imported(tmp_path, two_turn_trace(), "--redact", "regex:([")
    assert done.exit_code == 2
    assert "--redact 'regex:([': the pattern does not compile" in done.output
    assert not suite.exists() and not runs.exists()
    done, suite, _ = imported(tmp_path, two_turn_trace(), "--redact", "names")
    assert (
        done.exit_code == 2 and "use one of email, phone, ip, card, or regex:PATTERN" in done.output
    )


def test_bad_records_are_refused_alone_and_fail_as_cases(tmp_path: Path) -> None:
    no_messages = export(span("t-9", "root", "", 0, **{"gen_ai.operation.name": "invoke_agent"}))
    late = export(chat("t-3", "s9", 9, [text("user", "again")], []))
    lines = [*one_turn_trace("t-3", "Oslo"), "{not json", no_messages, late]
    done, suite, runs = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert "traces.jsonl:2:2: record line-2 refused: invalid JSON" in done.output
    assert (
        "traces.jsonl:3:1: record trace t-9 refused: no span holds the conversation" in done.output
    )
    assert (
        "traces.jsonl:4:1: record trace t-3 (line 4) refused: a span of this trace comes after"
        in done.output
    )
    cases = cases_of(suite)
    assert "import-refused" in cases["trace t-9"]["tags"]
    report = api.score(api.load_suite(suite), api.load_transcripts(runs))
    status = {c.case: c.status for c in report.cases}
    assert status["trace t-9"] == "error" and status["line-2"] == "error"


def test_each_entry_of_a_list_that_is_no_span_is_refused_by_its_place(tmp_path: Path) -> None:
    """A line holding a JSON list of things that are no spans: each entry refused on its own,
    named by its place and said what it is; each stands as its own failing case (the two
    were one case under one name before, though two refusals were counted)."""
    lines = [*one_turn_trace("t-3", "Oslo"), json.dumps([{"x": 1}, 5])]
    first, second = f"line-{len(lines)} entry-1", f"line-{len(lines)} entry-2"
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert f"record {first} refused: expected OTLP JSON" in said
    assert "got an object with keys 'x'" in said
    assert f"record {second} refused: expected OTLP JSON" in said and "got a number" in said
    cases = cases_of(suite)
    assert all("import-refused" in cases[n]["tags"] for n in (first, second))


def test_a_file_of_nothing_but_bad_records_writes_nothing(tmp_path: Path) -> None:
    done, suite, runs = imported(tmp_path, ["{not json", "[1, 2"])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert "every record was refused, nothing written" in done.output
    assert not suite.exists() and not runs.exists()
    assert not list(tmp_path.glob(".prod*"))


def test_capture_leaves_the_expectations_for_review(tmp_path: Path) -> None:
    done, suite, _ = imported(
        tmp_path, [*two_turn_trace(), *one_turn_trace("t-3", "Oslo")], "--capture"
    )
    assert done.exit_code == 0, done.output
    cases = cases_of(suite)
    assert cases["trace t-3"]["capture"] is True and "expect" not in cases["trace t-3"]
    assert all("expect" not in turn for turn in cases["trace t-2"]["turns"])
    assert [c.capture is not None for c in api.load_suite(suite).cases] == [True, True]


def test_template_text_in_a_trace_stays_text(tmp_path: Path) -> None:
    lines = one_turn_trace("t-5", "{{ range(10**9) | list }}")
    done, suite, runs = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    loaded = api.load_suite(suite)
    assert loaded.cases[0].messages[-1].content == "Weather in {{ range(10**9) | list }}?"
    assert [c.status for c in api.score(loaded, api.load_transcripts(runs)).cases] == ["pass"]


def test_one_pretty_printed_document_is_read_whole(tmp_path: Path) -> None:
    """An OTLP export written as one indented JSON document (not JSON Lines) holds the same
    conversations: every span of every line in one `resourceSpans`."""
    spans = [
        s
        for line in [*two_turn_trace(), *one_turn_trace("t-3", "Oslo")]
        for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    ]
    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    source, suite = tmp_path / "export.json", tmp_path / "prod.yaml"
    source.write_text(json.dumps(document, indent=2), encoding="utf-8")
    done = evalspec_import("traces", str(source), "--out", str(suite))
    assert done.exit_code == 0, done.output
    assert set(cases_of(suite)) == {"trace t-2", "trace t-3"}
    api.load_suite(suite)


def turn_trace(
    trace: str, start: int, inputs: list[dict], answer: str, conversation: dict[str, str]
) -> dict:
    """One user turn as its own trace: a root span and a chat span, the conversation's id on
    the root span (or, with `on_chat`, on the chat span)."""
    root = span(trace, "root", "", start, **{"gen_ai.operation.name": "invoke_agent"})
    if "root" in conversation:
        root = span(trace, "root", "", start, **{"gen_ai.conversation.id": conversation["root"]})
    more = {"gen_ai.conversation.id": conversation["chat"]} if "chat" in conversation else {}
    return {
        "root": root,
        "chat": chat(trace, "c", start + 1, inputs, [text("assistant", answer)], **more),
    }


def three_turns() -> list[dict]:
    """A conversation of three turns, each its own trace named by `gen_ai.conversation.id`:
    the first two send only the new turn, the third the whole history again."""
    asked = [
        text("user", "Where is order A17?"),
        call("c1", "find_order", order_id="A17"),
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": "shipped"}],
        },
    ]
    cancel = [
        text("user", "Cancel it"),
        call("c2", "cancel_order", order_id="A17"),
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": "ok"}]},
    ]
    history = [
        *asked,
        text("assistant", "It shipped."),
        *cancel,
        text("assistant", "Cancelled."),
        text("user", "Thanks"),
    ]
    return [
        turn_trace("a1", 100, asked, "It shipped.", {"root": "conv-A"}),
        turn_trace("a2", 200, cancel, "Cancelled.", {"root": "conv-A"}),
        turn_trace("a3", 300, history, "You are welcome.", {"chat": "conv-A"}),
    ]


def session_turn(trace: str, start: int, said: str, answer: str) -> dict:
    """One turn in OpenInference's attributes, its conversation named by `session.id`."""
    attrs = {
        "session.id": "sess-B",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": said,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": answer,
    }
    return {"root": span(trace, "root", "", start, **attrs)}


@pytest.mark.parametrize("layout", ["json-lines", "one-document"])
def test_turns_traced_apart_are_one_conversation_in_time_order(layout: str, tmp_path: Path) -> None:
    """Each user turn its own trace, linked by gen_ai.conversation.id or session.id, the
    traces written out of order and interleaved with others: one case per conversation, its
    turns in time order, the history a turn sends again read once."""
    a1, a2, a3 = three_turns()
    b1, b2 = session_turn("b1", 150, "Hi", "Hello."), session_turn("b2", 250, "Bye", "Bye.")
    lines = [
        export(a2["chat"]),
        export(b2["root"]),
        *one_turn_trace("t-3", "Oslo"),
        export(a3["chat"], a1["chat"]),
        export(a3["root"], b1["root"]),
        export(a1["root"], a2["root"]),
    ]
    if layout == "json-lines":
        done, suite, runs = imported(tmp_path, lines)
    else:
        every = [
            s
            for line in lines
            for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        ]
        document = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": every}]}]}, indent=1)
        done, suite, runs = imported(tmp_path, [document])
    assert done.exit_code == 0, done.output
    assert "3 conversations as cases" in done.output
    cases = cases_of(suite)
    assert set(cases) == {"conversation conv-A", "conversation sess-B", "trace t-3"}
    conv = cases["conversation conv-A"]
    assert "conversation conv-A (3 traces)" in conv["description"]
    assert [t["user"] for t in conv["turns"]] == ["Where is order A17?", "Cancel it", "Thanks"]
    called = [[c["tool"] for c in t["expect"]["tool_calls"]] for t in conv["turns"][:2]]
    assert called == [["find_order"], ["cancel_order"]]
    assert [t["user"] for t in cases["conversation sess-B"]["turns"]] == ["Hi", "Bye"]
    report = api.score(api.load_suite(suite), api.load_transcripts(runs))
    assert {c.case: c.status for c in report.cases} == {
        "conversation conv-A": "pass",
        "conversation sess-B": "pass",
        "trace t-3": "pass",
    }
    (t,) = [t for t in api.load_transcripts(runs) if t.case == "conversation conv-A"]
    assert [u.final_answer for u in t.user_turns] == [
        "It shipped.",
        "Cancelled.",
        "You are welcome.",
    ]


def test_a_named_conversation_with_no_turn_in_it_is_refused_alone(tmp_path: Path) -> None:
    """Traces that name a conversation but hold no message (tools alone) refuse it, not the
    file; a conversation id of a stranger's length is cut where it names the case."""
    tools_only = span("x1", "root", "", 5, **{"gen_ai.conversation.id": "empty\x1b]0;owned\x07"})
    long_id = "c" * 5000
    a1 = turn_trace("l1", 10, [text("user", "Hi")], "Hello.", {"root": long_id})
    lines = [export(tools_only), export(a1["chat"], a1["root"]), *one_turn_trace("t-3", "Oslo")]
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert "traces.jsonl:1:1: record conversation empty" in done.output
    assert "refused: no span holds" in done.output
    assert "\x1b" not in done.output and "\x07" not in done.output  # shown, not sent
    cases = cases_of(suite)
    assert "import-refused" in cases["conversation empty\x1b]0;owned\x07"]["tags"]
    assert f"conversation {'c' * 256}" in cases


def as_span_events(lines: list[str], style: str) -> list[str]:
    """The example's log records written as span events of the span each belongs to: the
    body as `gen_ai.event.content` JSON (as Azure's SDKs write it) or as attributes."""
    records = json.loads(lines[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    document = json.loads(lines[1])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for record in records:
        body = api_value(record["body"])
        attributes = {"gen_ai.event.content": json.dumps(body)} if style == "content" else body
        owner = next(s for s in spans if s["spanId"] == record["spanId"])
        owner.setdefault("events", []).append(
            {
                "name": record["eventName"],
                "attributes": [
                    {"key": k, "value": typed(v if isinstance(v, str | int) else json.dumps(v))}
                    for k, v in attributes.items()
                ],
            }
        )
    return [json.dumps(document)]


def api_value(value: dict[str, Any]) -> Any:
    """An OTLP typed value as plain JSON (the example's bodies are kvlists of strings)."""
    if "kvlistValue" in value:
        return {kv["key"]: api_value(kv["value"]) for kv in value["kvlistValue"]["values"]}
    if "arrayValue" in value:
        return [api_value(v) for v in value["arrayValue"]["values"]]
    return value.get("stringValue", value.get("intValue"))


@pytest.mark.parametrize("form", ["log-records", "span-events-content", "span-events-attributes"])
def test_the_conventions_message_events_are_read_as_the_conversation(
    form: str, tmp_path: Path
) -> None:
    """The older GenAI form, one event per message (gen_ai.user.message, .assistant.message,
    .tool.message, gen_ai.choice), on log records or span events: the semantic conventions'
    own tool-call example becomes a case that scores and replays."""
    lines = EVENTS.read_text(encoding="utf-8").splitlines()
    if form != "log-records":
        lines = as_span_events(lines, form.removeprefix("span-events-"))
    done, suite, runs = imported(tmp_path, lines, "--record")
    assert done.exit_code == 0, done.output
    (case,) = cases_of(suite).values()
    assert case["user"] == "What's the weather in Paris?"
    assert case["expect"]["tool_calls"][0]["args"] == {"location": "Paris"}
    loaded = api.load_suite(suite)
    assert loaded.tools[0].responses[0].output == "rainy, 57°F"
    (t,) = api.load_transcripts(runs)
    assert t.model == "gpt-4"
    assert t.final_answer == (
        "The weather in Paris is rainy and overcast, with temperatures around 57°F"
    )
    assert [c.status for c in api.score(loaded, api.load_transcripts(runs)).cases] == ["pass"]
    replayed = api.run(RunRequest(suite, record="offline", out=tmp_path / "run"))
    assert [c.status for c in replayed.report.cases] == ["pass"]


def test_content_blocks_of_strands_agents_are_read(tmp_path: Path) -> None:
    """Content as blocks (text, toolUse, toolResult) in span events' attributes."""
    events = [
        ("gen_ai.user.message", {"content": json.dumps([{"text": "Weather in Oslo?"}])}),
        (
            "gen_ai.choice",
            {
                "finish_reason": "tool_use",
                "message": json.dumps(
                    [
                        {
                            "toolUse": {
                                "toolUseId": "u1",
                                "name": "get_weather",
                                "input": {"city": "Oslo"},
                            }
                        }
                    ]
                ),
            },
        ),
    ]
    answered = [
        *events[:1],
        ("gen_ai.assistant.message", {"content": events[1][1]["message"]}),
        (
            "gen_ai.tool.message",
            {
                "content": json.dumps(
                    [{"toolResult": {"toolUseId": "u1", "content": [{"text": "snow"}]}}]
                )
            },
        ),
        ("gen_ai.choice", {"message": json.dumps([{"text": "Snow in Oslo."}])}),
    ]

    def with_events(sid: str, start: int, evs: list[tuple[str, dict]]) -> dict:
        out = span("s-1", sid, "root", start, **{"gen_ai.operation.name": "chat"})
        out["events"] = [
            {"name": n, "attributes": [{"key": k, "value": typed(v)} for k, v in a.items()]}
            for n, a in evs
        ]
        return out

    lines = [
        export(
            with_events("m1", 1, events), with_events("m2", 2, answered), span("s-1", "root", "", 0)
        )
    ]
    done, suite, runs = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    (case,) = cases_of(suite).values()
    assert case["user"] == "Weather in Oslo?"
    assert case["expect"]["tool_calls"][0]["args"] == {"city": "Oslo"}
    (t,) = api.load_transcripts(runs)
    assert [(c.name, c.output) for c in t.tool_calls] == [("get_weather", "snow")]
    assert t.final_answer == "Snow in Oslo."


def test_message_events_a_stranger_got_wrong_refuse_their_trace_alone(tmp_path: Path) -> None:
    """Bodies that are not what the conventions say (calls that are no list or name no
    function, JSON nested past the limit) refuse the trace they are in, with the reason."""

    def traced(trace: str, body: dict[str, Any]) -> str:
        chat_span = span(trace, "m", "root", 1, **{"gen_ai.operation.name": "chat"})
        chat_span["events"] = [
            {
                "name": "gen_ai.user.message",
                "attributes": [{"key": "content", "value": typed("Hi")}],
            },
            {
                "name": "gen_ai.assistant.message",
                "attributes": [{"key": k, "value": typed(v)} for k, v in body.items()],
            },
        ]
        return export(chat_span, span(trace, "root", "", 0))

    deep = "[" * 100_000 + "]" * 100_000
    lines = [
        traced("t-a", {"tool_calls": "rm -rf"}),
        traced("t-b", {"tool_calls": json.dumps([{"function": {"arguments": "{}"}}])}),
        traced("t-c", {"content": deep}),
        *one_turn_trace("t-3", "Oslo"),
    ]
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    for trace, why in [
        ("t-a", "the assistant message's tool_calls are not a list"),
        ("t-b", "a tool call of the assistant message names no function"),
    ]:
        assert f"record trace {trace} refused: {why}" in done.output
    cases = cases_of(suite)
    assert "import-refused" in cases["trace t-a"]["tags"]
    assert cases["trace t-3"]["expect"]["tool_calls"][0]["tool"] == "get_weather"


def test_conversations_that_call_no_tool_make_a_suite_that_validates(tmp_path: Path) -> None:
    """Traces where the model only talked: the suite offers no tool (`tools: []`, not an empty
    key the suite language refuses), and each case expects no call."""
    b1, b2 = session_turn("b1", 150, "Hi", "Hello."), session_turn("b2", 250, "Bye", "Bye.")
    done, suite, runs = imported(tmp_path, [export(b1["root"]), export(b2["root"])])
    assert done.exit_code == 0, done.output
    loaded = api.load_suite(suite)
    assert not loaded.tools
    report = api.score(loaded, api.load_transcripts(runs))
    assert {c.case: c.status for c in report.cases} == {"conversation sess-B": "pass"}


def test_an_older_otlp_export_is_read(tmp_path: Path) -> None:
    """OTLP before v0.15 named a scope's spans `instrumentationLibrarySpans`."""
    (line,) = one_turn_trace("t-3", "Oslo")
    done, suite, _ = imported(tmp_path, [line.replace("scopeSpans", "instrumentationLibrarySpans")])
    assert done.exit_code == 0, done.output
    assert cases_of(suite)["trace t-3"]["user"] == "Weather in Oslo?"
