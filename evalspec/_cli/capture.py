"""`evalspec capture ...`: capture cases (no expectations yet) turned into judged cases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalspec._cli.common import SuiteArg, print_error, reports_errors

capture_app = typer.Typer(
    help="Capture mode: cases with `capture: true` record what models call; accept a run to "
    "write that as their expectations.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@capture_app.command("accept")
@reports_errors
def accept(
    suite: SuiteArg,
    run_dir: Annotated[
        Path, typer.Argument(help="The run directory of a run of SUITE.", metavar="RUN_DIR")
    ],
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Only these models' calls (default: every model's)."),
    ] = None,
) -> None:
    """Write what the models called in each capture case of SUITE (in RUN_DIR) as its `expect:`.

    The block replaces the case's `capture: true` line (a multi-turn case gets one per turn);
    the rest of the file stays as written. Critics are suggested from the arguments' types:
    exact for enums, booleans and ids, a tolerance for numbers, dates as dates, similarity for
    free text. Where runs disagree, an argument gets a one_of critic with every value seen and
    a call a comment naming who called what. Review the diff, then run the suite again: it
    replays from the same recordings.

    Example:

      evalspec run suites/new.yaml --record record

      evalspec capture accept suites/new.yaml runs/new/20261128-220000
    """
    from evalspec.api import accept_capture

    done = accept_capture(suite, run_dir, models=model)
    for case, why in done.left:
        print_error(f"{suite}: case {case!r} left as a capture case: {why}")
    if not done.written:
        print_error(f"no capture case of {suite} was written")
        raise typer.Exit(2)
    typer.echo(
        f"wrote expectations for {len(done.written)} case(s) into {done.path}: review the diff"
    )
