"""Pair expected calls with actual calls, and explain each pair argument by argument.

Unordered expectations use optimal assignment (scipy's `linear_sum_assignment`, the Hungarian
method): the pairing that maximises the total weighted score, so one good match can never be
stolen by a greedy earlier choice. Ordered expectations use an order-preserving alignment
(dynamic programming, like sequence alignment) maximising the same total.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evalspec._critics import Critic, default_critic, make_critic
from evalspec._critics.base import Embedder
from evalspec._scoring.tool_names import tool_name_key
from evalspec._scoring.types import Row
from evalspec._suite.model import CriticSpec, ExpectedCall, Rubric, Tool
from evalspec._transcript import ToolCall

_NEEDS_NO_EXPECTED = {"regex", "ignore"}


def same_tool(expected: str, actual: str, rubric: Rubric) -> bool:
    normalize = rubric.normalize_tool_names
    return tool_name_key(expected, normalize) == tool_name_key(actual, normalize)


@lru_cache(maxsize=4096)
def _critic(kind: str, params_key: str) -> Critic:
    return make_critic(kind, json.loads(params_key))


_PARAMS_KEY = json.JSONEncoder(sort_keys=True, default=str)
"""The cache key of a critic's parameters; one encoder, not one per judged argument."""


def build_critic(spec: CriticSpec) -> Critic:
    # Most critics take no parameters: their key needs no encoding.
    return _critic(spec.kind, _PARAMS_KEY.encode(spec.params) if spec.params else "{}")


@dataclass(frozen=True)
class ArgJudge:
    """The critic that judges one argument of one expected call, and its weight."""

    field: str
    spec: CriticSpec
    critic: Critic


def judges_for(
    call: ExpectedCall, case_critics: Sequence[CriticSpec], tool: Tool | None
) -> list[ArgJudge]:
    """Which critic judges which argument: the call's own, then the case's (and suite's), then
    a default from the parameter's JSON-Schema type. An argument is judged when the expected
    call gives a value for it, or when its critic needs no expected value (regex, ignore,
    one_of/contains with their own values)."""
    props = (tool.parameters.get("properties") or {}) if tool else {}
    by_field: dict[str, CriticSpec] = {c.field: c for c in case_critics}
    by_field.update({c.field: c for c in call.critics})
    judges: list[ArgJudge] = []
    fields = list(call.args)
    for name, spec in by_field.items():
        if name in call.args:
            continue
        standalone = spec.kind in _NEEDS_NO_EXPECTED or (
            spec.kind in ("one_of", "contains") and "values" in spec.params
        )
        if standalone and (not props or name in props):
            fields.append(name)
    for name in fields:
        given = by_field.get(name)
        if given is None:
            kind, params = default_critic(props.get(name))
            given = CriticSpec(name, kind, 1.0, params)
        judges.append(ArgJudge(name, given, build_critic(given)))
    return judges


def texts_for_pair(judges: list[ArgJudge], call: ExpectedCall, actual: ToolCall) -> list[str]:
    """Texts the pair's similarity critics will embed (so a run can embed them in one batch)."""
    args = actual.arguments or {}
    out: list[str] = []
    for j in judges:
        if j.field in args:
            out.extend(j.critic.texts(call.args.get(j.field), args[j.field]))
    return out


@dataclass(frozen=True)
class PairScore:
    rows: tuple[Row, ...]
    earned: float
    """Sum of weight × score."""
    weight: float
    tool_ok: bool


def score_pair(
    index: int,
    call: ExpectedCall,
    judges: list[ArgJudge],
    actual: ToolCall,
    rubric: Rubric,
    embedder: Embedder | None,
) -> PairScore:
    tool_ok = same_tool(call.tool, actual.name, rubric)
    sel_w = rubric.tool_selection_weight
    rows = [
        Row(
            "tool_selection",
            call.tool,
            actual.name,
            1.0 if tool_ok else 0.0,
            sel_w,
            "right tool" if tool_ok else f"expected {call.tool}, the model called {actual.name}",
            critic="tool_selection",
            call=index,
            match=tool_ok,
        )
    ]
    earned = sel_w if tool_ok else 0.0
    weight = sel_w
    args = actual.arguments
    for j in judges:
        w = j.spec.weight
        expected = call.args.get(j.field)
        if not tool_ok:
            row = Row(
                j.field,
                expected,
                None,
                0.0,
                w,
                "not compared: wrong tool",
                j.spec.kind,
                index,
                False,
            )
        elif args is None:
            row = Row(
                j.field,
                expected,
                None,
                0.0,
                w,
                f"arguments were not valid JSON: {actual.raw_arguments[:80]!r}",
                j.spec.kind,
                index,
                False,
            )
        else:
            present = j.field in args
            out = j.critic.evaluate(expected, args.get(j.field), present=present, embedder=embedder)
            row = Row(
                j.field,
                expected,
                args.get(j.field),
                out.score,
                w,
                out.reason,
                j.spec.kind,
                index,
                out.match,
            )
        rows.append(row)
        earned += w * row.score
        weight += w
    if tool_ok and args and rubric.extra_args == "penalize":
        judged = {j.field for j in judges}
        for name in args:
            if name not in judged:
                rows.append(
                    Row(
                        name,
                        None,
                        args[name],
                        0.0,
                        1.0,
                        "unexpected argument (extra_args: penalize)",
                        "extra_args",
                        index,
                        False,
                    )
                )
                weight += 1.0
    return PairScore(tuple(rows), earned, weight, tool_ok)


def assign(scores: list[list[float]], ordered: bool) -> list[tuple[int, int]]:
    """Best pairing of expected (rows) with actual (columns) calls, as (i, j) pairs."""
    n = len(scores)
    m = len(scores[0]) if n else 0
    if n == 0 or m == 0:
        return []
    if ordered:
        return _align(scores, n, m)
    if math.perm(max(n, m), min(n, m)) <= _EXHAUSTIVE_LIMIT:
        return _best_by_enumeration(scores, n, m)
    from evalspec._util.numpy_import import import_numpy, import_scipy

    np = import_numpy()
    import_scipy("scipy.optimize")
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.asarray(scores, dtype=float), maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True)]


_EXHAUSTIVE_LIMIT = 720
"""Up to this many candidate pairings (6 calls against 6) are tried one by one: importing scipy
costs more than half a second per process, far more than scoring a few calls."""


def _best_by_enumeration(scores: list[list[float]], n: int, m: int) -> list[tuple[int, int]]:
    """The optimal assignment by trying every pairing (same optimum as the Hungarian method)."""
    if n <= m:
        best = max(
            itertools.permutations(range(m), n),
            key=lambda cols: sum(scores[i][j] for i, j in enumerate(cols)),
        )
        return list(enumerate(best))
    best = max(
        itertools.permutations(range(n), m),
        key=lambda rows: sum(scores[i][j] for j, i in enumerate(rows)),
    )
    return sorted((i, j) for j, i in enumerate(best))


def _align(scores: list[list[float]], n: int, m: int) -> list[tuple[int, int]]:
    """Order-preserving pairing maximising the total score (each call used at most once)."""
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = max(best[i + 1][j], best[i][j + 1], scores[i][j] + best[i + 1][j + 1])
    pairs = []
    i = j = 0
    while i < n and j < m:
        if best[i][j] == scores[i][j] + best[i + 1][j + 1]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def describe_calls(calls: Sequence[ToolCall]) -> str:
    return ", ".join(c.name for c in calls) or "no calls"
