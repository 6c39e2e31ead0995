"""Plain data that scoring produces: outcomes, explanation rows, case results.

These are the records results.json holds, declared once: scoring builds them, the results file
is written from them, and compare, view, merge, review and the HTML report read them back as
the same types (see evalspec._scoring.results_file).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from evalspec._util.records import Count

Status = Literal["pass", "warn", "fail", "error", "user_fault", "captured"]
"""`user_fault`: a check on the simulated user failed, so the trial says nothing of the model
(`_scoring/user_checks.py`); it is counted apart from the model's pass and fail. `captured`: a
capture-mode case (no expectations yet): its calls are recorded, not judged."""


class Row(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
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
    call: Count | None = None
    """Index of the expected call this row belongs to, if any."""
    match: bool = True


class CaseResult(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One trial of one case on one model, scored: a line of results.json's `results`."""

    item_id: str = ""
    case: str
    model: str
    trial: Count = 0
    score: float
    status: Status
    reason: str = ""
    rows: tuple[Row, ...] = ()
    evaluators: dict[str, float] = msgspec.field(default_factory=dict)
    details: dict[str, Any] = msgspec.field(default_factory=dict)
