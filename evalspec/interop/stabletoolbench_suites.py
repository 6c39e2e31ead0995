"""Suites for StableToolBench queries: one case per query, scored by its gold APIs.

Tools come from each query's `api_list`; a case offers only its own query's APIs, as
StableToolBench does. Queries that define one API differently from an earlier query go to a
further suite, since a suite offers one definition per tool name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalspec.errors import UsageError


def _tool_dict(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def stabletoolbench_suites(
    queries: Sequence[Mapping[str, Any]],
    *,
    name: str,
    models: Sequence[str],
    judge: str | None,
    judge_endpoint: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Suites for StableToolBench queries: tools from `api_list`, gold APIs scored by
    `api_call_score`; queries whose APIs disagree with earlier ones go to further suites.

    `judge` (a model id) adds StableToolBench's SoPR judge on the final answer; its
    `judge_endpoint` holds the judge's `base_url` and `api_key_env` when not the defaults."""
    from evalspec.interop.bfcl import escape_templates
    from evalspec.interop.stabletoolbench import api_to_tool, gold_apis

    groups: list[tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]] = []
    for q in queries:
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
            case["expect"]["final_answer"] = {
                "judge": {
                    "criteria": "The answer solves the user's request with the tools' results.",
                    "model": judge,
                    **(judge_endpoint or {}),
                }
            }
        for known, cases in groups:
            if all(known.get(n, t) == t for n, t in tools.items()):
                known.update(tools)
                cases.append(case)
                break
        else:
            groups.append((dict(tools), [case]))
    if not groups:
        raise UsageError("no StableToolBench queries to import")
    suites = []
    for i, (tools, cases) in enumerate(groups):
        suites.append(
            escape_templates(
                {
                    "suite": name if i == 0 else f"{name}-{i + 1}",
                    "description": "Imported from StableToolBench: a case passes when the "
                    "model calls every gold API (api_call_score).",
                    "models": list(models),
                    "rubric": {
                        "fail_threshold": 1.0,
                        "warn_threshold": 1.0,
                        "fail_on_tool_selection": False,
                        "fail_on_tool_call_quantity": False,
                        "extra_calls": "allow",
                    },
                    "tools": list(tools.values()),
                    "cases": cases,
                }
            )
        )
    return suites
