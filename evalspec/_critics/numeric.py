"""numeric: closeness within a value range, or an absolute tolerance.

Arcade's NumericCritic, with the score clamped to [0, 1].
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
    as_number,
    outcome,
    show,
)
from evalspec._util.registry import register


@register("critic")
@dataclass(frozen=True)
class NumericCritic(Critic):
    """Closeness of two numbers: over a value range (Arcade) or within an absolute tolerance.

    With `min`/`max`: score = 1 - |expected - actual| / (max - min), clamped to [0, 1], and match
    when score >= threshold. With `tolerance`: score 1 when |expected - actual| <= tolerance, else
    0 (unless a range is also given, which then supplies the partial score); match is then
    decided by the tolerance alone. Numeric strings ("5", "2.5") count as numbers; bools never.
    """

    kind: ClassVar[str] = "numeric"
    min: float | None = None
    max: float | None = None
    threshold: float = 0.8
    tolerance: float | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> NumericCritic:
        p = Params(cls.kind, params, {"match_threshold": "threshold"})
        lo, hi = p.number("min", None), p.number("max", None)
        value_range = p.raw("value_range")
        if value_range is not None:
            if lo is not None or hi is not None:
                raise ValueError("critic 'numeric': give either value_range or min/max, not both")
            if not (isinstance(value_range, list | tuple) and len(value_range) == 2):
                raise ValueError("critic 'numeric': value_range must be a list [min, max]")
            lo, hi = (p.number(n, v) for n, v in zip(("min", "max"), value_range, strict=True))
        threshold = p.number("threshold", 0.8, 0.0, 1.0)
        tolerance = p.number("tolerance", None, 0.0)
        p.finish()
        if (lo is None) != (hi is None):
            raise ValueError("critic 'numeric': give both min and max (the range of values)")
        if lo is not None and hi is not None and not lo < hi:
            raise ValueError(f"critic 'numeric': min ({lo:g}) must be less than max ({hi:g})")
        if lo is not None and hi is not None and not math.isfinite(hi - lo):
            raise ValueError(
                f"critic 'numeric': the range from min ({lo:g}) to max ({hi:g}) is wider than "
                "a number can hold; narrow it"
            )
        if lo is None and tolerance is None:
            raise ValueError(
                "critic 'numeric' needs min and max (the range of values), or a tolerance"
            )
        assert threshold is not None
        return cls(min=lo, max=hi, threshold=threshold, tolerance=tolerance)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        exp, act = as_number(expected), as_number(actual)
        if exp is None:
            return outcome(0.0, False, f"The expected value {show(expected)} is not a number.")
        if act is None:
            return outcome(
                0.0,
                False,
                f"Expected a number near {exp:g} but got {show(actual)}, not a number.",
            )
        diff = abs(float(exp) - float(act))
        if not math.isfinite(diff):
            return outcome(0.0, False, f"Expected {exp:g} but got {act!r}.")
        head = f"Got {act:g}, expected {exp:g}"
        within = self.tolerance is not None and diff <= self.tolerance
        if self.min is not None and self.max is not None:
            span = self.max - self.min
            score = max(0.0, min(1.0, 1.0 - diff / span))
            scale = f"off by {diff:g} on a range of {self.min:g} to {self.max:g}"
        else:
            score = 1.0 if within else 0.0
            scale = f"off by {diff:g}"
        if self.tolerance is not None:
            match = within
            rule = f"{'within' if within else 'beyond'} the tolerance of {self.tolerance:g}"
        else:
            match = score >= self.threshold
            rule = f"score {score:.2f} {'≥' if match else '<'} threshold {self.threshold:g}"
        if diff == 0:
            return outcome(1.0, True, f"{head}: the same number.")
        return outcome(score, match, f"{head}: {scale}, {rule}.")
