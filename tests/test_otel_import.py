"""OpenTelemetry import: the tool-call-output seed's spans become transcripts that score as the
seed says, in the simplified span form and in the OTLP JSON export form."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli, evaluated

from evalspec.api import import_otel, load_transcripts
from evalspec.errors import SpecError, UsageError
from evalspec.records import Transcript


def span(name: str, output_value: str, start: int = 0, **attrs: Any) -> dict[str, Any]:
    """A span as the seed writes it: ReadableSpan(name, start_time, end_time, attributes)."""
    return {
        "name": name,
        "start_time": start,
        "end_time": start + 1,
        "attributes": {"tool.name": name, "output.value": output_value, **attrs},
    }


def otel_transcripts(source: Any, case: str, model: str = "otel") -> list[Transcript]:
    """What `import otel` writes of these spans (or this export), read back."""
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / "spans.json", Path(folder) / "t.jsonl"
        if isinstance(source, Path):
            path = source
        else:
            path.write_text(json.dumps(source), encoding="utf-8")
        import_otel(path, out, case=case, model=model)
        return load_transcripts(out)


def otlp(spans: list[dict[str, Any]], trace_id: str = "t1") -> dict[str, Any]:
    """The same spans as the OTLP JSON exporter writes them (typed attribute values)."""

    def typed(value: Any) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"boolValue": value}
        if isinstance(value, int):
            return {"intValue": str(value)}
        return {"stringValue": value}

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "scope": {"name": "agent"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": f"s{i}",
                                "name": s["name"],
                                "startTimeUnixNano": str(s["start_time"] * 10**9),
                                "attributes": [
                                    {"key": k, "value": typed(v)}
                                    for k, v in s["attributes"].items()
                                ],
                                "status": s.get("status", {}),
                            }
                            for i, s in enumerate(spans)
                        ],
                    }
                ],
            }
        ]
    }


def envelope(value: dict[str, Any]) -> str:
    return json.dumps({"content": json.dumps(value)})


GET_USER = {"user_id": 123, "name": "John Doe", "email": "john@example.com", "status": "active"}
FETCH = {"records": 150, "status": "success"}
SAVE = {"saved": 150, "location": "/data/results.csv"}
REPORT = {
    "report_id": "RPT-001",
    "summary": {"total_records": 1000, "processed": 950, "errors": 50},
    "details": [
        {"category": "A", "count": 400},
        {"category": "B", "count": 350},
        {"category": "C", "count": 200},
    ],
    "metadata": {"generated_at": "2024-01-01T12:00:00Z", "version": "1.0"},
}


def pipeline(errors: int) -> list[dict[str, Any]]:
    return [
        span("fetch_data", envelope(FETCH), 0),
        span(
            "process_data", envelope({"processed": 150 if not errors else 100, "errors": errors}), 1
        ),
        span("save_results", envelope(SAVE), 2),
    ]


# (spans, expected tool_outputs, strict, seed score)
SEED_EXAMPLES = {
    "basic": (
        [span("get_user", envelope(GET_USER))],
        [{"name": "get_user", "output": json.dumps(GET_USER)}],
        False,
        1.0,
    ),
    "strict": (
        [span("calculate_total", envelope({"total": 99.99, "currency": "USD"}))],
        [{"name": "calculate_total", "output": {"total": 99.99, "currency": "USD"}}],
        True,
        1.0,
    ),
    "proportional": (
        pipeline(errors=5),
        [
            {"name": "fetch_data", "output": json.dumps(FETCH)},
            {"name": "process_data", "output": '{"processed": 150, "errors": 0}'},
            {"name": "save_results", "output": json.dumps(SAVE)},
        ],
        False,
        2 / 3,
    ),
    "multiple": (
        pipeline(errors=0),
        [
            {"name": "fetch_data", "output": FETCH},
            {"name": "process_data", "output": {"processed": 150, "errors": 0}},
            {"name": "save_results", "output": SAVE},
        ],
        False,
        1.0,
    ),
    "nested": (
        [span("generate_report", envelope(REPORT))],
        [{"name": "generate_report", "output": REPORT}],
        False,
        1.0,
    ),
}


@pytest.mark.parametrize("form", ["spans", "otlp"])
@pytest.mark.parametrize("example", sorted(SEED_EXAMPLES))
def test_seed_examples_import_and_score_as_the_seed_says(example: str, form: str) -> None:
    spans, tool_outputs, strict, expected = SEED_EXAMPLES[example]
    source = spans if form == "spans" else otlp(spans)
    (t,) = otel_transcripts(source, case=example, model="agent")
    assert (t.case, t.model, t.source) == (example, "agent", "import:otel")
    assert [c.name for c in t.tool_calls] == [s["name"] for s in spans]
    # Outputs are the span's JSON value: the {"content": "<json>"} envelope as UiPath writes it.
    assert [c.output for c in t.tool_calls] == [
        json.loads(s["attributes"]["output.value"]) for s in spans
    ]
    options = {"strict": strict, "tool_outputs": tool_outputs}
    assert evaluated(t, "tool_call_output", options).score == pytest.approx(expected, abs=0.01)


def test_calls_follow_start_time_and_carry_arguments_and_errors(tmp_path: Path) -> None:
    spans = [
        span("second", "done", 5, **{"input.value": '{"a": 1}'}),
        span("first", "not json", 1, **{"input.value": "oops"}),
        {
            "name": "agent",
            "start_time": 0,
            "attributes": {"output.value": "All done."},
        },
        {
            "name": "execute_tool lookup",
            "start_time": 7,
            "attributes": {
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.arguments": '{"q": "x"}',
            },
            "status": {"status_code": "ERROR", "description": "timeout"},
        },
    ]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans), encoding="utf-8")
    (t,) = otel_transcripts(path, case="c")
    assert [c.name for c in t.tool_calls] == ["first", "second", "lookup"]
    first, second, lookup = t.tool_calls
    assert first.arguments is None and first.raw_arguments == "oops" and first.output == "not json"
    assert second.arguments == {"a": 1} and second.output == "done"
    assert lookup.arguments == {"q": "x"} and lookup.error == "timeout"
    assert t.final_answer == "All done."


def test_each_trace_is_a_trial() -> None:
    data = [otlp([span("a", "1")], trace_id="t1"), otlp([span("b", "2")], trace_id="t2")]
    transcripts = otel_transcripts(data, case="c")
    assert [(t.trial, [c.name for c in t.tool_calls]) for t in transcripts] == [
        (0, ["a"]),
        (1, ["b"]),
    ]
    assert len({t.item_id for t in transcripts}) == 2


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{nope", encoding="utf-8")
    with pytest.raises(SpecError, match=r"x\.json:1:2: invalid JSON"):
        otel_transcripts(path, case="c")
    path.write_text(json.dumps([span("a", "1"), 1]), encoding="utf-8")
    written = import_otel(path, tmp_path / "t.jsonl", case="c")
    (refusal,) = written.refused  # the entry that is no span, on its own
    assert refusal.record == "entry-2" and "resourceSpans" in refusal.reason
    with pytest.raises(UsageError, match=r"every record was refused.*got a number"):
        otel_transcripts([1, 2], case="c")
    with pytest.raises(UsageError, match="no spans"):
        otel_transcripts([], case="c")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ([], "x.json: no spans found: the list is empty"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}, "1 resourceSpans and no span"),
        (
            {"traces": []},
            "record entry-1 refused: expected OTLP JSON (resourceSpans) or a list "
            "of spans with name and attributes, got an object with keys 'traces'",
        ),
        (
            [{"span": 1}, 7],
            "record entry-2 refused: expected OTLP JSON (resourceSpans) or a list "
            "of spans with name and attributes, got a number",
        ),
    ],
)
def test_an_input_with_no_span_says_what_it_held(tmp_path: Path, content: Any, said: str) -> None:
    """Nothing imported: the error names the file and what each entry was instead of a span."""
    path, out = tmp_path / "x.json", tmp_path / "t.jsonl"
    path.write_text(json.dumps(content), encoding="utf-8")
    res = evalspec_cli(["import", "otel", str(path), "--case", "c", "--out", str(out)])
    assert res.exit_code == 2 and not out.exists()
    assert said in " ".join(res.output.split()), res.output


def test_a_trace_of_which_nothing_was_read_is_said(tmp_path: Path) -> None:
    """Spans in a shape the importer does not know would stand as answers that called no
    tool: the command says which traces held nothing it could read."""
    unknown = {"name": "agent", "start_time": 0, "end_time": 1, "attributes": {"llm.tool": "x"}}
    data = [otlp([span("a", "1")], trace_id="t1"), otlp([unknown], trace_id="t2")]
    path, out = tmp_path / "spans.json", tmp_path / "t.jsonl"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = evalspec_cli(["import", "otel", str(path), "--case", "c", "--out", str(out)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "2 trace(s) read: 1 tool call(s), 0 final answer(s)" in said
    assert "nothing read from 1 trace(s) (t2): no tool span" in said


def test_import_otel_command_writes_transcripts(tmp_path: Path) -> None:

    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(otlp(pipeline(errors=0))), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    args = ["import", "otel", str(spans), "--case", "pipeline", "--model", "m", "--out", str(out)]
    res = evalspec_cli(args)
    assert res.exit_code == 0, res.output
    (t,) = load_transcripts(out)
    assert (t.case, t.model) == ("pipeline", "m")
    assert [c.name for c in t.tool_calls] == ["fetch_data", "process_data", "save_results"]
    res = evalspec_cli(
        ["import", "otel", str(tmp_path / "no.json"), "--case", "c", "--out", str(out)]
    )
    assert res.exit_code == 2 and "no.json:1:1: file not found" in res.output


PIPELINE_SUITE = """
suite: pipeline
models: [gpt-4o-mini]
tools:
  - {name: fetch_data, parameters: {type: object, properties: {}}}
  - {name: process_data, parameters: {type: object, properties: {}}}
  - {name: save_results, parameters: {type: object, properties: {}}}
cases:
  - name: pipeline
    user: run the pipeline
    expect: {tool_calls: [{fetch_data: {}}, {process_data: {}}, {save_results: {}}]}
"""


def test_imported_traces_score_without_naming_the_model(tmp_path: Path) -> None:
    """Imported without --model, traces are labelled `otel`; a one-model suite scores them as
    its model (and says so) rather than finding "nothing to score"."""

    suite = tmp_path / "pipeline.yaml"
    suite.write_text(PIPELINE_SUITE, encoding="utf-8")
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(otlp(pipeline(errors=0))), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    imported = evalspec_cli(["import", "otel", str(spans), "--case", "pipeline", "--out", str(out)])
    assert imported.exit_code == 0, imported.output
    results = tmp_path / "results.json"
    scored = evalspec_cli(["score", str(suite), "-t", str(out), "--out", str(results)])
    assert scored.exit_code == 0, scored.output
    assert "1 imported transcript labelled 'otel' scored as the suite's only model" in (
        scored.output
    )
    (case,) = json.loads(results.read_text(encoding="utf-8"))["cases"]
    assert (case["model"], case["status"]) == ("gpt-4o-mini", "pass")
    # Two labels are two models: no guessing, each named as not matching.
    other = tmp_path / "other.jsonl"
    evalspec_cli(
        ["import", "otel", str(spans), "--case", "pipeline", "-m", "b", "--out", str(other)]
    )
    both = tmp_path / "both.jsonl"
    both.write_text(out.read_text() + other.read_text(), encoding="utf-8")
    mixed = evalspec_cli(["score", str(suite), "-t", str(both)])
    assert mixed.exit_code == 3
    assert "nothing to score" in mixed.output and "1 of model 'otel'" in mixed.output
