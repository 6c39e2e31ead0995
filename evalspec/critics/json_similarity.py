"""json_similarity: UiPath's leaf-weighted JSON similarity
(`uipath/eval/evaluators/json_similarity_evaluator.py`, `_compare_tokens`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec.critics.base import (
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    is_number,
    kind_of,
    maybe_json,
    outcome,
    show,
)


def _string_similarity(a: str, b: str) -> float:
    """1 - Levenshtein distance / longer length (UiPath's string leaf score)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    distance = _levenshtein(a, b)
    if distance is None:  # too big for an exact edit distance: character-overlap estimate
        from difflib import SequenceMatcher

        return SequenceMatcher(None, a, b, autojunk=False).quick_ratio()
    return max(0.0, 1.0 - distance / longest)


_LEVENSHTEIN_CELLS = 100_000_000
"""Above this many character pairs (after trimming the common ends) the edit table is skipped."""


def _levenshtein(a: str, b: str) -> int | None:
    """Edit distance; row by row with numpy for long texts; None when the table is too big."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    a, b = a[prefix:], b[prefix:]
    suffix = 0
    while suffix < min(len(a), len(b)) and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if suffix:
        a, b = a[:-suffix], b[:-suffix]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    if len(a) * len(b) > _LEVENSHTEIN_CELLS:
        return None
    if len(a) * len(b) <= 10_000:
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(
                    min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
                )
            previous = current
        return previous[-1]
    import numpy as np

    # Rows run over the shorter text; the insertion step is a running minimum of (row - index).
    row_chars = np.frombuffer(a.encode("utf-32-le"), dtype=np.uint32)
    index = np.arange(len(a) + 1)
    row = index.copy()
    for i, ch in enumerate(b, 1):
        cost = row_chars != ord(ch)
        step = np.empty_like(row)
        step[0] = i
        np.minimum(row[1:] + 1, row[:-1] + cost, out=step[1:])
        row = np.minimum.accumulate(step - index) + index
    return int(row[-1])


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
    expected, actual = maybe_json(expected), maybe_json(actual)
    matched, total = _compare_tokens(expected, actual)
    if total == 0:
        return 1.0, 0.0, 0.0
    return max(0.0, min(1.0, matched / total)), matched, total


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
