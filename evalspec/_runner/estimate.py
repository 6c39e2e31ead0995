"""What a live run of a plan would cost, before spending: tokens from recordings, cost from
each model's `price:`.

An item whose request is recorded is replayed offline: its recorded usage is what a live call
of the same request costs (within the model's sampling). An item with no recording (a new
case, a changed request: what re-recording a pull request calls) is estimated from recorded
items nearest to it: other trials of the same case and model, else the same case on any model,
else the model's mean over the suite. Nothing is called.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import fmean

from evalspec._plan import Plan, PlanItem
from evalspec._runner.execute import RunOptions, run_plan
from evalspec._runner.run_dir import recordings_path


@dataclass
class ModelEstimate:
    """What a live run of one model's items would use and cost, from the recordings."""

    model: str
    items: int = 0
    recorded: int = 0
    """Items whose requests are all recorded: exact usage."""
    estimated: int = 0
    """Items without a recording, estimated from the nearest recorded ones."""
    unknown: int = 0
    """Items nothing recorded can estimate."""
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    to_record_tokens: float = 0.0
    """Tokens of the items a `--record auto` run would call (those without a recording)."""
    price: tuple[float, float] | None = None
    """Per million (input, output) tokens; None when the suite gives the model no price."""
    to_record_split: list[float] = field(default_factory=lambda: [0.0, 0.0])

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def cost(self, prompt: float, completion: float) -> float | None:
        if self.price is None:
            return None
        return (prompt * self.price[0] + completion * self.price[1]) / 1_000_000

    @property
    def total_cost(self) -> float | None:
        return self.cost(self.prompt_tokens, self.completion_tokens)

    @property
    def to_record_cost(self) -> float | None:
        return self.cost(*self.to_record_split)

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "items": self.items,
            "recorded": self.recorded,
            "estimated": self.estimated,
            "unknown": self.unknown,
            "prompt_tokens": round(self.prompt_tokens),
            "completion_tokens": round(self.completion_tokens),
            "cost": self.total_cost,
            "to_record_items": self.estimated + self.unknown,
            "to_record_tokens": round(self.to_record_tokens),
            "to_record_cost": self.to_record_cost,
        }


def estimate_plan(plan: Plan) -> list[ModelEstimate]:
    """Per model of the plan: tokens and cost of running it live, and of what is not recorded."""
    usage: dict[str, tuple[int, int]] = {}
    user_usage: dict[str, tuple[int, int]] = {}
    if recordings_path(plan.suite).is_file():
        outcome = run_plan(plan, RunOptions(record="offline"))
        usage = {
            t.item_id: (t.usage.prompt_tokens, t.usage.completion_tokens)
            for t in outcome.transcripts
            if not t.error
        }
        user_usage = {
            t.item_id: (t.user_usage.prompt_tokens, t.user_usage.completion_tokens)
            for t in outcome.transcripts
            if not t.error and t.user_usage is not None
        }
    by_case_model: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    by_case: dict[str, list[tuple[int, int]]] = defaultdict(list)
    by_model: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for item in plan.items:
        if item.id in usage:
            u = usage[item.id]
            by_case_model[(item.case.name, item.model.name)].append(u)
            by_case[item.case.name].append(u)
            by_model[item.model.name].append(u)
    out: dict[str, ModelEstimate] = {}
    for item in plan.items:
        m = item.model
        est = out.get(m.name)
        if est is None:
            price = (m.price.input, m.price.output) if m.price else None
            est = out[m.name] = ModelEstimate(m.name, price=price)
        est.items += 1
        if item.id in usage:
            est.recorded += 1
            _add(est, usage[item.id], to_record=False)
            continue
        nearest = _nearest(item, by_case_model, by_case, by_model)
        if nearest is None:
            est.unknown += 1
            continue
        est.estimated += 1
        _add(est, nearest, to_record=True)
    return [*out.values(), *_simulated_users(plan, user_usage)]


def _simulated_users(plan: Plan, recorded: dict[str, tuple[int, int]]) -> list[ModelEstimate]:
    """One estimate per model that plays a simulated user: its recorded conversations exactly,
    the others from the mean of the same case's recorded ones (unknown without any)."""
    by_case: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for item in plan.items:
        if item.id in recorded:
            by_case[item.case.name].append(recorded[item.id])
    out: dict[str, ModelEstimate] = {}
    prices = {m.name: m.price for m in plan.suite.models}
    for item in plan.items:
        sim = item.case.simulated_user
        if sim is None:
            continue
        est = out.get(sim.model)
        if est is None:
            price = prices.get(sim.model)
            pair = (price.input, price.output) if price else None
            est = out[sim.model] = ModelEstimate(f"{sim.model} (simulated user)", price=pair)
        est.items += 1
        if item.id in recorded:
            est.recorded += 1
            _add(est, recorded[item.id], to_record=False)
        elif found := by_case.get(item.case.name):
            est.estimated += 1
            mean = fmean(p for p, _ in found), fmean(c for _, c in found)
            _add(est, mean, to_record=True)
        else:
            est.unknown += 1
    return list(out.values())


def _nearest(
    item: PlanItem,
    by_case_model: dict[tuple[str, str], list[tuple[int, int]]],
    by_case: dict[str, list[tuple[int, int]]],
    by_model: dict[str, list[tuple[int, int]]],
) -> tuple[float, float] | None:
    for found in (
        by_case_model.get((item.case.name, item.model.name)),
        by_case.get(item.case.name),
        by_model.get(item.model.name),
    ):
        if found:
            return fmean(p for p, _ in found), fmean(c for _, c in found)
    return None


def _add(est: ModelEstimate, u: tuple[float, float], *, to_record: bool) -> None:
    est.prompt_tokens += u[0]
    est.completion_tokens += u[1]
    if to_record:
        est.to_record_tokens += u[0] + u[1]
        est.to_record_split[0] += u[0]
        est.to_record_split[1] += u[1]
