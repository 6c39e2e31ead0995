"""How every report writes a rate with its interval, flaky cases and budget overruns, so the
console, Markdown and HTML say the same thing the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from evalspec._scoring.robustness import FIGURES
from evalspec._stats.paired import CASE_RATE, TRIAL_RATE

if TYPE_CHECKING:
    from evalspec._scoring.trials import CaseSummary, ModelSummary
    from evalspec._stats import Interval

MAX_FLAKY_NAMED = 10
"""Flaky cases named in a summary line; results.json marks every one."""


def interval_text(interval: Interval | dict[str, Any] | None, *, percent: bool) -> str:
    """`(95% CI 64–90%)` or `(95% CI 0.81–0.93)`; empty without an interval."""
    if interval is None:
        return ""
    get = interval.get if isinstance(interval, dict) else lambda k: getattr(interval, k)
    level = f"{get('confidence'):.0%}"
    if percent:
        return f"({level} CI {get('low'):.0%}–{get('high'):.0%})"
    return f"({level} CI {get('low'):.2f}–{get('high'):.2f})"


def rate_with_interval(m: ModelSummary) -> str:
    """The case pass rate with its Wilson interval: `80% (95% CI 64–90%)`."""
    judged = m.cases - m.spoiled  # a case its simulated user spoiled is not the model's
    rate = (m.passed + m.warned) / judged if judged else 0.0
    return f"{rate:.0%} {interval_text(m.pass_rate_ci, percent=True)}".rstrip()


def score_with_interval(m: ModelSummary) -> str:
    return f"{m.mean_score:.3f} {interval_text(m.mean_score_ci, percent=False)}".rstrip()


def pass_at_1_with_interval(m: ModelSummary) -> str:
    """The trial pass rate (pass@1) with its clustered interval: `73% (95% CI 60–84%)`."""
    return f"{m.pass_at_1:.0%} {interval_text(m.pass_at_1_ci, percent=True)}".rstrip()


def rates_text(m: ModelSummary) -> str:
    """Each rate named for what it counts, as compare and review name them: `case pass rate
    80% (95% CI 64–90%) · mean score 0.812 (...) · trial pass rate 73% (...)` (the trial
    pass rate with trials only: with one trial per case the two are one)."""
    if m.cases and m.spoiled == m.cases:
        return f"{CASE_RATE} not measured: no case judges the model{user_fault_text(m)}"
    return (
        f"{CASE_RATE} {rate_with_interval(m)} · mean score {score_with_interval(m)}"
        + (f" · {TRIAL_RATE} {pass_at_1_with_interval(m)}" if m.k > 1 else "")
        + user_fault_text(m)
    )


def user_faults_text(n: int) -> str:
    """`1 user fault`, `2 user faults`: cases the simulated user spoiled."""
    return f"{n} user fault{'s' if n != 1 else ''}"


def user_fault_text(m: ModelSummary) -> str:
    """` · 1 case not counted: its simulated user was at fault`, or "": the rates and intervals
    before it leave such cases out, since they say nothing of the model."""
    n = m.spoiled
    if not n:
        return ""
    cases, whose = ("1 case", "its") if n == 1 else (f"{n} cases", "their")
    return f" · {cases} not counted: {whose} simulated user was at fault"


def flaky_cases(cases: Iterable[CaseSummary], model: str) -> list[CaseSummary]:
    return [c for c in cases if c.model == model and c.flaky]


def flaky_text(cases: Iterable[CaseSummary], m: ModelSummary) -> str:
    """`flaky (trials disagree): a 2/5, b 4/5`; `flakiness not measured (1 trial per case)`."""
    if m.k < 2:
        return "flakiness not measured (1 trial per case)"
    found = flaky_cases(cases, m.model)
    if not found:
        return f"no flaky case ({m.k} trials per case)"
    named = ", ".join(f"{c.case} {c.passed}/{c.trials}" for c in found[:MAX_FLAKY_NAMED])
    more = f" and {len(found) - MAX_FLAKY_NAMED} more" if len(found) > MAX_FLAKY_NAMED else ""
    return f"{len(found)} flaky (trials disagree): {named}{more}"


def budget_text(m: ModelSummary) -> str:
    return "over the suite budget: " + "; ".join(m.over_budget) if m.over_budget else ""


def simulated_user_text(m: ModelSummary) -> str:
    """`simulated user (user-sim): 1,234 tokens, cost 0.0012, not in the figures above`, or ""."""
    sim = m.simulated_user
    if isinstance(sim, msgspec.UnsetType):
        return ""
    cost = f", cost {sim.cost:.4f}" if sim.cost is not None else ""
    tokens = sim.prompt_tokens + sim.completion_tokens
    return (
        f"simulated user ({', '.join(sim.models)}): {tokens:,} tokens{cost}, "
        "not counted in the model's tokens, cost or budget"
    )


_OF = {
    "recovery": "trials that met a fault",
    "duplicates": "trials with a side effect",
    "injection": "trials with an injected instruction",
    "told": "trials that gave up",
}


def robustness_rows(m: ModelSummary) -> list[dict[str, str]]:
    """Each robustness figure as text: `name`, `rate` (50%), `count` (1 of 2 trials that met a
    fault) and `ci` (95% CI 9–91%); none when the run met no fault, side effect or injection."""
    robust = m.robustness
    if isinstance(robust, msgspec.UnsetType):
        return []
    rows = []
    for key, f in robust.figures():
        calls = f", {robust.duplicate_calls} repeated call(s)" if key == "duplicates" else ""
        rows.append(
            {
                "name": FIGURES[key],
                "rate": f"{f.count / f.of if f.of else 0.0:.0%}",
                "count": f"{f.count} of {f.of} {_OF[key]}{calls}",
                "ci": interval_text(f.rate, percent=True).strip("()"),
            }
        )
    return rows


def robustness_lines(m: ModelSummary) -> list[str]:
    """`robustness · recovery rate 50% (1 of 2 trials that met a fault; 95% CI 9–91%)`."""
    return [
        f"robustness · {r['name']} {r['rate']} ({r['count']}; {r['ci']})"
        for r in robustness_rows(m)
    ]
