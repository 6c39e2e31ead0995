"""Every example of the tool-call-output seed, reproduced from its spans and criteria.

Each span is reduced to what the evaluator reads: the `tool.name` attribute and the
`output.value` string exactly as the seed writes it (a `{"content": "<json>"}` envelope). Each
example is a suite whose case holds the evaluator, scored on a transcript of those calls
(`evalspec.api.score`): its score, verdict and justification as the report gives them.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import Evaluated, evaluated

from evalspec.records import ToolCall, Transcript


def span(name: str, output_value: str) -> dict[str, Any]:
    return {"name": name, "attributes": {"tool.name": name, "output.value": output_value}}


def transcript_from_spans(spans: list[dict[str, Any]]) -> Transcript:
    calls = tuple(
        ToolCall(
            name=s["attributes"]["tool.name"], arguments={}, output=s["attributes"]["output.value"]
        )
        for s in spans
        if "tool.name" in s["attributes"]
    )
    return Transcript(item_id="seed", case="seed", model="seed", tool_calls=calls)


def scored(
    spans: list[dict[str, Any]], evaluator: dict[str, Any], expected: list[Any] | None = None
) -> Evaluated:
    """The tool_call_output evaluator with these options (and the case's `expected` calls),
    scored on the spans' calls."""
    return evaluated(transcript_from_spans(spans), "tool_call_output", evaluator, expected)


def evaluate(
    spans: list[dict[str, Any]], tool_outputs: list[dict[str, Any]], strict: bool
) -> Evaluated:
    return scored(spans, {"strict": strict, "tool_outputs": tool_outputs})


PIPELINE_SPANS = [
    span("fetch_data", '{"content": "{\\"records\\": 150, \\"status\\": \\"success\\"}"}'),
    span("process_data", '{"content": "{\\"processed\\": 150, \\"errors\\": 0}"}'),
    span(
        "save_results",
        '{"content": "{\\"saved\\": 150, \\"location\\": \\"/data/results.csv\\"}"}',
    ),
]


def test_basic_output_validation_json_string_expected():
    spans = [
        span(
            "get_user",
            '{"content": "{\\"user_id\\": 123, \\"name\\": \\"John Doe\\", \\"email\\": '
            '\\"john@example.com\\", \\"status\\": \\"active\\"}"}',
        )
    ]
    result = evaluate(
        spans,
        [
            {
                "name": "get_user",
                "output": '{"user_id": 123, "name": "John Doe", "email": "john@example.com", '
                '"status": "active"}',
            }
        ],
        strict=False,
    )
    assert result.score == 1.0
    assert result.passed
    user = "{'user_id': 123, 'name': 'John Doe', 'email': 'john@example.com', 'status': 'active'}"
    assert result.justification == {
        "explained_tool_calls_outputs": {
            "get_user_0": f"Actual: {user}, Expected: {user}, Score: 1.0"
        }
    }


def test_strict_mode_exact_output_matching():
    spans = [
        span(
            "calculate_total",
            '{"content": "{\\"total\\": 99.99, \\"currency\\": \\"USD\\"}"}',
        )
    ]
    result = evaluate(
        spans,
        [{"name": "calculate_total", "output": {"total": 99.99, "currency": "USD"}}],
        strict=True,
    )
    assert result.score == 1.0
    assert result.justification["explained_tool_calls_outputs"] == {
        "calculate_total_0": "Actual: {'total': 99.99, 'currency': 'USD'}, "
        "Expected: {'total': 99.99, 'currency': 'USD'}, Score: 1.0"
    }


def test_non_strict_mode_proportional_scoring():
    spans = [
        PIPELINE_SPANS[0],
        span("process_data", '{"content": "{\\"processed\\": 100, \\"errors\\": 5}"}'),
        PIPELINE_SPANS[2],
    ]
    criteria = [
        {"name": "fetch_data", "output": '{"records": 150, "status": "success"}'},
        {"name": "process_data", "output": '{"processed": 150, "errors": 0}'},
        {"name": "save_results", "output": '{"saved": 150, "location": "/data/results.csv"}'},
    ]
    result = evaluate(spans, criteria, strict=False)
    assert result.score == 2 / 3
    assert int(result.score * 100) / 100 == 0.66  # the seed prints 0.66
    assert not result.passed
    explained = result.justification["explained_tool_calls_outputs"]
    assert list(explained) == ["fetch_data_0", "process_data_0", "save_results_0"]
    assert explained["process_data_0"] == (
        "Actual: {'processed': 100, 'errors': 5}, "
        "Expected: {'processed': 150, 'errors': 0}, Score: 0.0"
    )
    assert explained["fetch_data_0"].endswith("Score: 1.0")
    # The same mismatch under strict mode is all-or-nothing.
    assert evaluate(spans, criteria, strict=True).score == 0.0


def test_multiple_tool_outputs_dict_expected():
    criteria = [
        {"name": "fetch_data", "output": {"records": 150, "status": "success"}},
        {"name": "process_data", "output": {"processed": 150, "errors": 0}},
        {"name": "save_results", "output": {"saved": 150, "location": "/data/results.csv"}},
    ]
    result = evaluate(PIPELINE_SPANS, criteria, strict=False)
    assert result.score == 1.0
    assert all(
        v.endswith("Score: 1.0")
        for v in result.justification["explained_tool_calls_outputs"].values()
    )


def test_complex_nested_outputs():
    spans = [
        span(
            "generate_report",
            '{"content": "{\\"report_id\\": \\"RPT-001\\", \\"summary\\": {\\"total_records\\": '
            '1000, \\"processed\\": 950, \\"errors\\": 50}, \\"details\\": [{\\"category\\": '
            '\\"A\\", \\"count\\": 400}, {\\"category\\": \\"B\\", \\"count\\": 350}, '
            '{\\"category\\": \\"C\\", \\"count\\": 200}], \\"metadata\\": {\\"generated_at\\": '
            '\\"2024-01-01T12:00:00Z\\", \\"version\\": \\"1.0\\"}}"}',
        )
    ]
    expected = {
        "report_id": "RPT-001",
        "summary": {"total_records": 1000, "processed": 950, "errors": 50},
        "details": [
            {"category": "A", "count": 400},
            {"category": "B", "count": 350},
            {"category": "C", "count": 200},
        ],
        "metadata": {"generated_at": "2024-01-01T12:00:00Z", "version": "1.0"},
    }
    result = evaluate(spans, [{"name": "generate_report", "output": expected}], strict=False)
    assert result.score == 1.0
    # Nested lists stay ordered: a swapped detail is a different output.
    swapped = dict(expected, details=list(reversed(expected["details"])))
    assert evaluate(spans, [{"name": "generate_report", "output": swapped}], False).score == 0.0


def test_justification_details_block():
    """The seed's justification example, key for key and character for character."""
    spans = [
        span("get_user", '{"content": "{\\"user_id\\": 123, \\"name\\": \\"John Doe\\"}"}'),
        span("calculate_total", '{"content": "{\\"total\\": 99.99}"}'),
        span("api_request", '{"content": "{\\"status\\": 200, \\"data\\": {}}"}'),
    ]
    result = evaluate(
        spans,
        [
            {"name": "get_user", "output": {"user_id": 123, "name": "John Doe"}},
            {"name": "calculate_total", "output": {"total": 99.99}},
            {"name": "api_request", "output": {"status": 200, "data": {}}},
        ],
        strict=False,
    )
    assert result.justification == {
        "explained_tool_calls_outputs": {
            "get_user_0": "Actual: {'user_id': 123, 'name': 'John Doe'}, Expected: {'user_id': "
            "123, 'name': 'John Doe'}, Score: 1.0",
            "calculate_total_0": "Actual: {'total': 99.99}, Expected: {'total': 99.99}, Score: 1.0",
            "api_request_0": "Actual: {'status': 200, 'data': {}}, Expected: {'status': 200, "
            "'data': {}}, Score: 1.0",
        }
    }


@pytest.mark.parametrize("strict", [False, True])
def test_missing_tool_scores_zero_for_that_output(strict):
    criteria = [
        {"name": "fetch_data", "output": {"records": 150, "status": "success"}},
        {"name": "send_report", "output": {"sent": True}},
    ]
    result = evaluate(PIPELINE_SPANS, criteria, strict=strict)
    assert result.score == (0.0 if strict else 0.5)
    assert result.justification["explained_tool_calls_outputs"]["send_report_0"].startswith(
        "Actual: <no call>"
    )


def test_extra_calls_are_ignored():
    result = evaluate(
        PIPELINE_SPANS,
        [{"name": "process_data", "output": {"processed": 150, "errors": 0}}],
        strict=True,
    )
    assert result.score == 1.0


def test_order_matters_kth_expected_matches_kth_call():
    spans = [
        span("get_user", '{"content": "{\\"id\\": 1}"}'),
        span("get_user", '{"content": "{\\"id\\": 2}"}'),
    ]
    in_order = [
        {"name": "get_user", "output": {"id": 1}},
        {"name": "get_user", "output": {"id": 2}},
    ]
    swapped = list(reversed(in_order))
    assert evaluate(spans, in_order, strict=False).score == 1.0
    result = evaluate(spans, swapped, strict=False)
    assert result.score == 0.0
    assert list(result.justification["explained_tool_calls_outputs"]) == [
        "get_user_0",
        "get_user_1",
    ]


def test_expected_outputs_default_to_case_expected_calls():
    expected_calls = [
        {"tool": "fetch_data", "output": {"records": 150, "status": "success"}},
        {"tool": "process_data"},  # output not checked
        {"tool": "save_results", "output": {"saved": 1}},
    ]
    result = scored(PIPELINE_SPANS, {}, expected_calls)
    assert result.score == 0.5
    assert list(result.justification["explained_tool_calls_outputs"]) == [
        "fetch_data_0",
        "save_results_0",
    ]
