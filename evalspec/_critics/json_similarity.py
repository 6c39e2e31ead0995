"""json_similarity: UiPath's leaf-weighted JSON similarity
(`uipath/eval/evaluators/json_similarity_evaluator.py`, `_compare_tokens`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec._critics.base import (
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    is_number,
    kind_of,
    outcome,
    show,
)
from evalspec._util.json_values import parse_json_value
from evalspec._util.registry import register


def _string_similarity(a: str, b: str) -> float:
    """1 - Levenshtein distance / longer length: UiPath's leaf score, exact at any length."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    from rapidfuzz.distance import Levenshtein  # ~15 ms to import: only when text is compared

    return max(0.0, 1.0 - Levenshtein.distance(a, b) / longest)


def _count_leaves(node: Any) -> float:
    if isinstance(node, dict):
        return sum(_count_leaves(v) for v in node.values())
    if isinstance(node, list | tuple):
        return sum(_count_leaves(v) for v in node)
    return 1.0


def _compare_tokens(expected: Any, actual: Any) -> tuple[float, float]:
    """(matched leaves, total leaves) of `expected`, UiPath's tree comparison."""
    if is_number(expected) and is_number(actual):
        exp, act = float(expected), float(actual)
        if not (math.isfinite(exp) and math.isfinite(act)):
            return (1.0 if exp == act else 0.0), 1.0
        if math.isclose(exp, 0.0, abs_tol=1e-12):
            return (1.0 if math.isclose(act, 0.0, abs_tol=1e-12) else 0.0), 1.0
        return max(0.0, min(1.0, 1.0 - abs(exp - act) / abs(exp))), 1.0
    if kind_of(expected) != kind_of(actual):
        return 0.0, _count_leaves(expected)
    if isinstance(expected, dict):
        matched = total = 0.0
        for key, value in expected.items():
            m, t = (
                _compare_tokens(value, actual[key])
                if key in actual
                else (0.0, _count_leaves(value))
            )
            matched, total = matched + m, total + t
        return matched, total
    if isinstance(expected, list | tuple):
        matched = total = 0.0
        common = min(len(expected), len(actual))
        for index in range(common):
            m, t = _compare_tokens(expected[index], actual[index])
            matched, total = matched + m, total + t
        for item in expected[common:]:
            total += _count_leaves(item)
        return matched, total
    if isinstance(expected, bool):
        return (1.0 if expected == actual else 0.0), 1.0
    if isinstance(expected, str):
        return _string_similarity(expected, actual), 1.0
    return (1.0 if str(expected) == str(actual) else 0.0), 1.0


def json_similarity(expected: Any, actual: Any) -> tuple[float, float, float]:
    """(score, matched leaves, total leaves); JSON text holding an object/array is parsed first."""
    expected, actual = (
        parse_json_value(expected, containers_only=True),
        parse_json_value(actual, containers_only=True),
    )
    matched, total = _compare_tokens(expected, actual)
    if total == 0:
        return 1.0, 0.0, 0.0
    return max(0.0, min(1.0, matched / total)), matched, total


@register("critic")
@dataclass(frozen=True)
class JsonSimilarityCritic(Critic):
    """Partial credit over the leaves of the expected JSON value (UiPath's json-similarity).

    Strings score by normalized Levenshtein similarity, numbers by 1 - relative difference,
    booleans and null exactly; lists compare by position; only the expected keys and positions
    count (extra keys or items in the actual value are free).
    """

    kind: ClassVar[str] = "json_similarity"
    threshold: float = 0.8

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> JsonSimilarityCritic:
        p = Params(cls.kind, params)
        threshold = p.number("threshold", 0.8, 0.0, 1.0)
        p.finish()
        assert threshold is not None
        return cls(threshold=threshold)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        score, matched, total = json_similarity(expected, actual)
        match = score >= self.threshold
        if score == 1.0:
            return outcome(1.0, match, f"Got {show(actual)}, matching every expected value.")
        return outcome(
            score,
            match,
            f"Got {show(actual)}, expected {show(expected)}: {matched:.2g} of {total:g} values "
            f"match, score {score:.2f} {'≥' if match else '<'} threshold {self.threshold:g}.",
        )
