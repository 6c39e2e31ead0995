"""Example evalspec plugin: one critic, one evaluator, one final-answer check.

Each is registered as evalspec registers its own: `@register(kind)` on a `Critic` subclass, on
an `Evaluator` taking one `EvaluatorInput`, on an `AnswerCheck` taking one `AnswerInput`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, ClassVar

from evalspec.plugins import (
    AnswerInput,
    CheckReturn,
    Critic,
    CriticOutcome,
    EvaluatorInput,
    Params,
    outcome,
    register,
    show,
)


def _day(value: Any) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.strip()).date()
    except ValueError:
        return None


@register(
    "critic",
    options={"type": "object", "properties": {}, "additionalProperties": False},
    description="Same calendar day (ISO 8601 dates or times), whatever the time of day.",
)
@dataclass(frozen=True)
class SameDayCritic(Critic):
    """Same calendar day, whatever the time: for "book it tomorrow" style arguments."""

    kind: ClassVar[str] = "same_day"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SameDayCritic:
        Params(cls.kind, params).finish()  # no options: anything given is a mistake
        return cls()

    def _judge(self, expected: Any, actual: Any, embedder: Any) -> CriticOutcome:
        want, got = _day(expected), _day(actual)
        if want is None:
            return outcome(0.0, False, f"The expected value {show(expected)} is not a date.")
        if got == want:
            return outcome(1.0, True, f"Got {show(actual)}, on {want.isoformat()} as expected.")
        return outcome(0.0, False, f"Got {show(actual)}, expected a time on {want.isoformat()}.")


@register(
    "evaluator",
    options={
        "type": "object",
        "required": ["max_calls"],
        "properties": {"max_calls": {"type": "integer", "minimum": 0}},
    },
    description="At most max_calls tool calls; beyond it the score is max_calls / calls made.",
)
def call_budget(inp: EvaluatorInput) -> CheckReturn:
    """At most `max_calls` tool calls; each call beyond the budget lowers the score."""
    budget = inp.params.get("max_calls")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"`max_calls` must be a whole number of calls, not {budget!r}")
    made = len(inp.transcript.tool_calls)
    score = 1.0 if made <= budget else budget / made
    return score, {"calls": made, "reason": f"{made} call(s) for a budget of {budget}"}


@register(
    "final_answer",
    options={"type": "integer", "minimum": 1},
    description="The final answer has at most this many words.",
)
def max_words(inp: AnswerInput) -> CheckReturn:
    """The answer is at most `value` words long (`max_words: 50`)."""
    limit = inp.params.get("value")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"`max_words` needs a word count, not {limit!r}")
    words = len(inp.answer.split())
    return float(words <= limit), f"{words} words (at most {limit})"
