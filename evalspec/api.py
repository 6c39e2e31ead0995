"""The Python API: everything the `evalspec` command does, as functions returning typed records.

    from evalspec.api import RunRequest, diff, run

    result = run(RunRequest(Path("suites/slack.yaml"), record="offline"))  # replays recordings
    print(result.exit_code, result.report.models, result.run_dir)
    comparison = diff("old/slack.yaml", "suites/slack.yaml", result.run_dir)

The stages one by one (load_suite, compile_plan, run_plan, score) are here too, for scripts that
go between them. Nothing here prints; errors are `EvalspecError`s (`SpecError` for a suite,
with every problem's file:line:column). Each name is imported on first use, so importing this
module costs nothing until a name is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalspec._api.import_tau_bench import TauBenchImported, import_tau_bench
    from evalspec._api.importers import (
        SuitesWritten,
        TranscriptsWritten,
        import_bfcl,
        import_bfcl_results,
        import_otel,
        import_stabletoolbench,
        import_stabletoolbench_answers,
    )
    from evalspec._api.rescore import Adopted, Judged, Rescored, judge, rescore
    from evalspec._api.review import GATE_NAMES, compare, diff, review
    from evalspec._api.run import (
        Merged,
        RecordingsMissing,
        RunInterrupted,
        RunProgress,
        RunRequest,
        RunResult,
        RunStart,
        merge,
        run,
    )
    from evalspec._api.stages import (
        compile_plan,
        estimate_cost,
        record_answers,
        refresh_tools,
        score,
        suite_files,
        write_runs_page,
    )
    from evalspec._critics.base import Embedder
    from evalspec._plan import Plan, PlanItem
    from evalspec._providers.base import RECORD_MODES, ChatRequest, ChatResponse, Provider
    from evalspec._report.files import ReportFiles, write_reports
    from evalspec._report.records import Report
    from evalspec._review.diff import Comparison
    from evalspec._review.repo import Review
    from evalspec._runner.estimate import ModelEstimate
    from evalspec._runner.evidence import StaleTranscript, stale_transcripts
    from evalspec._runner.execute import RunOptions, RunOutcome, run_plan
    from evalspec._scoring.judging import JudgeOutcome
    from evalspec._suite.lint import Warnings
    from evalspec._suite.model import ModelSpec, Price, Suite
    from evalspec._suite.schema import suite_schema
    from evalspec._suite.starter import project_schema, starter_suite, write_project_schema
    from evalspec._suite.validate import check_suite, load_suite
    from evalspec._tools.mcp_refresh import RefreshOutcome
    from evalspec._transcript import Transcript, load_transcripts, write_transcripts
    from evalspec._util.errors import EvalspecError, Problem, RunError, SpecError, UsageError
    from evalspec._util.ray_batches import RAY_BATCH, RAY_EMBED_BATCH

__all__ = [
    "GATE_NAMES",
    "RAY_BATCH",
    "RAY_EMBED_BATCH",
    "RECORD_MODES",
    "Adopted",
    "ChatRequest",
    "ChatResponse",
    "Comparison",
    "Embedder",
    "EvalspecError",
    "JudgeOutcome",
    "Judged",
    "Merged",
    "ModelEstimate",
    "ModelSpec",
    "Plan",
    "PlanItem",
    "Price",
    "Problem",
    "Provider",
    "RecordingsMissing",
    "RefreshOutcome",
    "Report",
    "ReportFiles",
    "Rescored",
    "Review",
    "RunError",
    "RunInterrupted",
    "RunOptions",
    "RunOutcome",
    "RunProgress",
    "RunRequest",
    "RunResult",
    "RunStart",
    "SpecError",
    "StaleTranscript",
    "Suite",
    "SuitesWritten",
    "TauBenchImported",
    "Transcript",
    "TranscriptsWritten",
    "UsageError",
    "Warnings",
    "check_suite",
    "compare",
    "compile_plan",
    "diff",
    "estimate_cost",
    "import_bfcl",
    "import_bfcl_results",
    "import_otel",
    "import_stabletoolbench",
    "import_stabletoolbench_answers",
    "import_tau_bench",
    "judge",
    "load_suite",
    "load_transcripts",
    "merge",
    "project_schema",
    "record_answers",
    "refresh_tools",
    "rescore",
    "review",
    "run",
    "run_plan",
    "score",
    "stale_transcripts",
    "starter_suite",
    "suite_files",
    "suite_schema",
    "write_project_schema",
    "write_reports",
    "write_runs_page",
    "write_transcripts",
]

_WHERE: dict[str, tuple[str, ...]] = {
    "evalspec._api.run": (
        "Merged",
        "RecordingsMissing",
        "RunInterrupted",
        "RunProgress",
        "RunRequest",
        "RunResult",
        "RunStart",
        "merge",
        "run",
    ),
    "evalspec._api.import_tau_bench": ("TauBenchImported", "import_tau_bench"),
    "evalspec._api.rescore": ("Adopted", "Judged", "Rescored", "judge", "rescore"),
    "evalspec._api.review": ("GATE_NAMES", "compare", "diff", "review"),
    "evalspec._api.importers": (
        "SuitesWritten",
        "TranscriptsWritten",
        "import_bfcl",
        "import_bfcl_results",
        "import_otel",
        "import_stabletoolbench",
        "import_stabletoolbench_answers",
    ),
    "evalspec._api.stages": (
        "compile_plan",
        "estimate_cost",
        "record_answers",
        "refresh_tools",
        "score",
        "suite_files",
        "write_runs_page",
    ),
    "evalspec._critics.base": ("Embedder",),
    "evalspec._plan": ("Plan", "PlanItem"),
    "evalspec._providers.base": ("RECORD_MODES", "ChatRequest", "ChatResponse", "Provider"),
    "evalspec._report.files": ("ReportFiles", "write_reports"),
    "evalspec._report.records": ("Report",),
    "evalspec._review.diff": ("Comparison",),
    "evalspec._review.repo": ("Review",),
    "evalspec._runner.estimate": ("ModelEstimate",),
    "evalspec._runner.evidence": ("StaleTranscript", "stale_transcripts"),
    "evalspec._runner.execute": ("RunOptions", "RunOutcome", "run_plan"),
    "evalspec._scoring.judging": ("JudgeOutcome",),
    "evalspec._suite.lint": ("Warnings",),
    "evalspec._suite.model": ("ModelSpec", "Price", "Suite"),
    "evalspec._suite.schema": ("suite_schema",),
    "evalspec._suite.starter": ("project_schema", "starter_suite", "write_project_schema"),
    "evalspec._suite.validate": ("check_suite", "load_suite"),
    "evalspec._tools.mcp_refresh": ("RefreshOutcome",),
    "evalspec._transcript": ("Transcript", "load_transcripts", "write_transcripts"),
    "evalspec._util.ray_batches": ("RAY_BATCH", "RAY_EMBED_BATCH"),
    "evalspec._util.errors": ("EvalspecError", "Problem", "RunError", "SpecError", "UsageError"),
}
"""The private module each public name lives in."""
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is asked for."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'evalspec.api' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
