"""`evalspec judge`: ask the suite's LLM judge about recorded answers, filling its cache."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import (
    JsonOpt,
    SuiteArg,
    VerboseOpt,
    configure_logging,
    print_error,
    reports_errors,
)
from evalspec._util import finite

if TYPE_CHECKING:
    from evalspec.records import JudgeOutcome


@reports_errors
def judge(
    suite: SuiteArg,
    transcripts: Annotated[
        list[Path],
        typer.Option(
            "--transcripts",
            "-t",
            help="transcripts.jsonl (imported or recorded), or a run; give -t again for more "
            "(every one is judged).",
        ),
    ],
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Verdicts asked at once (default: the suite's).")
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Ask the suite's LLM judge for every verdict its cache lacks, on transcripts from anywhere.

    `score`, `diff` and `review` never call a model: their judge only reads the verdicts cached
    beside the suite (.evalspec-cache/judge.json). This command is the one that may ask, for
    recorded, merged or imported transcripts alike, through the suite's call settings (timeout,
    retries, requests_per_minute; keys from the judge's api_key_env, never printed). Verdicts
    already cached are not asked again. Then `evalspec score` reads them.

    It prints StableToolBench's solvable pass rate (SoPR) per model: Solved 1, Unsure 0.5,
    Unsolved 0, averaged over answers; no answer, or an imported StableToolBench run without a
    Finish call, is Unsolved.

    Exit codes: 0 every answer has a verdict; 2 invalid suite or usage; 3 some verdict could
    not be had (each reason named; what was asked is kept), or no transcript is of the suite.

    Example:

      evalspec judge stb.yaml -t cot.jsonl && evalspec score stb.yaml -t cot.jsonl
    """
    configure_logging(verbose)
    raise typer.Exit(judge_answers(suite, transcripts, concurrency=concurrency, as_json=as_json))


def judge_answers(
    suite_path: Path, transcripts: list[Path], *, concurrency: int | None, as_json: bool
) -> int:
    """`evalspec.api.judge`, its verdicts printed; the exit code."""
    from evalspec.api import judge as judge_transcripts

    judged = judge_transcripts(suite_path, transcripts, concurrency=concurrency)
    for problem in judged.skipped:
        print_error(f"skipped: {problem}")
    outcome = judged.outcome
    if outcome is None:
        given = ", ".join(str(t) for t in transcripts)
        print_error(f"error: nothing to judge: no transcript in {given} is of {suite_path}")
        return judged.exit_code
    if as_json:
        _print_json(outcome)
    else:
        _print_text(outcome, suite_path, transcripts)
    for reason, n in outcome.failed:
        print_error(f"error: no verdict for {n} answer{'s' if n != 1 else ''}: {reason}")
    return judged.exit_code


def _print_text(outcome: JudgeOutcome, suite_path: Path, transcripts: list[Path]) -> None:
    from evalspec._util.terminal import plain

    n = len(outcome.answers)
    print(
        f"judged {n} answer{'s' if n != 1 else ''}: {outcome.count('asked')} asked, "
        f"{outcome.count('cache')} from the cache, {outcome.count('no answer')} without an "
        f"answer, {outcome.count('failed')} failed"
    )
    for model, check, mean, verdicts, total in outcome.sopr():
        if verdicts["pass"] or verdicts["fail"]:  # a rubric's criterion: pass or fail
            shown = f"pass {verdicts['pass']}, fail {verdicts['fail']}"
            shown += f", no verdict {verdicts['no verdict']}" if verdicts["no verdict"] else ""
            print(plain(f"{model} · {check}: mean score {mean:.3f} over {total} ({shown})"))
            continue
        shown = ", ".join(f"{v} {verdicts[v]}" for v in ("Solved", "Unsure", "Unsolved"))
        if verdicts["mixed rounds"]:
            shown += f", mixed rounds {verdicts['mixed rounds']}"
        if verdicts["no verdict"]:
            shown += f", no verdict {verdicts['no verdict']}"
        print(plain(f"{model} · {check}: SoPR {mean:.3f} over {total} answers ({shown})"))
    for path in transcripts:  # `score` takes one -t: one line per file
        print(plain(f"next: evalspec score {suite_path} -t {path}"))


def _print_json(outcome: JudgeOutcome) -> None:
    from dataclasses import asdict

    data = {
        "answers": [asdict(a) | {"sopr": a.sopr} for a in outcome.answers],
        "sopr": [
            {"model": m, "check": c, "sopr": mean, "answers": total, "verdicts": dict(v)}
            for m, c, mean, v, total in outcome.sopr()
        ],
        "asked": outcome.count("asked"),
        "cached": outcome.count("cache"),
        "failed": outcome.count("failed"),
    }
    sys.stdout.write(finite.dumps(data, "the --json output", indent=2, ensure_ascii=False) + "\n")
