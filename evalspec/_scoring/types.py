"""Plain data that scoring produces: outcomes, explanation rows, case results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["pass", "warn", "fail", "error"]


@dataclass(frozen=True)
class Row:
    """One line of an explanation: a person reads these to learn why a case scored as it did."""

    field: str
    """`tool_selection`, an argument name, `extra_call`, an evaluator name, ..."""
    expected: Any
    actual: Any
    score: float
    """Unweighted, in [0, 1]."""
    weight: float
    reason: str
    critic: str = ""
    call: int | None = None
    """Index of the expected call this row belongs to, if any."""
    match: bool = True


@dataclass(frozen=True)
class CaseResult:
    item_id: str
    case: str
    model: str
    trial: int
    score: float
    status: Status
    reason: str
    rows: tuple[Row, ...] = ()
    evaluators: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
