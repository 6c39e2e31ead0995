"""The `evalspec` command: a thin shell over the Python API in evalspec.api.

Each command group lives in its own module and is registered here; heavy libraries are imported
only inside the commands that need them, so `validate` and `plan` start fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from evalspec._cli import (
    calibrate,
    capture,
    interop,
    judge,
    review,
    run,
    score,
    suite,
    tools,
    view,
)
from evalspec._cli.common import one_value_each, print_error
from evalspec._cli.flags import exit_code
from evalspec._cli.teardown import skipped_on_exit
from evalspec._util.redaction import secret_scope

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


def _print_version(value: bool) -> None:
    if value:
        from evalspec import __version__

        typer.echo(f"evalspec {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Declarative evaluation of LLM tool calling."""
    _scrub_output()
    # The command's secrets are its own: registered in a scope that ends with the command.
    ctx.with_resource(secret_scope())


def _scrub_output() -> None:
    """Every secret a command sends is scrubbed from what it prints, whoever prints it."""
    import sys

    from evalspec._util.redaction import ScrubbingStream

    if not isinstance(sys.stdout, ScrubbingStream):
        sys.stdout = ScrubbingStream(sys.stdout)
    if not isinstance(sys.stderr, ScrubbingStream):
        sys.stderr = ScrubbingStream(sys.stderr)


for command in (
    suite.validate,
    suite.plan,
    run.run,
    score.score,
    judge.judge,
    calibrate.calibrate,
    review.diff,
    review.compare,
    review.review,
    view.view,
    run.merge,
    suite.schema,
    suite.init,
):
    app.command()(command)
app.add_typer(interop.import_app, name="import")
app.add_typer(tools.tools_app, name="tools")
app.add_typer(capture.capture_app, name="capture")
one_value_each(app)


def main() -> None:
    """Console-script entry point."""
    # Opened here too, so an error printed after the command ended is still scrubbed.
    with skipped_on_exit(), secret_scope():
        try:
            app()
        except KeyboardInterrupt as exc:  # pragma: no cover - typer usually handles it first
            print_error("interrupted")
            raise SystemExit(exit_code(exc)) from None
