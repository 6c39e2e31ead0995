"""The record every report is written from: results, per-case and per-model summaries."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from evalspec._critics.base import Embedder
from evalspec._scoring.budgets import over_budget
from evalspec._scoring.results_file import (
    CaseRecord,
    GateRecord,
    ModelSpecRecord,
    ResultsFile,
    Thresholds,
    plain,
)
from evalspec._scoring.spool import SpooledResults
from evalspec._scoring.trials import CaseSummary, ModelSummary, SimulatedUserCost
from evalspec._scoring.types import CaseResult
from evalspec._scoring.usage import UsageTally
from evalspec._suite.model import Price, Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._providers.calls import ModelCalls
    from evalspec._scoring.protocols import Judge


@dataclass(frozen=True)
class Report:
    """A scored run: what console, results.json, JUnit, Markdown and HTML all show."""

    suite: Suite
    results: Sequence[CaseResult]
    """Every trial's result (a run's are on disk, read when iterated: `_scoring/spool.py`)."""
    cases: tuple[CaseSummary, ...]
    """Per (case, model): trials combined by the case's pass rule."""
    models: tuple[ModelSummary, ...]
    """Per model: pass rate, pass@k, tokens, latency, cost."""
    transcripts: tuple[Transcript, ...] = ()
    """What the models did, when kept (a streamed run keeps none: the HTML report then reads
    the run directory's transcripts.jsonl)."""
    created: str = ""
    """When it was scored, ISO 8601 in UTC."""
    latency: dict[tuple[str, str], float] = field(default_factory=dict)
    """Seconds per (case, model), all trials together."""
    calibration: tuple[str, ...] = ()
    """How often the suite's judges agree with people (labels beside the suite), or that they
    are uncalibrated; empty when no check is a judge."""

    @property
    def exit_code(self) -> int:
        """0 when every case passed (warnings allowed; a capture case is never judged) and
        every model kept to the suite's budget; 1 otherwise."""
        within = not any(m.over_budget for m in self.models)
        ok = ("pass", "warn", "captured")
        return 0 if within and all(c.status in ok for c in self.cases) else 1

    def case_latency(self) -> dict[tuple[str, str], float]:
        """Seconds per (case, model), all trials together."""
        return self.latency

    def to_dict(self, *, summaries_only: bool = False) -> dict[str, Any]:
        """results.json's content as plain JSON values.

        `summaries_only` leaves out the per-case lists, for writers that stream them.
        """
        data: dict[str, Any] = plain(self.results_file(with_lists=not summaries_only))
        if summaries_only:
            del data["cases"], data["results"]
        return data

    def results_file(self, *, with_lists: bool = True) -> ResultsFile:
        """The report as results.json holds it (the per-case lists left empty if not
        `with_lists`): scoring's own records, no copy of a result or a row."""
        return ResultsFile(
            suite=self.suite.name,
            path=self.suite.path,
            description=self.suite.description,
            created=self.created,
            rubric=Thresholds(self.suite.rubric.fail_threshold, self.suite.rubric.warn_threshold),
            gate=GateRecord(**dataclasses.asdict(self.suite.gate)),
            model_specs=model_specs(self.suite),
            models=self.models,
            calibration=self.calibration or msgspec.UNSET,
            cases=tuple(case_records(self)) if with_lists else (),
            results=tuple(self.results) if with_lists else (),
        )


def case_tags(suite: Suite) -> dict[str, tuple[str, ...]]:
    return {c.name: tuple(c.tags) for c in suite.cases}


def model_specs(suite: Suite) -> tuple[ModelSpecRecord, ...]:
    """What each model was run with, for reports: never its endpoint, headers or key variable."""
    return tuple(
        ModelSpecRecord(name=m.name, model=m.model, params=m.params, price=m.price)
        for m in suite.models
    )


def case_records(report: Report) -> Iterator[CaseRecord]:
    """Each case summary as results.json holds it (its results are listed separately)."""
    tags = case_tags(report.suite)
    for c in report.cases:
        yield CaseRecord(
            case=c.case,
            model=c.model,
            status=c.status,
            score=c.score,
            std=c.std,
            trials=c.trials,
            passed=c.passed,
            pass_at_k=c.pass_at_k,
            pass_hat_k=c.pass_hat_k,
            reason=c.reason,
            flaky=c.flaky,
            tags=tags.get(c.case, ()),
        )


def build_report(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    calls: ModelCalls | None = None,
) -> Report:
    """Score transcripts and summarise them: the one way every command makes a Report.

    Without `calls` (a run's ModelCalls) an LLM judge only reads its cache. Secrets a judge
    registers are the call's (`redaction.secret_scope`)."""
    from evalspec._scoring.scorer import score_transcripts

    results = score_transcripts(suite, transcripts, embedder=embedder, judge=judge, calls=calls)
    tally = UsageTally()
    for t in transcripts:
        tally.add(t)
    return report_from_results(suite, results, tally, transcripts=transcripts)


def _simulated_user_cost(
    tally: UsageTally, model: str, prices: Mapping[str, Price | None]
) -> SimulatedUserCost | msgspec.UnsetType:
    """What the simulated users of `model`'s conversations spent, priced at their own entries."""
    played = {user: tokens for (m, user), tokens in tally.simulated_user.items() if m == model}
    if not played:
        return msgspec.UNSET
    cost: float | None = 0.0
    for user, (p, c) in played.items():
        price = prices.get(user)
        cost = None if cost is None or price is None else cost + price.cost(p, c)
    return SimulatedUserCost(
        models=tuple(sorted(played)),
        prompt_tokens=sum(p for p, _ in played.values()),
        completion_tokens=sum(c for _, c in played.values()),
        cost=cost,
    )


def _judge_tokens(results: Sequence[CaseResult]) -> dict[str, int]:
    """Model -> tokens its answers' judges spent (a spool counted them as results came)."""
    if isinstance(results, SpooledResults):
        return results.judge_tokens
    spent: dict[str, int] = {}
    for r in results:
        spent[r.model] = spent.get(r.model, 0) + r.details.get("judge_tokens", 0)
    return spent


def report_from_results(
    suite: Suite,
    results: Sequence[CaseResult],
    usage: UsageTally | dict[str, tuple[int, float]],
    *,
    transcripts: Sequence[Transcript] = (),
    judged: Sequence[Transcript] | None = None,
) -> Report:
    """Summarise results already scored (as a streamed run scores them). `judged`: the
    transcripts the judges' calibration is measured on, when the report keeps none."""
    from evalspec._scoring.calibration import report_calibration
    from evalspec._scoring.trials import summarize

    tally = usage if isinstance(usage, UsageTally) else UsageTally(usage=dict(usage))
    cases, models = summarize(suite, results, tally.usage)
    prices = {m.name: m.price for m in suite.models}
    priced = []
    spent = _judge_tokens(results)  # what judging each model's answers cost
    for m in models:
        p, c = tally.split.get(m.model, (0, 0))
        price = prices.get(m.model)
        cost = price.cost(p, c) if price and m.model in tally.split else None
        judging = spent.get(m.model, 0)
        over = over_budget(
            suite.budget,
            tokens=m.tokens + judging,
            cost=cost,
            latency_s=None if m.model in tally.replayed else m.latency_s,
            turns=tally.turns.get(m.model),
            what="the run: ",
        )
        over = [
            f"{why} (the judge's {judging:,} included)" if judging and "max_tokens" in why else why
            for why in over
        ]
        priced.append(
            msgspec.structs.replace(
                m,
                prompt_tokens=p,
                completion_tokens=c,
                cost=cost,
                over_budget=tuple(over),
                simulated_user=_simulated_user_cost(tally, m.model, prices),
            )
        )
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return Report(
        suite,
        results if isinstance(results, SpooledResults) else tuple(results),
        tuple(cases),
        tuple(priced),
        tuple(transcripts),
        created,
        tally.latency,
        report_calibration(suite, transcripts if judged is None else judged),
    )
