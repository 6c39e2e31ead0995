"""The Python API: the same stages the CLI runs, for programmers.

suite = load_suite("suites/slack.yaml")   # check_suite(path) validates, keeping no case
plan = compile_plan(suite)
outcome = run_plan(plan)                  # replays recordings, calls the model for the rest
report = score(suite, outcome.transcripts)
print(report.exit_code, report.models)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._critics.base import Embedder
from evalspec._plan import Plan, compile_plan
from evalspec._report.records import Report, build_report
from evalspec._runner.evidence import StaleTranscript, stale_transcripts
from evalspec._runner.execute import RunOptions, RunOutcome, run_plan
from evalspec._suite.model import Suite
from evalspec._suite.validate import check_suite, load_suite
from evalspec._transcript import Transcript, load_transcripts

if TYPE_CHECKING:
    from evalspec._providers.calls import ModelCalls
    from evalspec._scoring.final_answer import Judge
    from evalspec._tools.mcp_refresh import RefreshOutcome

__all__ = [
    "Plan",
    "Report",
    "RunOptions",
    "RunOutcome",
    "StaleTranscript",
    "check_suite",
    "compile_plan",
    "load_suite",
    "load_transcripts",
    "refresh_tools",
    "run_plan",
    "score",
    "stale_transcripts",
]


def score(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    calls: ModelCalls | None = None,
) -> Report:
    """Score transcripts against a suite. No model is called: an LLM judge reads its verdicts
    from its cache (a miss is that case's "needs a run"), unless `calls` (a ModelCalls) allows
    it to ask."""
    return build_report(suite, transcripts, embedder=embedder, judge=judge, calls=calls)


def refresh_tools(suite_path: str | Path) -> RefreshOutcome:
    """List the tools of the suite's MCP servers into its lock file (starts the servers)."""
    from evalspec._tools.mcp_refresh import refresh_lock

    return refresh_lock(suite_path)
