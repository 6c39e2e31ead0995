"""Example evalspec plugin: one critic, one evaluator, one final-answer check, one tool
environment.

Each is registered as evalspec registers its own: `@register(kind)` on a `Critic` subclass, on
an `Evaluator` taking one `EvaluatorInput`, on an `AnswerCheck` taking one `AnswerInput`, on a
tool environment's factory (`factory(state, params)`).
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
    ToolFault,
    ToolOutcome,
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


@register(
    "environment",
    "card_gateway",
    options={
        "type": "object",
        "properties": {
            "busy": {"type": "integer", "minimum": 0},
            "lost": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    },
    description="A card gateway that is busy at first (429) and loses some answers (time-out).",
)
class CardGateway:
    """A card gateway keeping the shop's payments (`state: {payments: [...]}`).

    Its first `busy` charges of a conversation answer 429 with Retry-After 2 and charge
    nothing; the first charge of an order listed in `lost` takes the money, then times out
    (the lost answer after which a blind retry charges twice). Both are raised as `ToolFault`s,
    so evalspec records, replays and scores them as the faults a suite declares.
    """

    def __init__(self, state: Any, params: dict[str, Any]) -> None:
        self.payments = list(state.get("payments", [])) if isinstance(state, dict) else []
        self.busy = int(params.get("busy", 0))
        self.lost = set(params.get("lost", ()))
        self.charges = 0

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name != "charge_card":
            return ToolOutcome(error=f"the gateway has no tool {name!r}")
        self.charges += 1
        if self.charges <= self.busy:
            raise ToolFault("rate_limit", retry_after=2)
        order = arguments.get("order_id")
        first = not any(p["order_id"] == order for p in self.payments)
        self.payments.append({"order_id": order, "amount": arguments.get("amount")})
        if order in self.lost and first:
            raise ToolFault("timeout", seconds=30, applied=True)
        return ToolOutcome({"charged": arguments.get("amount"), "order_id": order})

    def snapshot(self) -> Any:
        return {"payments": self.payments}
