"""Budgets as expectations: a trial over its case's budget fails with the reason, and a model
over the suite's budget fails the run.

Recorded tokens, turns and cost are exact in a replay; recorded latency is not the latency a
replay has, and a replayed transcript keeps the recording's, so latency is checked on live
answers only (a replay says so instead of failing or passing on it).
"""

from __future__ import annotations

from evalspec._suite.model import Budget, Price
from evalspec._transcript import Transcript


def over_case_budget(t: Transcript, budget: Budget, price: Price | None) -> list[str]:
    """Why this trial is over its budget (empty when it is within, or has no budget)."""
    if not budget:
        return []
    cost = price.cost(t.usage.prompt_tokens, t.usage.completion_tokens) if price else None
    return over_budget(
        budget,
        tokens=t.usage.total_tokens,
        cost=cost,
        latency_s=t.latency_s if t.source == "live" else None,
        turns=t.turns,
    )


def over_budget(
    budget: Budget,
    *,
    tokens: int,
    cost: float | None,
    latency_s: float | None,
    turns: int | None,
    what: str = "",
) -> list[str]:
    """One reason per figure over its limit: `1,234 tokens > max_tokens 1,000`."""
    out = []
    if budget.max_tokens is not None and tokens > budget.max_tokens:
        out.append(f"{what}{tokens:,} tokens > max_tokens {budget.max_tokens:,}")
    if budget.max_cost is not None and cost is not None and cost > budget.max_cost:
        out.append(f"{what}cost {cost:.4f} > max_cost {budget.max_cost:g}")
    if (
        budget.max_latency_s is not None
        and latency_s is not None
        and latency_s > budget.max_latency_s
    ):
        out.append(f"{what}{latency_s:.1f}s > max_latency_s {budget.max_latency_s:g}")
    if budget.max_turns is not None and turns is not None and turns > budget.max_turns:
        out.append(f"{what}{turns} turns > max_turns {budget.max_turns}")
    return out
