"""Suites for StableToolBench queries: one case per query, scored by its gold APIs.

Tools come from each query's `api_list`; a case offers only its own query's APIs, as
StableToolBench does. Queries that define one API differently from an earlier query go to a
further suite, since a suite offers one definition per tool name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalspec._interop.records import (
    RecordFault,
    Refusal,
    blame,
    holdable,
    refused_all,
    refused_case,
    screen_tool,
    what_it_is,
)
from evalspec._util.errors import UsageError


def _tool_dict(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


JUDGE_CRITERIA = "The answer solves the user's request with the tools' results."
RUBRIC = {
    "fail_threshold": 1.0,
    "warn_threshold": 1.0,
    "fail_on_tool_selection": False,
    "fail_on_tool_call_quantity": False,
    "extra_calls": "allow",
}


def _judge_check(judge: str, endpoint: Mapping[str, Any] | None) -> dict[str, Any]:
    """StableToolBench's SoPR judge on the final answer, at `endpoint` (base_url, api_key_env)."""
    return {"judge": {"criteria": JUDGE_CRITERIA, "model": judge, **(endpoint or {})}}


def each_case(
    records: Sequence[tuple[str, Any]],
    case_of: Callable[[Any], tuple[dict[str, dict[str, Any]], dict[str, Any]]],
    refused: list[Refusal] | None,
    source: str,
) -> list[tuple[dict[str, dict[str, Any]], dict[str, Any]]]:
    """(tools, case) of each (name, record); a record that cannot become a case is refused
    (appended to `refused`, naming `source`) and stands as a case that fails. UsageError when
    every record is refused: the file is wrong, not a record."""
    cases = []
    out = refused if refused is not None else []
    before = len(out)
    for name, record in records:
        try:
            with blame(source):
                tools, case = case_of(record)
                for tool in tools.values():
                    screen_tool(tool, source)
                holdable(case, "case", source)
                cases.append((tools, case))
        except RecordFault as fault:
            out.append(Refusal(name, source, 1, fault.reason))
            cases.append(({}, refused_case(out[-1], ["stabletoolbench"])))
    if records and len(out) - before == len(records):
        raise refused_all(out[before:], "a StableToolBench file")
    return cases


@dataclass(frozen=True)
class _Again:
    """An entry whose `query_id` an earlier query has: two cases cannot share a name."""

    query_id: str


def _keyed(queries: Sequence[Any], places: Sequence[str] | None) -> list[tuple[str, Any]]:
    """(case name, entry) of each entry: its `query_id`, else its place (`query-N`); a second
    entry with an id already read is named by its place and refused (`_Again`)."""
    seen: set[str] = set()
    out: list[tuple[str, Any]] = []
    for i, q in enumerate(queries):
        place = places[i] if places is not None else f"query-{i + 1}"
        name = str(q["query_id"]) if isinstance(q, Mapping) and "query_id" in q else place
        if name in seen:
            name, q = place, _Again(name)
        seen.add(name)
        out.append((name, q))
    return out


def _query_fault(q: Any) -> RecordFault | None:
    """Why an entry of a test_instruction file cannot become a case, in words."""
    if isinstance(q, _Again):
        return RecordFault(f"a second query with query_id {q.query_id!r}", "queries")
    if not isinstance(q, Mapping):
        return RecordFault(f"the query is not an object, got {what_it_is(q)}", "queries")
    missing = [k for k in ("api_list", "query") if k not in q]
    if missing:
        return RecordFault(f"it has no {missing[0]!r}: got {what_it_is(q)}", "queries")
    return None


def stabletoolbench_suites(
    queries: Sequence[Any],
    *,
    name: str,
    models: Sequence[str],
    judge: str | None,
    judge_endpoint: Mapping[str, Any] | None = None,
    refused: list[Refusal] | None = None,
    source: str = "the query file",
    places: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Suites for StableToolBench queries: tools from `api_list`, gold APIs scored by
    `api_call_score`; queries whose APIs disagree with earlier ones go to further suites. A
    query that cannot become a case is refused (appended to `refused`) and stands as a case
    that fails: an entry that is no object, or has no `api_list`, or whose `query_id` an
    earlier query has (named by its place, `places[i]`, or `query-N`).

    `judge` (a model id) adds StableToolBench's SoPR judge on the final answer; its
    `judge_endpoint` holds the judge's `base_url` and `api_key_env` when not the defaults."""
    from evalspec._interop.stabletoolbench import api_to_tool, gold_apis

    def case_of(q: Any) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        fault = _query_fault(q)
        if fault is not None:
            raise fault
        tools = {t["name"]: t for t in (_tool_dict(api_to_tool(a)) for a in q["api_list"])}
        gold = sorted([list(pair) for pair in gold_apis(q)])
        case: dict[str, Any] = {
            "name": str(q["query_id"]),
            "tags": ["stabletoolbench"],
            "user": str(q["query"]),
            "tools": list(tools),  # the query's own APIs, not the whole suite's
            "expect": {"tool_calls": []},
            "evaluators": [{"api_call_score": {"gold": gold}}],
        }
        if judge:
            case["expect"]["final_answer"] = _judge_check(judge, judge_endpoint)
        return tools, case

    cases = each_case(_keyed(queries, places), case_of, refused, source)
    description = (
        "Imported from StableToolBench: a case passes when the model calls every gold API "
        "(api_call_score)."
    )
    return _suites(cases, name=name, models=models, description=description)


def answer_file_suites(
    answers: Mapping[str, Mapping[str, Any]],
    *,
    name: str,
    models: Sequence[str],
    judge: str,
    judge_endpoint: Mapping[str, Any] | None = None,
    refused: list[Refusal] | None = None,
    source: str = "the answer file",
) -> list[dict[str, Any]]:
    """Suites for the queries of a converted answer file, judged as StableToolEval judges it.

    A converted answer file holds each query's text and the functions its run was offered
    (`available_tools`), but no gold APIs: StableToolEval's pass rate reads only these. One
    case per query, offering those functions (Finish left out: evalspec ends a run on a text
    answer), with the SoPR judge on the final answer as its only check.
    """

    def case_of(
        item: tuple[str, Mapping[str, Any]],
    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        query_id, record = item
        if not isinstance(record, Mapping) or "query" not in record:
            raise RecordFault(f"it has no 'query': got {what_it_is(record)}", source)
        tools = {
            t["name"]: t
            for t in (_function_tool(f) for f in record.get("available_tools") or ())
            if t["name"] != "Finish"
        }
        case: dict[str, Any] = {
            "name": str(query_id),
            "tags": ["stabletoolbench"],
            "user": str(record["query"]),
            "tools": list(tools),
            "expect": {"tool_calls": [], "final_answer": _judge_check(judge, judge_endpoint)},
        }
        return tools, case

    keyed = [(str(query_id), (query_id, record)) for query_id, record in answers.items()]
    cases = each_case(keyed, case_of, refused, source)
    description = (
        "Imported from StableToolBench answers: a case passes when the judge finds the final "
        "answer solves the request (SoPR)."
    )
    return _suites(cases, name=name, models=models, description=description)


def _function_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    """A tool from a ToolBench function definition: its own `optional` list and parameters'
    `example_value` (not JSON Schema) become plain JSON Schema (`examples`)."""
    parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
    parameters.pop("optional", None)
    properties = {}
    for pname, schema in (parameters.get("properties") or {}).items():
        schema = dict(schema)
        if "example_value" in schema:
            example = schema.pop("example_value")
            if example not in (None, ""):
                schema["examples"] = [example]
        properties[pname] = schema
    parameters["properties"] = properties
    return {
        "name": str(function["name"]),
        "description": str(function.get("description") or ""),
        "parameters": parameters,
    }


def _suites(
    cases: Sequence[tuple[dict[str, dict[str, Any]], dict[str, Any]]],
    *,
    name: str,
    models: Sequence[str],
    description: str,
) -> list[dict[str, Any]]:
    """Cases with their tools into suites: a case whose tool definitions disagree with a
    suite's goes to a further one, since a suite offers one definition per tool name."""
    from evalspec._interop.bfcl import escape_templates

    groups: list[tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]] = []
    for tools, case in cases:
        for known, grouped in groups:
            if all(known.get(n, t) == t for n, t in tools.items()):
                known.update(tools)
                grouped.append(case)
                break
        else:
            groups.append((dict(tools), [case]))
    if not groups:
        raise UsageError("no StableToolBench queries to import")
    return [
        escape_templates(
            {
                "suite": name if i == 0 else f"{name}-{i + 1}",
                "description": description,
                "models": list(models),
                "rubric": dict(RUBRIC),
                "tools": list(tools.values()),
                "cases": grouped,
            }
        )
        for i, (tools, grouped) in enumerate(groups)
    ]
