"""Case evaluators: judgements over a whole transcript, beside the per-argument critics.

The tool-call evaluators mirror UiPath's coded evaluators (``uipath.eval.coded_evaluators``:
ToolCallOrderEvaluator, ToolCallCountEvaluator, ToolCallArgsEvaluator, ToolCallOutputEvaluator,
whose scoring lives in ``uipath/eval/_helpers/coded_evaluators_helpers.py``), so a suite moved
from there scores the same. Where their code and their documentation disagree, the seed
document wins and the difference is noted at the function. ``api_call_score`` is
StableToolBench's API call score.

Every evaluator reads its params straight from YAML; the case's expected calls are the default
criteria, so `- tool_call_order` with no params checks the order the case already lists.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalspec._critics.base import Embedder
from evalspec._scoring.protocols import EvaluatorInput, Finding, Verdict, as_verdict
from evalspec._scoring.reasons import join_reasons
from evalspec._scoring.types import Row
from evalspec._suite.model import EvaluatorSpec, ExpectedCall
from evalspec._tools.toolbench_names import api_call_score, is_api_call, name_key
from evalspec._tools.toolbench_names import function_name as toolbench_function_name
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.errors import Problem, SpecError
from evalspec._util.json_values import json_equal, parse_json_value
from evalspec._util.registry import builtin_names, find, register, registered


@dataclass(frozen=True)
class EvaluatorResult:
    """What one evaluator (or final-answer check) concluded about one transcript."""

    name: str
    score: float
    """In [0, 1]."""
    passed: bool
    """``score == 1.0``, or ``score >= threshold`` when the evaluator has a threshold param."""
    justification: dict[str, Any] = field(default_factory=dict)
    """Machine-readable details, e.g. ``explained_tool_calls_outputs``."""
    rows: tuple[Row, ...] = ()
    """Explanation rows; `score` is authoritative, rows only explain it."""


class ParamError(ValueError):
    """An evaluator param has the wrong shape; reported against the spec's location."""


NO_CALL = "<no call>"
"""How a justification shows an expected call the model never made."""


def run_evaluator(
    spec: EvaluatorSpec,
    transcript: Transcript,
    expected_calls: Sequence[ExpectedCall],
    *,
    embedder: Embedder | None = None,
    normalize_names: bool = True,
) -> EvaluatorResult:
    """Run one case evaluator, built-in or installed, on a transcript.

    `normalize_names` compares tool names by `tool_names.normalize_tool_name` (the rubric's
    ``normalize_tool_names``). `embedder` is accepted for evaluators that
    need text similarity; none of the built-in kinds does today.
    """
    del embedder  # no built-in evaluator needs embeddings yet
    entry = find("evaluator", spec.kind)
    if entry is None:
        known = sorted(registered("evaluator"))
        raise _spec_error(
            spec, f"unknown evaluator {spec.kind!r}", "use one of: " + ", ".join(known)
        )
    params = {k: v for k, v in spec.params.items() if k not in _RESERVED_PARAMS}
    try:
        threshold = _opt_float(spec.params, "threshold")
        if entry.legacy:
            result = entry.impl(transcript, list(expected_calls), params)
        else:
            result = entry.impl(
                EvaluatorInput(transcript, tuple(expected_calls), params, normalize_names)
            )
        verdict = as_verdict(result)
    except ParamError as exc:
        raise _spec_error(spec, f"evaluator {spec.kind}: {exc}", "") from None
    except ValueError as exc:
        if entry.builtin:
            raise
        raise _spec_error(spec, f"evaluator {spec.kind}: {exc}", "") from None
    score = min(1.0, max(0.0, float(verdict.score)))
    if verdict.passed is not None:
        passed = verdict.passed
    else:
        passed = score >= threshold if threshold is not None else score == 1.0
    findings = verdict.findings or (Finding("", params, None, score, verdict.reason),)
    return EvaluatorResult(
        name=str(spec.params.get("name") or spec.kind),
        score=score,
        passed=passed,
        justification=verdict.details,
        rows=tuple(_row(spec, f, len(findings)) for f in findings),
    )


_RESERVED_PARAMS = ("name", "threshold")
"""Options evalspec reads for every evaluator; the evaluator gets the rest."""


def _row(spec: EvaluatorSpec, finding: Finding, n: int) -> Row:
    """One explanation row; its weight is the evaluator's weight shared across its findings."""
    return Row(
        field=f"{spec.kind}.{finding.item}" if finding.item else spec.kind,
        expected=finding.expected,
        actual=finding.actual,
        score=finding.score,
        weight=spec.weight / max(n, 1),
        reason=finding.reason,
        critic=spec.kind,
        match=finding.score == 1.0,
    )


def parse_count_condition(value: Any) -> tuple[str, int]:
    """`"==2"`, `">= 1"`, `"<3"`, `"!=0"`, `"2"` or `2` -> (operator, count).

    A bare number means ``==``; the validator can call this to check a suite early.
    """
    if isinstance(value, bool):
        raise ParamError(f"count condition {value!r} is a boolean, not a count")
    if isinstance(value, int):
        if value < 0:
            raise ParamError(f"count {value} is negative")
        return "==", value
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(==|!=|<=|>=|<|>|=)?\s*(\d+)\s*", value)
        if m:
            op = m.group(1) or "=="
            return ("==" if op == "=" else op), int(m.group(2))
    raise ParamError(
        f"count condition {value!r} is not understood; write a number or an operator "
        "(==, = as in UiPath, !=, <, <=, >, >=) followed by a number, e.g. '>=1'"
    )


# ---------------------------------------------------------------------------------------------
# Shared plumbing


def _spec_error(spec: EvaluatorSpec, message: str, hint: str) -> SpecError:
    loc = spec.loc
    return SpecError([Problem(loc.file, loc.line, loc.column, loc.path, message, hint)])


def _strict(ctx: EvaluatorInput) -> bool:
    return _bool(ctx.params, "strict", False)


def _bool(params: Mapping[str, Any], name: str, default: bool) -> bool:
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise ParamError(f"`{name}` must be true or false, not {value!r}")
    return value


def _opt_float(params: Mapping[str, Any], name: str) -> float | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParamError(f"`{name}` must be a number, not {value!r}")
    return float(value)


def _list_param(params: Mapping[str, Any], name: str) -> list[Any] | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise ParamError(f"`{name}` must be a list, not {value!r}")
    return list(value)


def _empty_rule(ctx: EvaluatorInput, what: str) -> Verdict:
    """No criteria at all: UiPath scores 1.0 when the model made no calls either, else 0.0."""
    actual = [c.name for c in ctx.transcript.tool_calls]
    score = 0.0 if actual else 1.0
    reason = (
        f"no expected {what} and no tool calls"
        if not actual
        else f"no expected {what}, but the model called {', '.join(actual)}"
    )
    return Verdict(score, {"_result": reason}, (Finding("", [], actual, score, reason),))


# ---------------------------------------------------------------------------------------------
# tool_call_order


@register("evaluator", "tool_call_order")
def _tool_call_order(ctx: EvaluatorInput) -> Verdict:
    """Longest common subsequence of expected and actual tool names over the expected length.

    UiPath's ToolCallOrderEvaluator (``tool_calls_order_score``): an exact sequence scores 1.0;
    `strict` gives 0.0 to anything else; otherwise LCS / len(expected), so extra calls in
    between cost nothing and a missing or swapped call costs its share.
    """
    order = _list_param(ctx.params, "order")
    expected = (
        [str(n) for n in order] if order is not None else [c.tool for c in ctx.expected_calls]
    )
    actual = [c.name for c in ctx.transcript.tool_calls]
    if not expected:
        return _empty_rule(ctx, "tool calls")
    ek, ak = [ctx.key(n) for n in expected], [ctx.key(n) for n in actual]
    lcs_idx = _lcs_expected_indices(ek, ak) if ek != ak else list(range(len(ek)))
    lcs = [expected[i] for i in lcs_idx]
    if ek == ak:
        score = 1.0
    elif _strict(ctx) or not actual:
        score = 0.0
    else:
        score = len(lcs) / len(expected)
    justification = {
        "actual_tool_calls_order": actual,
        "expected_tool_calls_order": expected,
        "lcs": lcs,
    }
    if score == 1.0:
        reason = "tool calls in the expected order"
    elif _strict(ctx):
        reason = f"strict: the calls {actual} are not exactly {expected}"
    else:
        missing = [expected[i] for i in range(len(expected)) if i not in set(lcs_idx)]
        reason = (
            f"{len(lcs)} of {len(expected)} expected calls in order; "
            f"out of order or missing: {missing}"
        )
    return Verdict(score, justification, (Finding("", expected, actual, score, reason),))


def _lcs_expected_indices(expected: list[str], actual: list[str]) -> list[int]:
    """Indices into `expected` of one longest common subsequence with `actual`."""
    m, n = len(expected), len(actual)
    dp = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            if expected[i] == actual[j]:
                dp[i][j] = dp[i + 1][j + 1] + 1
            else:
                dp[i][j] = max(dp[i + 1][j], dp[i][j + 1])
    out, i, j = [], 0, 0
    while i < m and j < n:
        if expected[i] == actual[j]:
            out.append(i)
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


# ---------------------------------------------------------------------------------------------
# tool_call_count

_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@register("evaluator", "tool_call_count")
def _tool_call_count(ctx: EvaluatorInput) -> Verdict:
    """Share of tools whose call count meets its condition (`strict`: all or nothing).

    UiPath's ToolCallCountEvaluator (``tool_calls_count_score``), with one difference: UiPath
    scores 0.0 whenever the model made no calls at all, even for a condition like ``==0``;
    here every condition is checked against the real count, so ``==0`` holds when nothing was
    called.
    """
    raw = ctx.params.get("counts")
    if raw is None:
        wanted = Counter(c.tool for c in ctx.expected_calls)
        conditions = {name: ("==", n) for name, n in wanted.items()}
    elif isinstance(raw, Mapping):
        conditions = {str(name): parse_count_condition(v) for name, v in raw.items()}
    else:
        raise ParamError(f"`counts` must map tool names to conditions, not {raw!r}")
    if not conditions:
        return _empty_rule(ctx, "tool call counts")
    actual = Counter(ctx.key(c.name) for c in ctx.transcript.tool_calls)
    explained: dict[str, str] = {}
    rows: list[Finding] = []
    hits = 0
    for name, (op, want) in conditions.items():
        got = actual.get(ctx.key(name), 0)
        ok = _COMPARE[op](got, want)
        hits += ok
        explained[name] = f"Actual: {got}, Expected: {op}{want}, Score: {float(ok)}"
        reason = f"called {got} time(s); {'meets' if ok else 'fails'} {op}{want}"
        rows.append(Finding(name, f"{op}{want}", got, float(ok), reason))
    score = float(hits == len(conditions)) if _strict(ctx) else hits / len(conditions)
    return Verdict(score, {"explained_tool_calls_count": explained}, tuple(rows))


# ---------------------------------------------------------------------------------------------
# tool_call_args


@register("evaluator", "tool_call_args")
def _tool_call_args(ctx: EvaluatorInput) -> Verdict:
    """Share of expected calls made with matching arguments (`strict`: all or nothing).

    UiPath's ToolCallArgsEvaluator (``tool_calls_args_score``): each expected call, in order,
    takes the first not-yet-used actual call of that tool whose arguments match; order across
    calls is not checked (that is tool_call_order's job). `subset: true` lets the actual call
    carry extra arguments; with `subset: false` (default) the argument sets must be equal.
    (UiPath's non-subset mode only indexes the expected keys, so it also ignores extra
    arguments; here the two modes differ, as their names promise.) Values compare as JSON.
    """
    subset = _bool(ctx.params, "subset", False)
    expected = _expected_args(ctx)
    if not expected:
        return _empty_rule(ctx, "tool calls")
    calls = ctx.transcript.tool_calls
    used: set[int] = set()
    seen: Counter[str] = Counter()
    explained: dict[str, str] = {}
    rows: list[Finding] = []
    hits = 0
    for name, args in expected:
        item = f"{name}_{seen[name]}"
        seen[name] += 1
        candidates = [
            i for i, c in enumerate(calls) if i not in used and ctx.key(c.name) == ctx.key(name)
        ]
        match = next((i for i in candidates if _args_match(calls[i], args, subset)), None)
        if match is not None:
            used.add(match)
            hits += 1
            shown: Any = calls[match].arguments
            reason = "arguments match" + (" (extra arguments allowed)" if subset else "")
        elif candidates:
            nearest = calls[candidates[0]]
            shown = nearest.arguments if nearest.arguments is not None else nearest.raw_arguments
            reason = _args_mismatch(nearest, args, subset)
        else:
            shown = NO_CALL
            reason = f"{name} was not called (or every call was used by an earlier expectation)"
        score = 1.0 if match is not None else 0.0
        explained[item] = f"Actual: {shown}, Expected: {args}, Score: {score}"
        rows.append(Finding(item, args, shown, score, reason))
    score = float(hits == len(expected)) if _strict(ctx) else hits / len(expected)
    return Verdict(score, {"explained_tool_calls_args": explained}, tuple(rows))


def _expected_args(ctx: EvaluatorInput) -> list[tuple[str, dict[str, Any]]]:
    raw = _list_param(ctx.params, "tool_calls")
    if raw is None:
        return [(c.tool, dict(c.args)) for c in ctx.expected_calls]
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise ParamError(f"each of `tool_calls` needs a `name` (and `args`), not {entry!r}")
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            raise ParamError(f"`args` of {entry['name']!r} must be a mapping, not {args!r}")
        out.append((str(entry["name"]), dict(args)))
    return out


def _args_match(call: ToolCall, expected: Mapping[str, Any], subset: bool) -> bool:
    actual = call.arguments
    if actual is None:
        return False
    if not subset and set(actual) != set(expected):
        return False
    return all(k in actual and json_equal(actual[k], v) for k, v in expected.items())


def _args_mismatch(call: ToolCall, expected: Mapping[str, Any], subset: bool) -> str:
    actual = call.arguments
    if actual is None:
        return f"arguments are not a JSON object: {call.raw_arguments!r}"
    parts = []
    missing = [k for k in expected if k not in actual]
    wrong = [k for k in expected if k in actual and not json_equal(actual[k], expected[k])]
    extra = [k for k in actual if k not in expected]
    if missing:
        parts.append(f"missing {missing}")
    if wrong:
        parts.append(f"different values for {wrong}")
    if extra and not subset:
        parts.append(f"unexpected arguments {extra} (set subset: true to allow them)")
    return join_reasons(parts) or "arguments differ"


# ---------------------------------------------------------------------------------------------
# tool_call_output


@register("evaluator", "tool_call_output")
def _tool_call_output(ctx: EvaluatorInput) -> Verdict:
    """Share of expected tool outputs the tools really returned (`strict`: all or nothing).

    The seed's ToolCallOutputEvaluator: the k-th expected output of a tool is compared with the
    k-th actual call of that tool ("first expected output matches first actual call"); a tool
    never called scores 0.0 for that output; calls nobody expected are ignored. Outputs compare
    as JSON values, after parsing strings that hold JSON and unwrapping the ``{"content": ...}``
    envelope that UiPath spans put in ``output.value``. Each output is equal or not: UiPath's
    code compares with ``==`` (no partial JSON similarity), which is what makes the seed's
    proportional example exactly 2/3.
    """
    expected = _expected_outputs(ctx)
    if not expected:
        return _empty_rule(ctx, "tool outputs")
    by_tool: dict[str, list[ToolCall]] = defaultdict(list)
    for call in ctx.transcript.tool_calls:
        by_tool[ctx.key(call.name)].append(call)
    seen: Counter[str] = Counter()
    explained: dict[str, str] = {}
    rows: list[Finding] = []
    hits = 0
    for name, raw_expected in expected:
        k = seen[name]
        seen[name] += 1
        item = f"{name}_{k}"
        want = comparable_output(raw_expected)
        calls = by_tool.get(ctx.key(name), [])
        if k < len(calls):
            got = comparable_output(_actual_output(calls[k]))
            ok = json_equal(got, want)
            shown = repr(got)
            reason = "output matches" if ok else "output differs from the expected output"
        else:
            got, ok, shown = NO_CALL, False, NO_CALL
            reason = f"{name} was called {len(calls)} time(s); expected output #{k + 1} has no call"
        hits += ok
        explained[item] = f"Actual: {shown}, Expected: {want!r}, Score: {float(ok)}"
        rows.append(Finding(item, want, got, float(ok), reason))
    score = float(hits == len(expected)) if _strict(ctx) else hits / len(expected)
    return Verdict(score, {"explained_tool_calls_outputs": explained}, tuple(rows))


def _expected_outputs(ctx: EvaluatorInput) -> list[tuple[str, Any]]:
    raw = _list_param(ctx.params, "tool_outputs")
    if raw is None:
        return [(c.tool, c.output) for c in ctx.expected_calls if c.has_output]
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or "name" not in entry or "output" not in entry:
            raise ParamError(f"each of `tool_outputs` needs `name` and `output`, not {entry!r}")
        out.append((str(entry["name"]), entry["output"]))
    return out


def _actual_output(call: ToolCall) -> Any:
    """What the tool answered; a failed call without output answered ``{"error": <message>}``."""
    if call.error is not None and call.output is None:
        return {"error": call.error}
    return call.output


def comparable_output(value: Any) -> Any:
    """A tool output as a JSON value: JSON text parsed, a lone ``{"content": ...}`` unwrapped.

    Only a mapping whose single key is ``content`` is an envelope, so a real output that merely
    has a content field among others is compared whole.
    """
    value = parse_json_value(value)
    if isinstance(value, Mapping) and set(value) == {"content"}:
        value = parse_json_value(value["content"])
    return value


# ---------------------------------------------------------------------------------------------
# no_tool_calls and api_call_score


@register("evaluator", "no_tool_calls")
def _no_tool_calls(ctx: EvaluatorInput) -> Verdict:
    """1.0 when the model answered without calling any tool."""
    actual = [c.name for c in ctx.transcript.tool_calls]
    score = 0.0 if actual else 1.0
    reason = "no tool calls" if not actual else f"expected no tool calls, got {actual}"
    finding = Finding("", [], actual, score, reason)
    return Verdict(score, {"actual_tool_calls": actual}, (finding,))


@register("evaluator", "api_call_score")
def _api_call_score(ctx: EvaluatorInput) -> Verdict:
    """StableToolBench's API call score: |called ∩ gold| / |gold| over distinct APIs.

    `gold` lists tool names, or StableToolBench ``[tool, api]`` pairs, which become ToolBench's
    function names (``<api>_for_<tool>``, standardized). The default gold is the case's expected
    tool names. The ``Finish`` pseudo-call is not an API. An empty gold scores 0.0, as there.
    Older ToolBench names (``4_get_x``) equal their current form (``get_4_get_x``).
    """
    raw = _list_param(ctx.params, "gold")
    gold_names = (
        [c.tool for c in ctx.expected_calls] if raw is None else [_gold_name(g) for g in raw]
    )
    gold: dict[str, str] = {}
    for name in gold_names:
        gold.setdefault(ctx.key(name_key(name)), name)
    apis = [c.name for c in ctx.transcript.tool_calls if is_api_call(c.name)]
    called = {ctx.key(name_key(name)) for name in apis}
    matched = [shown for key, shown in gold.items() if key in called]
    score = api_call_score(called, gold)
    rows = [
        Finding(
            shown,
            shown,
            shown if key in called else NO_CALL,
            1.0 if key in called else 0.0,
            "called" if key in called else "gold API never called",
        )
        for key, shown in gold.items()
    ]
    if not gold:
        rows = [Finding("", [], sorted(called), 0.0, "no gold APIs: the score is 0.0")]
    justification = {
        "gold": list(gold.values()),
        "called": sorted(set(apis)),
        "matched": matched,
    }
    return Verdict(score, justification, tuple(rows))


def _gold_name(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    if (
        isinstance(entry, list | tuple)
        and len(entry) == 2
        and all(isinstance(x, str) for x in entry)
    ):
        return toolbench_function_name(entry[0], entry[1])
    raise ParamError(f"each of `gold` must be a tool name or a [tool, api] pair, not {entry!r}")


EVALUATOR_KINDS: frozenset[str] = builtin_names("evaluator")
"""The evaluators evalspec ships (each registered above with `@register`)."""
