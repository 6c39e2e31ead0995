"""The Python API: everything the `evalspec` command does, as functions returning typed records.

    from evalspec.api import diff, run
    from evalspec.records import RunRequest

    result = run(RunRequest(Path("suites/slack.yaml"), record="offline"))  # replays recordings
    print(result.exit_code, result.report.models, result.run_dir)
    comparison = diff("old/slack.yaml", "suites/slack.yaml", result.run_dir)

The verbs (run, merge, score, rescore, judge, diff, compare, review, the importers) are also
importable from `evalspec` itself; the stages one by one (load_suite, compile_plan, run_plan,
score) are here, for scripts that go between them. What they take and return is in
`evalspec.records`, what they raise in `evalspec.errors`. Nothing here prints; an error names
the parameter it is about (``gate='strict': choose one of ...``).

Each name is imported on first use, so importing this module costs nothing until a name is
asked for. The imports below are the one list of public names (`evalspec._util.lazy`).
"""

from typing import TYPE_CHECKING

from evalspec._util.lazy import lazy_names

if TYPE_CHECKING:
    from evalspec._api.calibrate import calibrate as calibrate
    from evalspec._api.capture import accept_capture as accept_capture
    from evalspec._api.import_tau_bench import import_tau_bench as import_tau_bench
    from evalspec._api.importers import import_bfcl as import_bfcl
    from evalspec._api.importers import import_bfcl_results as import_bfcl_results
    from evalspec._api.importers import import_otel as import_otel
    from evalspec._api.importers import import_stabletoolbench as import_stabletoolbench
    from evalspec._api.importers import (
        import_stabletoolbench_answers as import_stabletoolbench_answers,
    )
    from evalspec._api.importers import import_traces as import_traces
    from evalspec._api.rescore import judge as judge
    from evalspec._api.rescore import rescore as rescore
    from evalspec._api.review import GATE_NAMES as GATE_NAMES
    from evalspec._api.review import compare as compare
    from evalspec._api.review import diff as diff
    from evalspec._api.review import review as review
    from evalspec._api.run import merge as merge
    from evalspec._api.run import run as run
    from evalspec._api.stages import compile_plan as compile_plan
    from evalspec._api.stages import estimate_cost as estimate_cost
    from evalspec._api.stages import record_answers as record_answers
    from evalspec._api.stages import refresh_tools as refresh_tools
    from evalspec._api.stages import run_plan as run_plan
    from evalspec._api.stages import score as score
    from evalspec._api.stages import suite_files as suite_files
    from evalspec._api.stages import write_runs_page as write_runs_page
    from evalspec._api.tools import tool_session as tool_session
    from evalspec._providers.base import RECORD_MODES as RECORD_MODES
    from evalspec._report.files import write_reports as write_reports
    from evalspec._runner.evidence import stale_transcripts as stale_transcripts
    from evalspec._suite.schema import suite_schema as suite_schema
    from evalspec._suite.starter import project_schema as project_schema
    from evalspec._suite.starter import starter_suite as starter_suite
    from evalspec._suite.starter import write_project_schema as write_project_schema
    from evalspec._suite.validate import check_suite as check_suite
    from evalspec._suite.validate import load_suite as load_suite
    from evalspec._transcript import load_transcripts as load_transcripts
    from evalspec._transcript import write_transcripts as write_transcripts

__getattr__, __dir__ = lazy_names(__name__, __file__, globals())
