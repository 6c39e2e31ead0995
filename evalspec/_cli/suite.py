"""Commands about the suite itself: validate, plan, schema, init. None of them runs a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from evalspec._cli.common import (
    CaseOpt,
    ModelOpt,
    ShardOpt,
    SuiteArg,
    TrialsOpt,
    print_error,
    reports_errors,
)
from evalspec._util import finite
from evalspec._util.errors import Problem, SpecError, UsageError


@reports_errors
def validate(
    files: Annotated[list[str], typer.Argument(help="Suite files or globs.", show_default=False)],
) -> None:
    """Check suites without running anything.

    Reports every problem at once as file:line:col: where: what; how to fix. Quiet on success
    apart from a one-line count. Exit code 2 when any suite is invalid. What is valid but most
    likely not meant (a case that fails a model for trying a tool before it answers, a response
    that reads again a value an effect changed) is a warning, in the same form: exit code 0.

    Examples:

      evalspec validate suites/slack.yaml

      evalspec validate 'suites/*.yaml'
    """
    from evalspec.api import check_suite, suite_files
    from evalspec.records import Warnings

    problems = []
    warnings = Warnings()
    cases = 0
    paths = list(dict.fromkeys(suite_files(files)))  # a file named twice is validated once
    for path in paths:
        try:
            cases += check_suite(path, warnings)
        except SpecError as exc:
            problems.extend(exc.problems)
    # A case's matrix rows share its place: one warning for them all.
    shown: dict[tuple[str, int, int, str], Problem] = {}
    for p in warnings:
        shown.setdefault((p.file, p.line, p.column, p.message), p)
    for key in sorted(shown):
        print_error(shown[key].describe("warning"))
    if warnings.omitted:
        print_error(f"... and {warnings.omitted} more warnings, not shown")
    if problems:
        raise SpecError(problems)
    n, w = len(paths), len(shown) + warnings.omitted
    noted = f"; {w} warning{'s' if w != 1 else ''}" if w else ""
    typer.echo(
        f"{n} suite{'s' if n != 1 else ''} valid ({cases} case{'s' if cases != 1 else ''}){noted}"
    )


@reports_errors
def plan(
    suite: SuiteArg,
    case: CaseOpt = None,
    model: ModelOpt = None,
    trials: TrialsOpt = None,
    shard: ShardOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    cost: Annotated[
        bool,
        typer.Option(
            "--cost/--no-cost",
            help="Estimate tokens and cost of a live run from the recordings and `price:`.",
        ),
    ] = True,
) -> None:
    """Show what a run would do: one line per case × model × trial, with its content id.

    The id changes only when the request to the model changes (messages, tools, model,
    parameters, trial); editing critics or thresholds keeps every id.

    With recordings, it also estimates what a live run would cost (tokens, and cost from each
    model's `price:`): recorded requests at their recorded usage, the rest (what a
    `--record auto` run would call) from the nearest recorded ones. Nothing is called.

    Examples:

      evalspec plan suites/slack.yaml

      evalspec plan suites/slack.yaml --case 'post to*' --json
    """
    from evalspec.api import compile_plan, estimate_cost, load_suite

    compiled = compile_plan(load_suite(suite), cases=case, models=model, trials=trials, shard=shard)
    estimates = estimate_cost(compiled) if cost else []
    if as_json:
        data = compiled.to_dict()
        if cost:
            data["estimate"] = [e.to_dict() for e in estimates]
        typer.echo(finite.dumps(data, "the --json output", indent=2, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.table import Table

    from evalspec._util.terminal import text

    title = text(f"{compiled.suite.name}: {len(compiled.items)} items", "italic", single_line=True)
    table = Table(title=title, title_justify="left")
    for col in ("id", "case", "model", "trial (from 0)", "expected calls"):
        table.add_column(col)
    for it in compiled.items:
        calls = ", ".join(c.tool for c in it.case.expected_calls) or (
            "(none)" if it.case.expect.no_tool_calls else "-"
        )
        table.add_row(
            it.id[:12],
            text(it.case.name, single_line=True),
            text(it.model.name, single_line=True),
            str(it.trial),
            text(calls, single_line=True),
        )
    console = Console()
    console.print(table)
    if cost:
        from evalspec._report.estimates import estimate_lines

        console.print(
            text("estimated cost of a live run (from recordings; nothing called):", "bold")
        )
        for line in estimate_lines(estimates) or ["nothing to estimate: no recording"]:
            console.print(text(line, single_line=True))


@reports_errors
def schema() -> None:
    """Print the suite JSON Schema (for editors and other tools).

    Example:

      evalspec schema > suite.schema.json
    """
    from evalspec.api import suite_schema

    typer.echo(json.dumps(suite_schema(), indent=2, ensure_ascii=False))


@reports_errors
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the starter suite.")] = Path(
        "suites/my_suite.yaml"
    ),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter suite that validates, to copy and adapt.

    Editors complete and explain its keys from the suite schema: init keeps a copy in the
    project, `schemas/suite.schema.json` (in the current folder, or the one already there
    above the suite), and the suite's first line points at it by a relative path, so the
    folder can be shared. Running init again refreshes the copy after an upgrade.

    Example:

      evalspec init suites/calendar.yaml
    """
    from evalspec._util.files import write_text_atomic
    from evalspec.api import project_schema, starter_suite, write_project_schema

    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    schema = project_schema(path)
    wrote_schema = write_project_schema(schema)
    write_text_atomic(path, starter_suite(path, schema))
    also = ""
    if wrote_schema:
        try:
            shown = schema.relative_to(Path.cwd().resolve())
        except ValueError:
            shown = schema
        also = f" and {shown.as_posix()} (the suite language, for editors)"
    typer.echo(f"wrote {path}{also}; next: evalspec validate {path}")
