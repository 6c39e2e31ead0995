"""The record every report is written from: results, per-case and per-model summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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

    @property
    def exit_code(self) -> int:
        """0 when every case passed (warnings allowed), 1 when any failed or errored."""
        return 0 if all(c.status in ("pass", "warn") for c in self.cases) else 1

    def to_dict(self, *, summaries_only: bool = False) -> dict[str, Any]:
        """results.json's content. Shallow: the values are already plain, and json only reads.

        `summaries_only` leaves out the per-case lists, for writers that stream them.
        """
        data: dict[str, Any] = {
            "version": RESULTS_VERSION,
            "suite": self.suite.name,
            "path": self.suite.path,
            "models": [dict(vars(m)) for m in self.models],
        }
        if not summaries_only:
            data["cases"] = [case_dict(c) for c in self.cases]
            data["results"] = [result_dict(r) for r in self.results]
        return data


def case_dict(case: CaseSummary) -> dict[str, Any]:
    """One case summary as results.json holds it (its results are listed separately)."""
    return {k: v for k, v in vars(case).items() if k != "results"}


def result_dict(result: CaseResult) -> dict[str, Any]:
    """One result with its explanation rows, as results.json holds it."""
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

    scorer = Scorer(suite, embedder=embedder, judge=judge, calls=calls)
    results = scorer.score_all(list(transcripts))
    usage: dict[str, tuple[int, float]] = {}
    for t in transcripts:
        tok, lat = usage.get(t.model, (0, 0.0))
        usage[t.model] = (tok + t.usage.total_tokens, lat + t.latency_s)
    return report_from_results(suite, results, usage)


def report_from_results(
    suite: Suite, results: Sequence[CaseResult], usage: dict[str, tuple[int, float]]
) -> Report:
    """Summarise results already scored (as a streamed run scores them)."""
    from evalspec.scoring.trials import summarize

    cases, models = summarize(suite, results, usage)
    return Report(suite, tuple(results), tuple(cases), tuple(models))
