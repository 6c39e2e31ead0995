"""The `evalspec` command: a thin shell over the Python API in evalspec.api.

Every command turns evalspec's own errors into `file:line:col: ...` lines and an exit code,
never a traceback. Heavy libraries are imported only by the commands that need them.
"""

from __future__ import annotations

import glob
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from evalspec.errors import EvalspecError, SpecError, UsageError

app = typer.Typer(
    name="evalspec",
    help="Declarative evaluation of LLM tool calling.\n\n"
    "Write a suite in YAML, then: `evalspec run suites/slack.yaml`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])

# Options that several commands share, declared once.
SuiteArg = Annotated[Path, typer.Argument(help="Suite file.", show_default=False, metavar="SUITE")]
CaseOpt = Annotated[list[str] | None, typer.Option("--case", help="Case name pattern or tag.")]
ModelOpt = Annotated[list[str] | None, typer.Option("--model", help="Model name.")]
TrialsOpt = Annotated[int | None, typer.Option(min=1, help="Trials per case.")]
ShardOpt = Annotated[str | None, typer.Option(help="Only shard i of n, as i/n.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print results as JSON.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show every row.")]
JunitOpt = Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")]
MarkdownOpt = Annotated[Path | None, typer.Option(help="Also write a Markdown report here.")]
HtmlOpt = Annotated[Path | None, typer.Option(help="Also write an HTML report here.")]


def _err(text: str) -> None:
    sys.stderr.write(text.rstrip("\n") + "\n")


def reports_errors(func: F) -> F:
    """Run a command; evalspec errors become messages and exit codes, never tracebacks."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SpecError as exc:
            for p in exc.problems:
                _err(str(p))
            n = len(exc.problems)
            _err(f"{n} problem{'s' if n != 1 else ''} found")
            raise typer.Exit(2) from None
        except EvalspecError as exc:
            _err(f"error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            _err("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _expand(patterns: list[str]) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) else []
        if glob.has_magic(pattern) and not matches:
            raise UsageError(f"no file matches {pattern!r}")
        files.extend(Path(m) for m in matches) if matches else files.append(Path(pattern))
    return files


@app.command()
@reports_errors
def validate(
    files: Annotated[list[str], typer.Argument(help="Suite files or globs.", show_default=False)],
) -> None:
    """Check suites without running anything.

    Reports every problem at once as file:line:col: where: what; how to fix. Quiet on success
    apart from a one-line count. Exit code 2 when any suite is invalid.

    Examples:

      evalspec validate suites/slack.yaml

      evalspec validate 'suites/*.yaml'
    """
    from evalspec.spec.validate import load_suite

    problems = []
    cases = 0
    paths = list(dict.fromkeys(_expand(files)))  # a file named twice is validated once
    for path in paths:
        try:
            cases += len(load_suite(path).cases)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    n = len(paths)
    typer.echo(f"{n} suite{'s' if n != 1 else ''} valid ({cases} case{'s' if cases != 1 else ''})")


@app.command()
@reports_errors
def plan(
    suite: SuiteArg,
    case: CaseOpt = None,
    model: ModelOpt = None,
    trials: TrialsOpt = None,
    shard: ShardOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Show what a run would do: one line per case × model × trial, with its content id.

    The id changes only when the request to the model changes (messages, tools, model,
    parameters, trial); editing critics or thresholds keeps every id.

    Examples:

      evalspec plan suites/slack.yaml

      evalspec plan suites/slack.yaml --case 'post to*' --json
    """
    from evalspec.plan import compile_plan, parse_shard
    from evalspec.spec.validate import load_suite

    compiled = compile_plan(
        load_suite(suite),
        cases=case,
        models=model,
        trials=trials,
        shard=parse_shard(shard) if shard else None,
    )
    if as_json:
        typer.echo(json.dumps(compiled.to_dict(), indent=2, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{compiled.suite.name}: {len(compiled.items)} items", title_justify="left")
    for col in ("id", "case", "model", "trial", "expected calls"):
        table.add_column(col)
    for it in compiled.items:
        calls = ", ".join(c.tool for c in it.case.expect.tool_calls) or (
            "(none)" if it.case.expect.no_tool_calls else "-"
        )
        table.add_row(it.id[:12], it.case.name, it.model.name, str(it.trial + 1), calls)
    Console().print(table)


class RecordMode(StrEnum):
    auto = "auto"
    offline = "offline"
    record = "record"


@app.command()
@reports_errors
def run(
    suite: SuiteArg,
    case: CaseOpt = None,
    model: ModelOpt = None,
    trials: TrialsOpt = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Requests in flight.")] = None,
    shard: ShardOpt = None,
    record: Annotated[
        RecordMode,
        typer.Option(
            help="auto: replay recordings, call the model for the rest; offline: replay only; "
            "record: call the model for everything."
        ),
    ] = RecordMode.auto,
    recordings: Annotated[Path | None, typer.Option(help="Recordings file to use.")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Run directory (default runs/<suite>/<time>).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Finish an interrupted run in this directory.")
    ] = None,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    html: HtmlOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run a suite: validate, plan, call the models (or replay recordings), score, report.

    Exit codes: 0 all passed (warnings allowed), 1 some failed, 2 invalid suite or usage,
    3 could not run (endpoint unreachable, missing API key, missing recordings offline).

    Examples:

      evalspec run suites/slack.yaml

      evalspec run suites/slack.yaml --case 'post to*' --trials 3 --verbose

      evalspec run suites/slack.yaml --record offline --junit results.xml

      evalspec run suites/weather.yaml --resume runs/weather/20261121-101500
    """
    from evalspec.run_command import RunRequest, execute

    code = execute(
        RunRequest(
            suite=suite,
            cases=case,
            models=model,
            trials=trials,
            concurrency=concurrency,
            shard=shard,
            record=record.value,
            recordings=recordings,
            out=out,
            resume=resume,
            junit=junit,
            markdown=markdown,
            html=html,
            as_json=as_json,
            verbose=verbose,
        )
    )
    raise typer.Exit(code)


@app.command()
@reports_errors
def score(
    suite: Annotated[
        Path, typer.Argument(help="Suite file (today's version).", show_default=False)
    ],
    transcripts: Annotated[
        Path, typer.Option("--transcripts", "-t", help="transcripts.jsonl, or a run directory.")
    ],
    as_json: JsonOpt = False,
    out: Annotated[Path | None, typer.Option(help="Write results.json here.")] = None,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Re-score recorded transcripts under the suite as it is now, without calling any model.

    Transcripts are matched to cases by name, so editing critics, weights or thresholds and
    scoring again costs nothing.

    Examples:

      evalspec score suites/slack.yaml --transcripts runs/slack/20261121-101500

      evalspec score suites/slack.yaml -t transcripts.jsonl --json
    """
    from evalspec.run_command import rescore

    code = rescore(
        suite,
        transcripts,
        as_json=as_json,
        out=out,
        verbose=verbose,
        junit=junit,
        markdown=markdown,
        html=html,
    )
    raise typer.Exit(code)


@app.command()
def schema() -> None:
    """Print the suite JSON Schema (for editors and other tools).

    Example:

      evalspec schema > suite.schema.json
    """
    from evalspec.spec.schema import suite_schema

    typer.echo(json.dumps(suite_schema(), indent=2, ensure_ascii=False))


@app.command()
@reports_errors
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the starter suite.")] = Path(
        "suites/my_suite.yaml"
    ),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter suite that validates, to copy and adapt.

    Example:

      evalspec init suites/calendar.yaml
    """
    from evalspec.starter import starter_suite

    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(starter_suite(path), encoding="utf-8")
    tmp.replace(path)
    typer.echo(f"wrote {path}; next: evalspec validate {path}")


@app.command()
@reports_errors
def merge(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Run directories of the shards.", show_default=False)
    ],
    out: Annotated[Path, typer.Option(help="Run directory to write the merged run to.")],
    suite: Annotated[
        Path | None, typer.Option(help="Suite file (default: the one named in the runs).")
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Merge shard runs (`run --shard i/n`) into one run directory, then score it.

    Transcripts are combined by item id (a later directory wins); runs of different suites are
    refused. Writes transcripts.jsonl and results.json to --out; exit codes as for `run`.

    Example:

      evalspec merge runs/shard1 runs/shard2 --out runs/all
    """
    from evalspec.merge import merge_runs

    raise typer.Exit(merge_runs(run_dirs, out, suite=suite, as_json=as_json, verbose=verbose))


def _register_review_commands() -> None:
    """`diff` and `compare`: what a suite change does to recorded scores (evalspec.review)."""
    from evalspec.review_cli import compare, diff

    app.command(help=diff.__doc__)(diff)
    app.command(help=compare.__doc__)(compare)


_register_review_commands()


def _register_import_commands() -> None:
    """`evalspec import ...`: suites and transcripts from BFCL, StableToolBench, OpenTelemetry."""
    from evalspec.interop.cli import import_app

    app.add_typer(import_app, name="import")


_register_import_commands()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - typer usually handles it first
        _err("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
