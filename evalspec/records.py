"""What the API's functions take and return: requests, results, reports, suites, plans and
transcripts, as typed (mostly frozen) records.

    from evalspec import run
    from evalspec.records import RunRequest

    result = run(RunRequest(Path("suites/slack.yaml"), record="offline"))
    report = result.report  # a Report: per-case results, per-model summaries, exit_code

Each name is imported on first use; the imports below are the one list of public names.
"""

from typing import TYPE_CHECKING

from evalspec._util.lazy import lazy_names

if TYPE_CHECKING:
    from evalspec._api.capture import CaptureAccepted as CaptureAccepted
    from evalspec._api.import_tau_bench import TauBenchImported as TauBenchImported
    from evalspec._api.importers import SuitesWritten as SuitesWritten
    from evalspec._api.importers import TracesImported as TracesImported
    from evalspec._api.importers import TranscriptsWritten as TranscriptsWritten
    from evalspec._api.rescore import Adopted as Adopted
    from evalspec._api.rescore import Judged as Judged
    from evalspec._api.rescore import Rescored as Rescored
    from evalspec._api.run import Merged as Merged
    from evalspec._api.run import RunProgress as RunProgress
    from evalspec._api.run import RunRequest as RunRequest
    from evalspec._api.run import RunResult as RunResult
    from evalspec._api.run import RunStart as RunStart
    from evalspec._api.tools import ToolAnswer as ToolAnswer
    from evalspec._api.tools import ToolSession as ToolSession
    from evalspec._compare.records import Comparison as Comparison
    from evalspec._interop.records import Refusal as Refusal
    from evalspec._plan import Plan as Plan
    from evalspec._plan import PlanItem as PlanItem
    from evalspec._report.files import ReportFiles as ReportFiles
    from evalspec._report.records import Report as Report
    from evalspec._review.repo import Review as Review
    from evalspec._runner.estimate import ModelEstimate as ModelEstimate
    from evalspec._runner.evidence import StaleTranscript as StaleTranscript
    from evalspec._runner.execute import RunOptions as RunOptions
    from evalspec._runner.execute import RunOutcome as RunOutcome
    from evalspec._scoring.calibration import Calibration as Calibration
    from evalspec._scoring.judging import JudgeOutcome as JudgeOutcome
    from evalspec._suite.lint import Warnings as Warnings
    from evalspec._suite.model import ModelSpec as ModelSpec
    from evalspec._suite.model import Price as Price
    from evalspec._suite.model import Suite as Suite
    from evalspec._suite.model import ToolVariant as ToolVariant
    from evalspec._tools.mcp_refresh import RefreshOutcome as RefreshOutcome
    from evalspec._transcript import ToolCall as ToolCall
    from evalspec._transcript import Transcript as Transcript
    from evalspec._transcript import Usage as Usage
    from evalspec._transcript import UserTurn as UserTurn

__getattr__, __dir__ = lazy_names(__name__, __file__, globals())
