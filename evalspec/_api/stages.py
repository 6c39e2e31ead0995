"""The pipeline's stages one by one, for scripts that go between them: plan, score, estimate,
write reports and pages. `run` (evalspec._api.run) strings them together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._util.outputs import check_output_file

if TYPE_CHECKING:
    from evalspec._critics.base import Embedder
    from evalspec._plan import Plan
    from evalspec._providers.base import Provider
    from evalspec._report.records import Report
    from evalspec._runner.estimate import ModelEstimate
    from evalspec._runner.execute import RunOptions, RunOutcome
    from evalspec._scoring.protocols import Judge
    from evalspec._suite.model import Suite
    from evalspec._tools.mcp_refresh import RefreshOutcome
    from evalspec._transcript import Transcript


def suite_files(patterns: Sequence[str]) -> list[Path]:
    """Suite files named by paths and glob patterns (`suites/*.yaml`, `**` for any depth).

    A pattern that matches nothing is a `UsageError`. The include files a pattern matches (a
    top-level YAML list: the tools or cases a suite pulls in with `- include:`) are left out,
    since they are read with the suites that include them; a file named outright never is."""
    from evalspec._suite.load import is_include_file
    from evalspec._util.errors import UsageError
    from evalspec._util.globbing import TooManyMatches, expand, has_magic

    files: list[Path] = []
    for pattern in patterns:
        if not has_magic(pattern):
            files.append(Path(pattern))
            continue
        try:
            found = expand(pattern)
        except TooManyMatches as exc:
            raise UsageError(f"{exc}; name fewer files") from None
        if not found:
            raise UsageError(f"no file matches {pattern!r}")
        matches = [Path(m) for m in found if not is_include_file(Path(m))]
        if not matches:
            raise UsageError(
                f"{pattern!r} matches only include files (lists of tools or cases), no suite"
            )
        files.extend(matches)
    return files


def compile_plan(
    suite: Suite,
    *,
    cases: list[str] | None = None,
    models: list[str] | None = None,
    trials: int | None = None,
    shard: str | tuple[int, int] | None = None,
) -> Plan:
    """Every (case, model, trial) to run, filtered by case patterns or tags, model names and
    shard (`i/n`, or the pair (i, n)), each with its content id."""
    from evalspec._plan import compile_plan as compile_items
    from evalspec._plan import parse_shard

    return compile_items(
        suite,
        cases=cases,
        models=models,
        trials=trials,
        shard=parse_shard(shard) if isinstance(shard, str) else shard,
    )


def run_plan(
    plan: Plan,
    options: RunOptions | None = None,
    *,
    on_done: Callable[[Transcript], None] | None = None,
) -> RunOutcome:
    """Run every item of `plan` not yet finished in the run directory (`options.run_dir`) and
    return the transcripts; `on_done` is called with each transcript as its item finishes."""
    from evalspec._runner.execute import run_plan as run_items

    return run_items(plan, options, on_done=on_done)


def score(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
) -> Report:
    """Score transcripts against a suite. No model is called: an LLM judge reads its verdicts
    from its cache (a miss is that case's "needs a run"; `judge()` asks for them)."""
    from evalspec._report.records import build_report

    return build_report(suite, transcripts, embedder=embedder, judge=judge)


def estimate_cost(plan: Plan) -> list[ModelEstimate]:
    """What a live run of the plan would cost per model: recorded requests at their recorded
    usage, the rest from the nearest recorded ones, priced by each model's `price:`. Nothing
    is called."""
    from evalspec._runner.estimate import estimate_plan

    return estimate_plan(plan)


def write_runs_page(runs: Sequence[str | Path], out: str | Path) -> Path:
    """Write the HTML report of one or more runs (directories or results.json files), side by
    side in this order, as one page that works offline; its path."""
    from evalspec._report.html import write_runs_html
    from evalspec._report.runs import html_run
    from evalspec._review.results_file import load_results

    target = Path(out)
    check_output_file(target, "out")
    paths = [Path(p) for p in runs]
    write_runs_html([html_run(p.as_posix(), load_results(p), p) for p in paths], target)
    return target


def refresh_tools(suite_path: str | Path, *, check: bool = False) -> RefreshOutcome:
    """List the tools of the suite's MCP servers into its lock file (starts the servers).

    With `check`, the lock is left as it is and the outcome's `drift` says how the servers'
    tool lists differ from it (CI's question: did a server change under the suite?)."""
    from evalspec._tools.mcp_refresh import refresh_lock

    return refresh_lock(suite_path, check=check)


def record_answers(
    suite: Suite, provider: Provider, *, note: str | None = None, options: RunOptions | None = None
) -> Path:
    """Answer every item of `suite`'s plan with your own `provider` (a scripted stand-in, or a
    model behind code of yours) and write those answers as the suite's recordings file, which
    `evalspec run --record offline` then replays. The file is replaced; `note` becomes its first
    line's comment (say what the answers are: examples, which model). Every model of the suite,
    a simulated user's too, is answered by `provider`."""
    import asyncio
    import json

    from evalspec._providers.recordings import RecordingProvider, Recordings
    from evalspec._runner.execute import RunOptions, run_plan_async
    from evalspec._runner.run_dir import recordings_path

    path = recordings_path(suite)
    header = json.dumps({"_comment": note}) + "\n" if note else ""
    path.write_text(header, encoding="utf-8")
    recordings = Recordings(path)
    recorders: dict[str, Provider] = {
        m.name: RecordingProvider(recordings, provider, mode="record") for m in suite.models
    }

    async def answer_all() -> None:
        try:
            await run_plan_async(compile_plan(suite), options or RunOptions(), providers=recorders)
        finally:
            for recorder in recorders.values():
                await recorder.aclose()

    asyncio.run(answer_all())
    return path
