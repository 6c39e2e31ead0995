"""The record every report is written from: results, per-case and per-model summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from evalspec.critics.base import Embedder
from evalspec.scoring.trials import CaseSummary, ModelSummary
from evalspec.scoring.types import CaseResult
from evalspec.suite.model import Suite
from evalspec.transcript import Transcript

RESULTS_VERSION = 1
"""Version of results.json's layout."""


@dataclass(frozen=True)
class Report:
    """A scored run: what console, results.json, JUnit, Markdown and HTML all show."""

    suite: Suite
    results: tuple[CaseResult, ...]
    cases: tuple[CaseSummary, ...]
    """Per (case, model): trials combined by the case's pass rule."""
    models: tuple[ModelSummary, ...]
    """Per model: pass rate, pass@k, tokens, latency."""
    transcripts: tuple[Transcript, ...] = ()
    """What the models did: the conversations the HTML report shows, latency per case."""
    created: str = ""
    """When it was scored, ISO 8601 in UTC."""

    def case_latency(self) -> dict[tuple[str, str], float]:
        """Seconds per (case, model), all trials together."""
        out: dict[tuple[str, str], float] = {}
        for t in self.transcripts:
            out[(t.case, t.model)] = out.get((t.case, t.model), 0.0) + t.latency_s
        return out

    @property
    def exit_code(self) -> int:
        """0 when every case passed (warnings allowed), 1 when any failed or errored."""
        return 0 if all(c.status in ("pass", "warn") for c in self.cases) else 1

    def to_dict(self) -> dict[str, Any]:
        """results.json's content. Shallow: the values are already plain, and json only reads."""
        tags = {c.name: list(c.tags) for c in self.suite.cases}
        return {
            "version": RESULTS_VERSION,
            "suite": self.suite.name,
            "path": self.suite.path,
            "description": self.suite.description,
            "created": self.created,
            "model_specs": model_specs(self.suite),
            "models": [dict(vars(m)) for m in self.models],
            "cases": [self._case_dict(c, tags) for c in self.cases],
            "results": [_result_dict(r) for r in self.results],
        }

    @staticmethod
    def _case_dict(c: CaseSummary, tags: dict[str, list[str]]) -> dict[str, Any]:
        data = {k: v for k, v in vars(c).items() if k != "results"}
        data["tags"] = tags.get(c.case, [])
        return data


def model_specs(suite: Suite) -> list[dict[str, Any]]:
    """What each model was run with, for reports: never its endpoint, headers or key variable."""
    return [
        {
            "name": m.name,
            "model": m.model,
            "params": m.params,
            "price": dict(vars(m.price)) if m.price else None,
        }
        for m in suite.models
    ]


def _result_dict(result: CaseResult) -> dict[str, Any]:
    data = dict(vars(result))
    data["rows"] = [dict(vars(row)) for row in result.rows]
    return data


def build_report(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Any = None,
    calls: Any = None,
) -> Report:
    """Score transcripts and summarise them: the one way every command makes a Report.

    Without `calls` (a run's ModelCalls) an LLM judge only reads its cache."""
    from evalspec.scoring.scorer import Scorer
    from evalspec.scoring.trials import summarize

    scorer = Scorer(suite, embedder=embedder, judge=judge, calls=calls)
    results = scorer.score_all(list(transcripts))
    usage: dict[str, tuple[int, float]] = {}
    split: dict[str, tuple[int, int]] = {}
    for t in transcripts:
        tok, lat = usage.get(t.model, (0, 0.0))
        usage[t.model] = (tok + t.usage.total_tokens, lat + t.latency_s)
        p, c = split.get(t.model, (0, 0))
        split[t.model] = (p + t.usage.prompt_tokens, c + t.usage.completion_tokens)
    cases, models = summarize(suite, results, usage)
    prices = {m.name: m.price for m in suite.models}
    priced = []
    for m in models:
        p, c = split.get(m.model, (0, 0))
        price = prices.get(m.model)
        cost = price.cost(p, c) if price else None
        priced.append(replace(m, prompt_tokens=p, completion_tokens=c, cost=cost))
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return Report(suite, tuple(results), tuple(cases), tuple(priced), tuple(transcripts), created)
