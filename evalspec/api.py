"""The Python API: the same four stages the CLI runs, for programmers.

suite = load_suite("suites/slack.yaml")
plan = compile_plan(suite)
outcome = run_plan(plan)                  # replays recordings, calls the model for the rest
report = score(suite, outcome.transcripts)
print(report.exit_code, report.models)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalspec.plan import Plan, compile_plan
from evalspec.runner import RunOptions, RunOutcome, run_plan
from evalspec.scoring.types import CaseResult, Embedder
from evalspec.spec.model import Suite
from evalspec.spec.validate import load_suite
from evalspec.transcript import Transcript

__all__ = [
    "Plan",
    "Report",
    "RunOptions",
    "RunOutcome",
    "compile_plan",
    "load_suite",
    "run_plan",
    "score",
]


@dataclass(frozen=True)
class Report:
    suite: Suite
    results: tuple[CaseResult, ...]
    cases: tuple[Any, ...]
    """CaseSummary per (case, model): trials combined by the case's pass rule."""
    models: tuple[Any, ...]
    """ModelSummary per model."""

    @property
    def exit_code(self) -> int:
        """0 when every case passed (warnings allowed), 1 when any failed or errored."""
        return 0 if all(c.status in ("pass", "warn") for c in self.cases) else 1

    def to_dict(self) -> dict[str, Any]:
        from evalspec.report.json_report import report_to_dict

        return report_to_dict(self)


def score(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Any = None,
) -> Report:
    """Score transcripts against a suite: no model is called (an LLM judge check excepted)."""
    from evalspec.scoring.scorer import Scorer
    from evalspec.scoring.trials import summarize

    results = Scorer(suite, embedder=embedder, judge=judge).score_all(list(transcripts))
    usage: dict[str, tuple[int, float]] = {}
    for t in transcripts:
        tok, lat = usage.get(t.model, (0, 0.0))
        usage[t.model] = (tok + t.usage.total_tokens, lat + t.latency_s)
    cases, models = summarize(suite, results, usage)
    return Report(suite, tuple(results), tuple(cases), tuple(models))
